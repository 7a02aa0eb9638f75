import type { Webhook } from 'standardwebhooks';
import { sha256Hex } from '../../core/canonical-json.ts';
import { SystemClock, type Clock } from '../../core/clock.ts';
import { TaskplaneError } from '../../core/errors.ts';
import { signingKey, verifySignature } from '../../protocols/standard-webhooks.ts';
import {
  AGENT_CARD_PATH,
  A2A_PROTOCOL_VERSION,
  A2A_VERSION_HEADER,
  type AgentCard,
  type AgentInterface,
  type Part,
  type Task,
} from '../../protocols/a2a/types.ts';
import type {
  Connector,
  ConnectorCapabilities,
  InboundWebhook,
  InputAnswer,
  ListChangedPage,
  ListChangedQuery,
  PushRegistration,
  RemoteSnapshot,
  StartRequest,
  WebhookSignal,
} from '../connector.ts';
import { applyFrame, decodeTask, frameTaskId, inStreamOrder, taskToSnapshot } from './task-snapshot.ts';
import {
  jsonRpcTransport,
  openStream,
  restTransport,
  type A2ATransport,
  type StreamFrame,
} from './transports.ts';
import { lazyGrpcTransport } from './grpc-lazy.ts';
import { interfaceHost } from './interface-host.ts';
import { jsonRpcV03Transport } from './v03-transport.ts';
import { restV03Transport } from './v03-rest-transport.ts';
import { cardTrust, type CardSignatureOptions, type CardTrust } from './card-trust.ts';
import { interfacesOfV03Card, isV03Card, isV03Version } from '../../protocols/a2a/v03/card.ts';
import { eventFromV03 } from '../../protocols/a2a/v03/wire.ts';
import type { Logger } from '../../core/logger.ts';
import type { LookupFunction } from 'node:net';
import type { HttpAnswer } from '../http-stream.ts';
import { chunkReader } from '../body-reader.ts';
import type { Resolver } from '../../core/public-address.ts';
import { a2aWireError, isRouteError, routeError } from './wire-errors.ts';
import { transportError } from '../transport-errors.ts';
import { readBoundedText } from '../remote-limits.ts';

/**
 * The A2A 1.0 client connector. Chooses JSON-RPC, HTTP+JSON or gRPC from the agent card (first usable
 * interface in the card's order unless `preferBinding` says otherwise), starts tasks with
 * `returnImmediately: true` and the envelope's fixed messageId/contextId, observes with SubscribeToTask
 * (whose first frame is the current Task, so a reattach loses nothing), reconciles with ListTasks
 * (statusTimestampAfter, paged, artifacts included), answers input with a follow-up message on the
 * task, cancels with CancelTask, and registers push with a single-purpose bearer token. An agent whose
 * card offers only A2A 0.3 is talked to in 0.3 (v03-transport.ts, v03-rest-transport.ts), with the same
 * snapshots and without ListTasks. A card signed with a key the target trusts is verified on every
 * read (card-trust.ts).
 */
