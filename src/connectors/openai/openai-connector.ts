import type { Webhook } from 'standardwebhooks';
import { SystemClock, type Clock } from '../../core/clock.ts';
import { TaskplaneError } from '../../core/errors.ts';
import { boundedFetch } from '../remote-limits.ts';
import { signingKey, verifySignature } from '../../protocols/standard-webhooks.ts';
import type {
  Connector,
  ConnectorCapabilities,
  InboundWebhook,
  RemoteSnapshot,
  StartRequest,
  WebhookSignal,
} from '../connector.ts';
import {
  CONTEXT_KEY,
  CORRELATION_KEY,
  eventSnapshot,
  responseSnapshot,
  staleQueued,
  type IncompletePolicy,
  type PriceTable,
  type SnapshotOptions,
  type WireResponse,
} from './response-snapshot.ts';
import { fromSdkError, loadSdk, type OpenAIClient } from './wire-errors.ts';

/**
 * The OpenAI connector: background responses of the Responses API through the official `openai` SDK
 * (docs/plane.md, "OpenAI background responses").
 *
 * - Start: `responses.create({background: true, stream: true, store: true, metadata: {taskplane:
 *   <envelope id>}})` with the SDK's retries OFF. The API has no idempotency key, so a retried POST
 *   could start a second response; and it cannot find a response by metadata, so a create whose answer
 *   was lost cannot be looked up (no `idempotentStart`, no `list`: the engine records `unknown` and
 *   applies the lost policy instead of sending it again blindly).
 * - Observe: the create's own stream, then `GET /responses/{id}?stream=true&starting_after=<cursor>`
 *   after a drop; the cursor is the last event's `sequence_number`. A stream that ends without a
 *   terminal event (the real API's cancel has none) is followed by one `retrieve`.
 * - Retrieve is `get` (the reconciliation call); cancel is `responses.cancel`.
 * - Webhooks are per project, not per job: a delivery is verified with the target's Standard Webhooks
 *   secret (`signedByTarget`), names only the response id, and the engine fetches the truth.
 * - A response still `queued` `queuedStaleMs` after its creation is `unknown` (reason `queued_stale`) when
 *   retrieved: it may never start (response-snapshot.ts staleQueued).
 * - Responses are forgotten after a retention window (`capabilities.notFound: {expiresAfterMs}`): a 404 past it is
 *   `expired`, within it `unknown` (plane/lost-policy.ts).
 */
export interface OpenAIConnectorOptions {
  target: string;
  /** @default 'https://api.openai.com/v1' (must include `/v1`) */
  baseUrl?: string;
  apiKey: string;
  model: string;
  /** Create parameters every start sends (instructions, max_output_tokens, reasoning, tools…). @default {} */
  request?: Record<string, unknown>;
  /** The project's webhook signing secret (`whsec_…`); without it deliveries are refused. */
  webhookSecret?: string;
  /** What `incomplete` counts as. @default 'failed' */
  incomplete?: IncompletePolicy;
  /** Token prices; the cost lands in the envelope's usage under `prices.unit`. @default none */
  prices?: PriceTable;
  /** A 404 this long after creation means the response expired, not that it was lost. @default 600000 */
  retentionMs?: number;
  /**
   * A response still `queued` this long after it was created is `unknown` (reason `queued_stale`): it may
   * never start. Background responses normally leave `queued` within seconds. @default 600000
   */
  queuedStaleMs?: number;
  /** Per-call timeout of the SDK (the engine bounds calls too). @default 60000 */
  timeoutMs?: number;
  /** Retries of idempotent calls (retrieve, cancel) by the SDK; create never retries. @default 2 */
  maxRetries?: number;
  /** Judges webhook signature timestamps. @default the system clock */
  clock?: Clock;
  /** A fetch to use instead of the global one (tests). */
  fetch?: typeof fetch;
}

/** Create parameters the connector owns: a caller setting them would break what it relies on. */
const OWNED = ['background', 'stream', 'store', 'model', 'stream_options'] as const;

const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

export class OpenAIConnector implements Connector {
  readonly kind = 'openai';
  readonly target: string;
  readonly capabilities: ConnectorCapabilities;
  private clientLoad: Promise<OpenAIClient> | null = null;
  private readonly snapshotOptions: SnapshotOptions;
  private readonly signingKey: Webhook | null;
  private readonly clock: Clock;