export interface A2AConnectorOptions {
  target: string;
  /** Base URL of the agent; the card is read from `<baseUrl>/.well-known/agent-card.json`. */
  baseUrl: string;
  /** Use this card instead of fetching one. */
  card?: AgentCard;
  /** Headers sent on every call (e.g. `{ authorization: 'Bearer …' }` for an agent that wants a key). */
  headers?: Record<string, string>;
  /** Per-call timeout. @default 30000 */
  timeoutMs?: number;
  /** The binding to use when the card offers it; otherwise the card's first usable interface. */
  preferBinding?: 'JSONRPC' | 'HTTP+JSON' | 'GRPC';
  /**
   * How long a card read without caching headers is used before it is read again. A card whose
   * headers say otherwise is kept as they say; any answer that is not A2A re-reads it at once.
   * @default 300000
   */
  cardTtlMs?: number;
  /**
   * The agent deduplicates SendMessage on messageId (our host does; the spec says MAY). When false the
   * engine looks for a lost start by contextId before resending. @default false
   */
  idempotentStart?: boolean;
  fetch?: typeof fetch;
  /**
   * The agent's Standard Webhooks signing secret (`whsec_<base64>`, given by whoever runs the agent).
   * When set, every push for this target must carry a valid `webhook-signature` within 5 minutes of
   * `clock`'s time, checked before the body is parsed, on top of the bearer secret. @default unsigned
   * pushes are accepted
   */
  webhookSigningSecret?: string;
  /**
   * JSON Schema a job's `input` must satisfy for this target (as the caller sends it: a string, `{parts}`
   * or data), checked by the plane at create (422 when it fails). @default none: any input is sent
   */
  inputSchema?: Record<string, unknown>;
  /** Judges signature timestamps. @default the system clock */
  clock?: Clock;
  /**
   * Agent card signatures this target trusts (card-trust.ts): a signed card that does not verify is
   * refused, and so is an unsigned one when `required`. @default signatures are not checked
   */
  cardSignatures?: CardSignatureOptions;
  /** Where a refused card is reported. @default silent */
  logger?: Logger;
  /**
   * Lets the card of an agent on public addresses name an interface on a private, loopback or link-local
   * one (interface-reach.ts). Refused otherwise: such a card could point the plane into its own network.
   * @default false
   */
  allowPrivateInterfaces?: boolean;
  /** Resolves host names for that check (tests). @default the system resolver */
  resolve?: Resolver;
}

const SYSTEM_CLOCK = new SystemClock();

function usable(i: AgentInterface): boolean {
  return (
    (i.protocolBinding === 'JSONRPC' || i.protocolBinding === 'HTTP+JSON' || i.protocolBinding === 'GRPC') &&
    i.protocolVersion.startsWith('1.')
  );
}

/** An A2A 0.3 interface we can talk to: JSON-RPC or HTTP+JSON (0.3 gRPC is not spoken). */
function usableV03(i: AgentInterface): boolean {
  return (
    (i.protocolBinding === 'JSONRPC' || i.protocolBinding === 'HTTP+JSON') && isV03Version(i.protocolVersion)
  );
}

/**
 * The interface to use: a 1.0 one when the card lists any (the preferred binding first), else a 0.3
 * one, from `supportedInterfaces` or, on a 0.3 card, from `url`/`additionalInterfaces` (the card's
 * `preferredTransport` first).
 */
function chooseInterface(card: AgentCard, prefer: string | undefined): AgentInterface | undefined {
  const raw = card as unknown as Record<string, unknown>;
  const listed = isV03Card(raw)
    ? interfacesOfV03Card(raw)
    : Array.isArray(card.supportedInterfaces)
      ? card.supportedInterfaces
      : [];
  const modern = listed.filter(usable);
  const pool = modern.length > 0 ? modern : listed.filter(usableV03);
  return pool.find((i) => i.protocolBinding === prefer) ?? pool[0];
}

/**
 * The A2A push config for a registration: the secret only as `authentication` credentials (never
 * returned by Get/List), and A2A's `token`, which an agent may return, a different value.
 */
function pushConfig(push: PushRegistration): Record<string, unknown> {
  return {
    url: push.url,
    token: push.notificationToken,
    authentication: { scheme: 'Bearer', credentials: push.token },
  };
}

export async function fetchAgentCard(
  baseUrl: string,
  signal: AbortSignal,
  options: { headers?: Record<string, string>; fetch?: typeof fetch; timeoutMs?: number } = {},
): Promise<AgentCard> {
  const read = await readAgentCard(baseUrl, signal, options);
  if (!read.card)
    throw new TaskplaneError('remote_error', 'remote: agent card not modified without a cached copy');
  return read.card;
}

/** One read of the agent card with what HTTP caching says about it. */
export interface CardRead {
  /** Null when the server answered 304 to `etag`: the cached card is still current. */
  card: AgentCard | null;
  /** How long the card may be used without asking again (Cache-Control max-age, else Expires). */
  maxAgeMs: number | null;
  etag: string | null;
  /** The address the card came from; null when a given fetch read it (it does not say). */
  from: string | null;
}

/**
 * Reads the card over node:http (a given fetch is used instead), so the answer says which address it came
 * from: whether the agent is on public addresses is judged by the address its card was read from, not by
 * a second lookup of the name that could answer otherwise (interface-reach.ts). `lookup` is how the
 * connection looks the host up (an agent found public: publicOnlyLookup).
 */
export async function readAgentCard(
  baseUrl: string,
  signal: AbortSignal,
  options: {
    headers?: Record<string, string>;
    fetch?: typeof fetch;
    timeoutMs?: number;
    etag?: string | null;
    lookup?: LookupFunction | undefined;
  } = {},
): Promise<CardRead> {
  const url = baseUrl.replace(/\/+$/, '') + AGENT_CARD_PATH;
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 30_000);
  const headers = {
    accept: 'application/json',
    [A2A_VERSION_HEADER]: A2A_PROTOCOL_VERSION,
    ...(options.etag ? { 'if-none-match': options.etag } : {}),
    ...options.headers,
  };
  const both = AbortSignal.any([signal, timeout]);
  let response: HttpAnswer;
  try {
    response = options.fetch
      ? await options.fetch(url, { headers, signal: both })
      : await openStream(url, { method: 'GET', headers, lookup: options.lookup }, both);
  } catch (err) {
    throw transportError(err, signal, () => timeout.aborted);
  }
  const from = response.peerAddress ?? null;
  const maxAgeMs = cacheLifetimeMs(response.headers);
  const etag = response.headers.get('etag');
  if (response.status === 304) {
    if (response.body) chunkReader(response.body).release();
    return { card: null, maxAgeMs, etag: etag ?? options.etag ?? null, from };
  }
  if (!response.ok) {
    if (response.body) chunkReader(response.body).release();
    throw a2aWireError({ httpStatus: response.status, message: 'agent card' });
  }
  let card: unknown;
  const text = await readBoundedText(response, 'agent card', (err) =>
    transportError(err, signal, () => timeout.aborted),
  );
  try {
    card = JSON.parse(text);
  } catch {
    throw routeError(response.status, 'agent card is not JSON');
  }
  if (!card || typeof card !== 'object') throw routeError(response.status, 'agent card is not an object');
  return { card: card as AgentCard, maxAgeMs, etag, from };
}

/** RFC 9111: `no-store`/`no-cache` → 0, `max-age` (or `s-maxage`) in seconds, else `Expires`. */
function cacheLifetimeMs(headers: HttpAnswer['headers']): number | null {
  const cc = (headers.get('cache-control') ?? '').toLowerCase();
  if (/(^|[,\s])(no-store|no-cache)\b/.test(cc)) return 0;
  const age = /(?:^|[,\s])(?:s-maxage|max-age)\s*=\s*"?(\d+)/.exec(cc);
  if (age) return Number(age[1]) * 1000;
  const expires = headers.get('expires');
  if (expires) {
    const at = Date.parse(expires);
    const date = Date.parse(headers.get('date') ?? '') || Date.now();
    if (Number.isFinite(at)) return Math.max(0, at - date);
  }
  return null;
}

interface Bound {
  card: AgentCard;
  transport: A2ATransport;
  /** The chosen interface's URL. */
  url: string;
  /** Which interface we talk to: changes when a redeployed agent's card lists another one. */
  revision: string;
}

function toParts(value: unknown): Part[] {
  if (typeof value === 'string') return [{ text: value }];
  if (value && typeof value === 'object' && Array.isArray((value as { parts?: unknown }).parts)) {
    return (value as { parts: Part[] }).parts;
  }
  return [{ data: (value ?? null) as Part['data'] }];
}

/** After a failed re-read of a stale card, the old one is used this long before asking again. */
const STALE_RETRY_MS = 5_000;