  constructor(private readonly options: OpenAIConnectorOptions) {
    this.target = options.target;
    this.clock = options.clock ?? new SystemClock();
    this.snapshotOptions = { incomplete: options.incomplete ?? 'failed', prices: options.prices ?? null };
    this.signingKey =
      options.webhookSecret !== undefined
        ? signingKey(options.webhookSecret, `targets.${options.target}.webhookSecret`)
        : null;
    this.capabilities = {
      idempotentStart: false,
      list: false,
      stream: true,
      streamResume: true,
      // No per-job registration: webhooks are configured per project (parseWebhook still takes them).
      push: false,
      input: false,
      cancel: true,
      notFound: { expiresAfterMs: options.retentionMs ?? 600_000 },
    };
  }

  /** The official client, built on first use (the SDK is imported then). */
  private client(): Promise<OpenAIClient> {
    const o = this.options;
    this.clientLoad ??= loadSdk().then(
      (m) =>
        new m.default({
          apiKey: o.apiKey,
          baseURL: o.baseUrl ?? DEFAULT_BASE_URL,
          maxRetries: o.maxRetries ?? 2,
          timeout: o.timeoutMs ?? 60_000,
          // Never read from the environment below the CLI: the SDK would otherwise look for these.
          organization: null,
          project: null,
          webhookSecret: null,
          // Every answer bounded as the other connectors' are (remote-limits.ts).
          fetch: boundedFetch(o.fetch),
        }),
    );
    return this.clientLoad;
  }

  /** The create body for one start: template, then the caller's input, then what we own. */
  private createBody(request: StartRequest): Record<string, unknown> {
    const input = request.input;
    const fromInput: Record<string, unknown> =
      typeof input === 'string' || Array.isArray(input)
        ? { input }
        : input && typeof input === 'object'
          ? { ...(input as Record<string, unknown>) }
          : {};
    if (!(typeof input === 'string' || Array.isArray(input) || (input && typeof input === 'object')))
      throw new TaskplaneError(
        'invalid_argument',
        'input: must be a string, an array of input items or an object of create parameters',
        {
          field: 'input',
        },
      );
    for (const key of OWNED)
      if (key in fromInput)
        throw new TaskplaneError('invalid_argument', `input.${key}: set by the target, not by the task`, {
          field: `input.${key}`,
        });
    const template = this.options.request ?? {};
    const metadata = {
      ...((template.metadata as Record<string, string> | undefined) ?? {}),
      ...((fromInput.metadata as Record<string, string> | undefined) ?? {}),
      [CORRELATION_KEY]: request.envelopeId,
      ...(request.contextId ? { [CONTEXT_KEY]: request.contextId } : {}),
    };
    return {
      ...template,
      ...fromInput,
      model: this.options.model,
      background: true,
      stream: true,
      store: true,
      metadata,
    };
  }

  async *startStream(request: StartRequest, signal: AbortSignal): AsyncIterable<RemoteSnapshot> {
    const body = this.createBody(request);
    let stream: AsyncIterable<{ type: string; sequence_number: number; response?: unknown }>;
    try {
      // No retries: a retried POST could start a second response (the API has no idempotency key).
      stream = (await (
        await this.client()
      ).responses.create(body as never, { maxRetries: 0, signal })) as never;
    } catch (err) {
      throw fromSdkError(err, 'create');
    }
    let remoteId: string | null = null;
    yield* this.follow(
      stream,
      () => remoteId,
      (id) => (remoteId = id),
      'create',
      signal,
    );
  }

  async start(request: StartRequest, signal: AbortSignal): Promise<RemoteSnapshot> {
    // Created with stream=true so it can be streamed again later; read until it is queued, then leave the
    // stream (the response runs on). Leaving at the very first event can strand a response in `queued`
    // (a known field bug), so the second event is awaited.
    const local = new AbortController();
    const both = AbortSignal.any([signal, local.signal]);
    let first: RemoteSnapshot | null = null;
    let seen = 0;
    try {
      for await (const snap of this.startStream(request, both)) {
        first = snap;
        if (++seen >= 2 || snap.state !== 'accepted') break;
      }
    } catch (err) {
      if (first) return first;
      throw err;
    } finally {
      local.abort();
    }
    if (!first)
      throw new TaskplaneError('unavailable', 'create: the stream ended before the response was named');
    return first;
  }