export class A2AConnector implements Connector {
  readonly kind = 'a2a';
  /**
   * Every binding ends its streams on abort: the HTTP ones destroy the request or the body being read
   * (http-stream.ts, or the caller's fetch with the signal), gRPC cancels the call, each also when the
   * signal was aborted before the stream opened (test/connectors/a2a-stream-abort.test.ts).
   */
  readonly abortEndsStreams = true;
  readonly target: string;
  /** Until the card is read these are the optimistic defaults; reading the card makes them truthful. */
  readonly capabilities: ConnectorCapabilities;
  private state: Bound | null = null;
  private loading: Promise<Bound> | null = null;
  /** The card is used without asking again until then (epoch ms). */
  private freshUntil = Number.POSITIVE_INFINITY;
  private etag: string | null = null;
  /** The agent was found on public addresses (interface-reach.ts); it stays so for the connector's life. */
  private publicAgent = false;
  /** How its connections look their host up once it was: publicOnlyLookup. */
  private publicLookup: LookupFunction | undefined;
  private readonly signingKey: Webhook | null;
  private readonly trust: CardTrust | null;

  /**
   * Builds the connector without any I/O: the agent card is read on first use (and again after a
   * failed read), so a plane can start while an agent is down and recover its jobs when it returns.
   */
  constructor(private readonly options: A2AConnectorOptions) {
    this.target = options.target;
    this.capabilities = {
      idempotentStart: options.idempotentStart ?? false,
      list: true,
      stream: true,
      streamResume: false,
      push: true,
      input: true,
      cancel: true,
    };
    if (options.card) this.state = this.bind(options.card);
    this.trust = options.cardSignatures
      ? cardTrust(options.cardSignatures, `targets.${options.target}.cardSignatures`)
      : null;
    this.signingKey =
      options.webhookSigningSecret !== undefined
        ? signingKey(options.webhookSigningSecret, `targets.${options.target}.webhookSigningSecret`)
        : null;
  }

  /** Reads the agent card now (unless given) and returns the ready connector. */
  static async connect(
    options: A2AConnectorOptions,
    signal: AbortSignal = new AbortController().signal,
  ): Promise<A2AConnector> {
    const c = new A2AConnector(options);
    await c.ready(signal);
    return c;
  }

  get inputSchema(): Record<string, unknown> | null {
    return this.options.inputSchema ?? null;
  }

  get card(): AgentCard | null {
    return this.state?.card ?? null;
  }

  /** The binding and URL in use; the engine records a `card_changed` event when it moves. */
  get revision(): string | null {
    return this.state?.revision ?? null;
  }

  get transport(): A2ATransport {
    if (!this.state)
      throw new TaskplaneError('unavailable', `target ${this.target}: agent card not read yet`);
    return this.state.transport;
  }

  private bind(card: AgentCard, lookup?: LookupFunction): Bound {
    const o = this.options;
    const chosen = chooseInterface(card, o.preferBinding);
    if (!chosen)
      throw new TaskplaneError(
        'unsupported',
        `target ${o.target}: agent card has no JSON-RPC, HTTP+JSON or gRPC interface at A2A 1.0, nor JSON-RPC or HTTP+JSON at 0.3`,
      );
    const v03 = isV03Version(chosen.protocolVersion);
    const t = {
      url: chosen.url,
      headers: o.headers ?? {},
      timeoutMs: o.timeoutMs ?? 30_000,
      ...(chosen.tenant ? { tenant: chosen.tenant } : {}),
      ...(o.fetch ? { fetch: o.fetch } : {}),
      ...(lookup ? { lookup } : {}),
    };
    this.capabilities.stream = card.capabilities?.streaming === true;
    this.capabilities.push = card.capabilities?.pushNotifications === true;
    // A2A 0.3 has no tasks/list over JSON-RPC: reconciliation asks per task instead.
    this.capabilities.list = !v03;
    return {
      card,
      transport: v03
        ? chosen.protocolBinding === 'JSONRPC'
          ? jsonRpcV03Transport(t)
          : restV03Transport(t)
        : chosen.protocolBinding === 'JSONRPC'
          ? jsonRpcTransport(t)
          : chosen.protocolBinding === 'GRPC'
            ? lazyGrpcTransport(t)
            : restTransport(t),
      url: chosen.url,
      revision: `${chosen.protocolBinding} ${chosen.url}${chosen.tenant ? ` ${chosen.tenant}` : ''}${v03 ? ' A2A/0.3' : ''}`,
    };
  }

  /**
   * The transport for the card in force: read on first use, read again once HTTP caching says the copy
   * is stale (conditional on its ETag). A failed re-read keeps the card we have: the agent may be down
   * for a moment, and the calls themselves say when its route is gone.
   */
  async ready(signal: AbortSignal): Promise<A2ATransport> {
    if (this.prepared()) return this.state!.transport;
    if (this.state && !this.options.card) {
      await this.refresh(signal).catch(() => {
        this.freshUntil = Date.now() + STALE_RETRY_MS;
      });
      return this.state.transport;
    }
    return (await this.refresh(signal)).transport;
  }

  /** The card in force is held and fresh: prepare() would read nothing. */
  prepared(): boolean {
    return this.state !== null && Date.now() < this.freshUntil;
  }

  /** Learns the card before the engine chooses how to start (streaming or not, push or not). */
  async prepare(signal: AbortSignal, opts: { fresh?: boolean } = {}): Promise<void> {
    if (opts.fresh) await this.refresh(signal);
    else await this.ready(signal);
  }

  /** Reads the card again now (one read at a time); binds the interface it lists. */
  async refresh(signal: AbortSignal): Promise<Bound> {
    if (this.options.card && this.state) return this.state;
    const o = this.options;
    this.loading ??= readAgentCard(o.baseUrl, signal, {
      ...(o.headers ? { headers: o.headers } : {}),
      ...(o.fetch ? { fetch: o.fetch } : {}),
      ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}),
      ...(this.state ? { etag: this.etag } : {}),
      // An agent found public has its card read again only from public addresses too.
      ...(this.publicLookup ? { lookup: this.publicLookup } : {}),
    })
      .then(async (read) => {
        if (read.card) await this.checkSignature(read.card);
        // Judged before anything of this read is kept: a refused card leaves no ETag behind, which would
        // have the next read answered "not modified" and the card never judged again.
        const next = read.card ? await this.reachable(read.card, read.from) : null;
        const ttl = read.maxAgeMs ?? o.cardTtlMs ?? 300_000;
        this.freshUntil = Date.now() + ttl;
        this.etag = read.etag;
        if (next) this.state = next;
        if (!this.state)
          throw new TaskplaneError('remote_error', 'remote: agent card not modified without a cached copy');
        return this.state;
      })
      .finally(() => {
        this.loading = null;
      });
    return this.loading;
  }

  /**
   * The card bound, where it may send the plane (interface-reach.ts). A card of an agent on public
   * addresses that names an interface on a private one, or one whose URL does not show the host it
   * connects to (interface-host.ts), is refused like a card whose signature fails: not bound, reported,
   * the read fails. An agent on public addresses has every connection for its interface looked up anew
   * and refused unless public (a name that rebinds, a redirect inward). The check is loaded here: the
   * lab's browser bundle leaves it out.
   */
  private async reachable(card: AgentCard, from: string | null): Promise<Bound> {
    const o = this.options;
    const bound = this.bind(card);
    if (o.allowPrivateInterfaces) return bound;
    const { agentIsPublic, interfaceReach } = await import('./interface-reach.ts');
    // Once public, held to it for the connector's life: a name that answers private at the next read is
    // not a reason to let its card send the plane inward.
    this.publicAgent ||= await agentIsPublic(o.baseUrl, from, o.resolve);
    const reach = await interfaceReach(
      this.publicAgent,
      o.baseUrl,
      bound.url,
      interfaceHost(bound.url, bound.transport.binding),
      o.resolve,
    );
    if ('lookup' in reach) {
      if (!reach.lookup) return bound;
      this.publicLookup = reach.lookup;
      return this.bind(card, reach.lookup);
    }
    o.logger?.warn(
      { target: this.target, reason: reach.refused, baseUrl: o.baseUrl },
      'agent card refused: its interface is not known to be public',
    );
    throw new TaskplaneError(
      'permission_denied',
      `target ${this.target}: agent card refused: ${reach.refused} (the target's allowPrivateInterfaces permits it)`,
      { retryable: true, details: { notSent: true } },
    );
  }

  /**
   * A card whose signature does not verify with a trusted key (or that is unsigned where signatures
   * are required) is refused: not bound, reported, and the read fails with `unauthenticated`. A card
   * in force before stays in force until a card that passes replaces it.
   */
  private async checkSignature(card: AgentCard): Promise<void> {
    if (!this.trust) return;
    const verdict = await this.trust.check(card);
    if (verdict.status === 'verified') return;
    if (verdict.status === 'unsigned' && !this.trust.required) return;
    const reason =
      verdict.status === 'invalid'
        ? verdict.reason
        : 'the card is not signed and this target requires signatures';
    this.options.logger?.warn(
      { target: this.target, reason, baseUrl: this.options.baseUrl },
      'agent card refused: signature check failed',
    );
    // Retryable: nothing was sent, so the job stays unstarted (never failed on our own word) and is
    // tried again, which succeeds once the agent serves a card that verifies.
    throw new TaskplaneError('unauthenticated', `target ${this.target}: agent card refused: ${reason}`, {
      retryable: true,
      details: { cardSignature: verdict.status, notSent: true },
    });
  }

  /**
   * One call on the current interface. An answer that is not A2A (the agent was redeployed elsewhere,
   * a proxy lost its route) re-reads the card; when the card now lists another interface the call is
   * made once more there. Otherwise the error stands, and it is retryable: nothing is learned about
   * the task from a route that does not answer as A2A.
   */
  private async onRoute<T>(signal: AbortSignal, fn: (t: A2ATransport) => Promise<T>): Promise<T> {
    const transport = await this.ready(signal);
    try {
      return await fn(transport);
    } catch (err) {
      const moved = await this.movedAfter(err, signal);
      if (!moved) throw err;
      return fn(moved);
    }
  }

  /** After a route error: the new transport when re-reading the card moved us, else null. */
  private async movedAfter(err: unknown, signal: AbortSignal): Promise<A2ATransport | null> {
    const refused = err instanceof TaskplaneError && err.details?.notSent === true;
    if ((!isRouteError(err) && !refused) || this.options.card) return null;
    const before = this.state?.revision;
    const now = await this.refresh(signal).catch(() => null);
    return now && now.revision !== before ? now.transport : null;
  }

  /**
   * A stream on the current interface, moved like `onRoute` when it fails before its first frame. Once
   * a frame has come, reads go straight to the transport's stream (no generator of its own between:
   * transports.ts, openedStream).
   */
  private streamOnRoute(
    method: 'SubscribeToTask' | 'SendStreamingMessage',
    params: Record<string, unknown>,
    signal: AbortSignal,
  ): AsyncIterableIterator<StreamFrame> {
    let stream: AsyncIterator<StreamFrame> | null = null;
    let framed = false;
    const first = async (): Promise<IteratorResult<StreamFrame>> => {
      let transport = await this.ready(signal);
      for (let tries = 0; ; tries++) {
        stream = transport.stream(method, params, signal)[Symbol.asyncIterator]();
        try {
          const r = await stream.next();
          framed = true;
          return r;
        } catch (err) {
          const moved = tries > 0 ? null : await this.movedAfter(err, signal);
          if (!moved) throw err;
          transport = moved;
        }
      }
    };
    return {
      [Symbol.asyncIterator]() {
        return this;
      },
      next: () => (framed ? stream!.next() : first()),
      async return() {
        await stream?.return?.();
        return { done: true, value: undefined };
      },
    };
  }

  async start(request: StartRequest, signal: AbortSignal): Promise<RemoteSnapshot> {
    const result = await this.onRoute(signal, (t) => t.call('SendMessage', this.sendParams(request), signal));
    return this.sendResult(result, request.messageId);
  }

  /**
   * SendStreamingMessage: starts and streams in one request. The first frame is the Task (or a single
   * Message, the whole outcome); the stream then carries status and artifact updates.
   */
  async *startStream(request: StartRequest, signal: AbortSignal): AsyncGenerator<RemoteSnapshot> {
    await this.ready(signal);
    if (!this.capabilities.stream)
      // The card says the agent does not stream: asking it to would be refused for our own mistake.
      throw new TaskplaneError(
        'unsupported',
        `target ${this.target}: the agent card says it does not stream`,
        {
          details: { assumption: 'streaming' },
        },
      );
    // The stream is the answer: no returnImmediately. Made without it rather than deleted from it after
    // (a deleted property turns the object into a slower, larger dictionary, kept for the stream's life).
    const params = this.sendParams(request, false);
    let task: Task | null = null;
    let last: RemoteSnapshot | null = null;
    for await (const { frame, eventId } of this.streamOnRoute('SendStreamingMessage', params, signal)) {
      const f = frame as { message?: unknown };
      if (!task && f && typeof f === 'object' && f.message) {
        yield this.sendResult(frame, request.messageId);
        return;
      }
      const next = applyFrame(task, frame);
      if (!next) continue;
      task = next;
      last = inStreamOrder(last, { ...taskToSnapshot(task), eventId });
      yield last;
    }
  }

  private sendParams(request: StartRequest, immediate = true): Record<string, unknown> {
    const configuration: Record<string, unknown> = immediate
      ? { returnImmediately: true, historyLength: 0 }
      : { historyLength: 0 };
    if (request.push && this.capabilities.push) {
      configuration.taskPushNotificationConfig = pushConfig(request.push);
    }
    const message: Record<string, unknown> = {
      messageId: request.messageId,
      role: 'ROLE_USER',
      parts: toParts(request.input),
    };
    if (request.contextId) message.contextId = request.contextId;
    return { message, configuration };
  }

  /** SendMessage answers `{task}` or, for an agent that replies without a task, `{message}`. */
  private sendResult(result: unknown, messageId: string): RemoteSnapshot {
    const r = (result ?? {}) as { task?: unknown; message?: { contextId?: string; parts?: Part[] } };
    if (r.task) return taskToSnapshot(decodeTask(r.task));
    if (r.message) {
      // A direct message reply is the whole outcome: there is no task to follow.
      return {
        remoteId: `message:${messageId}`,
        contextId: r.message.contextId ?? null,
        state: 'succeeded',
        nativeState: 'MESSAGE',
        remoteVersion: null,
        stateTimestamp: null,
        result: r.message.parts ?? [],
      };
    }
    // Some servers answer with the bare Task (0.3 habit); accept it.
    return taskToSnapshot(decodeTask(result));
  }

  async get(remoteId: string, signal: AbortSignal): Promise<RemoteSnapshot> {
    return taskToSnapshot(
      decodeTask(
        await this.onRoute(signal, (t) => t.call('GetTask', { id: remoteId, historyLength: 0 }, signal)),
      ),
    );
  }

  async listChanged(query: ListChangedQuery, signal: AbortSignal): Promise<ListChangedPage> {
    const params: Record<string, unknown> = {
      statusTimestampAfter: new Date(Math.max(0, query.since)).toISOString(),
      pageSize: Math.min(100, Math.max(1, query.pageSize ?? 100)),
      includeArtifacts: true,
      historyLength: 0,
    };
    if (query.cursor) params.pageToken = query.cursor;
    if (query.contextId) params.contextId = query.contextId;
    const r = (await this.onRoute(signal, (t) => t.call('ListTasks', params, signal))) as {
      tasks?: unknown[];
      nextPageToken?: string;
    } | null;
    const items = (Array.isArray(r?.tasks) ? r.tasks : []).map((t) => taskToSnapshot(decodeTask(t)));
    return typeof r?.nextPageToken === 'string' && r.nextPageToken
      ? { items, nextCursor: r.nextPageToken }
      : { items };
  }

  async *observe(
    remoteId: string,
    _cursor: string | null,
    signal: AbortSignal,
  ): AsyncGenerator<RemoteSnapshot> {
    let task: Task | null = null;
    let last: RemoteSnapshot | null = null;
    for await (const { frame, eventId } of this.streamOnRoute('SubscribeToTask', { id: remoteId }, signal)) {
      const next = applyFrame(task, frame);
      if (!next) continue;
      task = next;
      last = inStreamOrder(last, { ...taskToSnapshot(task), eventId });
      yield last;
    }
  }

  async answer(remoteId: string, answer: InputAnswer, signal: AbortSignal): Promise<RemoteSnapshot> {
    const message = {
      messageId: answer.messageId,
      taskId: remoteId,
      role: 'ROLE_USER',
      parts: toParts(answer.value),
    };
    const result = await this.onRoute(signal, (t) =>
      t.call(
        'SendMessage',
        { message, configuration: { returnImmediately: true, historyLength: 0 } },
        signal,
      ),
    );
    return this.sendResult(result, answer.messageId);
  }

  async cancel(remoteId: string, signal: AbortSignal): Promise<RemoteSnapshot> {
    return taskToSnapshot(
      decodeTask(await this.onRoute(signal, (t) => t.call('CancelTask', { id: remoteId }, signal))),
    );
  }

  async registerPush(
    remoteId: string,
    push: PushRegistration,
    signal: AbortSignal,
  ): Promise<{ configId: string }> {
    const r = (await this.onRoute(signal, (t) =>
      t.call('CreateTaskPushNotificationConfig', { taskId: remoteId, ...pushConfig(push) }, signal),
    )) as { id?: string } | null;
    return { configId: r?.id ?? '' };
  }

  /**
   * A push body is one StreamResponse. The secret is the bearer credential we registered; the engine
   * verifies it against the stored hash. `X-A2A-Notification-Token` carries the A2A `token`, which an
   * agent may list back to anyone who can read the config, so it is never taken as the secret. The
   * delivery id is the sender's `A2A-Delivery-Id`, else its `webhook-id`, else a hash of the body, so
   * a byte-identical retry is still recognised. With a signing secret the signature is checked first.
   */
  webhookToken(headers: Record<string, string>): string | null {
    const auth = Object.entries(headers).find(([k]) => k.toLowerCase() === 'authorization')?.[1] ?? '';
    return /^bearer\s+/i.test(auth) ? auth.replace(/^bearer\s+/i, '').trim() || null : null;
  }

  async parseWebhook(request: InboundWebhook): Promise<WebhookSignal> {
    const h = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), v]));
    if (this.signingKey) {
      const now = (this.options.clock ?? SYSTEM_CLOCK).now();
      const refused = verifySignature(this.signingKey, h, request.rawBody, now);
      if (refused) throw new TaskplaneError('unauthenticated', `webhook signature: ${refused}`);
    }
    const token = this.webhookToken(request.headers);
    let body: unknown;
    try {
      body = JSON.parse(request.rawBody);
    } catch {
      throw new TaskplaneError('invalid_argument', 'body: not JSON', { field: 'body' });
    }
    // A 0.3 agent posts the bare event with `kind` (a Task, a status or artifact update).
    if (body !== null && typeof body === 'object' && 'kind' in body) {
      try {
        body = eventFromV03(body) ?? body;
      } catch {
        throw new TaskplaneError('invalid_argument', 'body: not a readable A2A 0.3 event', { field: 'body' });
      }
    }
    const remoteId = frameTaskId(body);
    if (!remoteId)
      throw new TaskplaneError('invalid_argument', 'body: not an A2A StreamResponse about a task', {
        field: 'body',
      });
    const deliveryId = h['a2a-delivery-id'] || h['webhook-id'] || 'sha256:' + sha256Hex(request.rawBody);
    let snapshot: RemoteSnapshot | null = null;
    const b = body as { task?: unknown; statusUpdate?: { status?: { state?: string } } };
    if (b.task) {
      // The sender's request, not an answer of ours: a task it cannot describe is its bad input (400).
      let task: Task;
      try {
        task = decodeTask(b.task);
      } catch {
        throw new TaskplaneError('invalid_argument', 'body.task: not an A2A Task (id and status)', {
          field: 'body.task',
        });
      }
      snapshot = taskToSnapshot(task);
    } else if (b.statusUpdate) {
      const task = applyFrame(
        { id: remoteId, contextId: '', status: { state: 'TASK_STATE_UNSPECIFIED' } },
        body,
      );
      // A terminal status without the task's artifacts is incomplete: the engine must fetch the task.
      if (task && !['succeeded', 'failed'].includes(taskToSnapshot(task).state))
        snapshot = taskToSnapshot(task);
    }
    return { remoteId, deliveryId, token, snapshot };
  }
}