  async get(remoteId: string, signal: AbortSignal): Promise<RemoteSnapshot> {
    try {
      const r = (await (
        await this.client()
      ).responses.retrieve(remoteId, {}, { signal })) as unknown as WireResponse;
      return staleQueued(
        responseSnapshot(r, this.snapshotOptions),
        r,
        this.clock.now(),
        this.options.queuedStaleMs ?? 600_000,
      );
    } catch (err) {
      throw fromSdkError(err, 'retrieve');
    }
  }

  async *observe(
    remoteId: string,
    cursor: string | null,
    signal: AbortSignal,
  ): AsyncIterable<RemoteSnapshot> {
    const after = cursor !== null && /^\d+$/.test(cursor) ? Number(cursor) : undefined;
    let stream: AsyncIterable<{ type: string; sequence_number: number; response?: unknown }>;
    try {
      stream = (await (
        await this.client()
      ).responses.retrieve(
        remoteId,
        { stream: true, ...(after !== undefined ? { starting_after: after } : {}) },
        { signal },
      )) as never;
    } catch (err) {
      throw fromSdkError(err, 'resume');
    }
    yield* this.follow(
      stream,
      () => remoteId,
      () => {},
      'resume',
      signal,
    );
  }

  /**
   * Reads a stream of events as snapshots. A stream that ends without a terminal event is followed by
   * one retrieve, whose answer is the last snapshot (the stream's own end says nothing about the job).
   */
  private async *follow(
    stream: AsyncIterable<{ type: string; sequence_number: number; response?: unknown }>,
    remoteId: () => string | null,
    bind: (id: string) => void,
    during: string,
    signal: AbortSignal,
  ): AsyncIterable<RemoteSnapshot> {
    let terminal = false;
    try {
      for await (const event of stream) {
        if (!event || typeof event.type !== 'string' || typeof event.sequence_number !== 'number') continue;
        const r = event.response as WireResponse | undefined;
        if (remoteId() === null) {
          if (!r || typeof r.id !== 'string') continue;
          bind(r.id);
        }
        const id = remoteId()!;
        const { snapshot, terminal: done } = eventSnapshot(event, id, this.snapshotOptions);
        snapshot.eventId = String(event.sequence_number);
        yield snapshot;
        if (done) {
          terminal = true;
          return;
        }
      }
    } catch (err) {
      throw fromSdkError(err, during);
    }
    const id = remoteId();
    if (!terminal && id !== null) yield await this.get(id, signal);
  }

  async cancel(remoteId: string, signal: AbortSignal): Promise<RemoteSnapshot> {
    try {
      const r = await (await this.client()).responses.cancel(remoteId, { signal });
      return responseSnapshot(r as unknown as WireResponse, this.snapshotOptions);
    } catch (err) {
      throw fromSdkError(err, 'cancel');
    }
  }

  /**
   * A project webhook: verified on the raw body with the target's secret (Standard Webhooks, judged on
   * our clock), deduplicated by `webhook-id`. The payload is thin (`data.id` names the response), so the
   * engine fetches the truth with retrieve; the event type is kept only as the delivery's description.
   */
  async parseWebhook(request: InboundWebhook): Promise<WebhookSignal> {
    if (!this.signingKey)
      throw new TaskplaneError('unauthenticated', 'no webhook secret configured for this target');
    const h = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), v]));
    const refused = verifySignature(this.signingKey, h, request.rawBody, this.clock.now());
    if (refused) throw new TaskplaneError('unauthenticated', `webhook signature: ${refused}`);
    let body: unknown;
    try {
      body = JSON.parse(request.rawBody);
    } catch {
      throw new TaskplaneError('invalid_argument', 'body: not JSON', { field: 'body' });
    }
    const b = body as { type?: unknown; data?: { id?: unknown } } | null;
    const remoteId = b && typeof b === 'object' ? b.data?.id : undefined;
    if (typeof remoteId !== 'string' || remoteId === '' || typeof b?.type !== 'string')
      throw new TaskplaneError('invalid_argument', 'body: not an OpenAI event naming a response (data.id)', {
        field: 'body.data.id',
      });
    return { remoteId, deliveryId: h['webhook-id']!, token: null, snapshot: null, signedByTarget: true };
  }
}
