import type { Webhook } from 'standardwebhooks';
import { SystemClock, type Clock } from '../../core/clock.ts';
import { TaskplaneError, unreadableAnswer } from '../../core/errors.ts';
import { boundedFetch } from '../remote-limits.ts';
import { silentLogger, type Logger } from '../../core/logger.ts';
import { isTerminal } from '../../core/states.ts';
import { signingKey, verifySignature, WEBHOOK_ID_HEADER } from '../../protocols/standard-webhooks.ts';
import type {
  Connector,
  ConnectorCapabilities,
  InboundWebhook,
  InputAnswer,
  ListChangedPage,
  ListChangedQuery,
  RemoteSnapshot,
  StartRequest,
  WebhookSignal,
} from '../connector.ts';
import { claudeError, loadSdk, type AnthropicClient } from './sdk-errors.ts';
import {
  META_ARCHIVE,
  META_CANCEL,
  META_CONTEXT,
  META_ENVELOPE,
  SessionFold,
  type SessionEvent,
  type SessionObject,
} from './session-fold.ts';
import { answerEvent, budgetLimit, sessionWebhook, userContent } from './claude-wire.ts';

/**
 * The Claude Managed Agents connector (beta `managed-agents-2026-04-01`) over the official
 * `@anthropic-ai/sdk`. One job is one session: created with the job's input as its initial
 * `user.message` and our envelope id and contextId in its metadata (no retries on create: a lost
 * answer is found again by listing the agent's sessions, never by creating a second one). Observed the
 * way the API asks: open the event stream, list the history, then follow the stream skipping ids
 * already folded; every (re)attach does the same. States, input requests and usage come from the
 * folded history (session-fold.ts).
 */
export interface ClaudeConnectorOptions {
  target: string;
  apiKey: string;
  agentId: string;
  /** Pin the agent version sessions run. @default the agent's latest */
  agentVersion?: number;
  environmentId: string;
  /** Standard Webhooks secret (`whsec_…`) of the Claude webhook endpoint; without it webhooks are refused. */
  webhookSigningKey?: string;
  /** Session budget in US cents when the task has none in `cents`. @default no budget */
  defaultBudgetCents?: number;
  /**
   * Archive the session once the job is terminal (cleanup; the outcome is already recorded). The intent
   * is written into the session's metadata at create, so sessions a crash left unarchived are found by
   * `sweepUnarchived` and by reconciliation. @default false
   */
  archiveAfterTerminal?: boolean;
  /**
   * Reconciliation reads the agent's sessions created this far back (or since the oldest change asked
   * for, when that is older), newest first, and folds those updated since the last round. Older open
   * jobs are read one by one once overdue (the engine's own rule). @default 86400000 (a day)
   */
  reconcileWindowMs?: number;
  /** At most this many sessions are read per reconciliation round (newest first). @default 1000 */
  reconcileMaxSessions?: number;
  /** @default https://api.anthropic.com */
  baseUrl?: string;
  /** Per-call timeout. @default 30000 */
  timeoutMs?: number;
  /** SDK retries for reads and events (never for create). @default 2 */
  maxRetries?: number;
  /** Judges webhook timestamps and spaces archive retries. @default the system clock */
  clock?: Clock;
  logger?: Logger;
  fetch?: typeof fetch;
}

/** Events after which a new snapshot is worth observing (states, pending input, usage, result). */
const RELEVANT = new Set([
  'session.status_running',
  'session.status_idle',
  'session.status_rescheduled',
  'session.status_terminated',
  'session.error',
  'session.usage',
  'agent.message',
  'user.tool_confirmation',
  'user.custom_tool_result',
]);

/** An archive right after the idle can still be refused "while running" (the status write lags). */
const ARCHIVE_TRIES = 5;
const ARCHIVE_RETRY_MS = 1_000;
const ARCHIVED_REMEMBERED = 10_000;
const DEFAULT_WINDOW_MS = 86_400_000;
const DEFAULT_MAX_SESSIONS = 1_000;

/** Where a reconciliation listing stands between pages: the API's cursor and the sessions read so far. */
interface ListCursor {
  page: string;
  read: number;
}

function encodeCursor(c: ListCursor): string {
  return Buffer.from(JSON.stringify(c), 'utf8').toString('base64url');
}

function decodeCursor(text: string | undefined): ListCursor | null {
  if (!text) return null;
  try {
    const c = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Partial<ListCursor>;
    if (typeof c.page === 'string' && typeof c.read === 'number') return { page: c.page, read: c.read };
  } catch {
    // not one of ours: start over
  }
  return null;
}

const SYSTEM_CLOCK = new SystemClock();

export class ClaudeConnector implements Connector {
  readonly kind = 'claude';
  readonly target: string;
  readonly capabilities: ConnectorCapabilities = {
    idempotentStart: false,
    list: true,
    stream: true,
    streamResume: false,
    push: false,
    input: true,
    cancel: true,
    notFound: 'unknown',
  };
  private clientLoad: Promise<AnthropicClient> | null = null;
  private readonly key: Webhook | null;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly archiving = new Set<string>();
  /** Sessions whose need for an archive this process has already checked (bounded, like `archiving`). */
  private readonly archiveChecked = new Set<string>();
  private readonly closing = new AbortController();

  constructor(private readonly options: ClaudeConnectorOptions) {
    this.target = options.target;
    this.clock = options.clock ?? SYSTEM_CLOCK;
    this.logger = options.logger ?? silentLogger;
    this.key =
      options.webhookSigningKey !== undefined
        ? signingKey(options.webhookSigningKey, `targets.${options.target}.webhookSigningKey`)
        : null;
  }

  /** The official client, built on first use (the SDK is imported then). */
  private client(): Promise<AnthropicClient> {
    const o = this.options;
    this.clientLoad ??= loadSdk().then(
      (m) =>
        new m.default({
          apiKey: o.apiKey,
          // Given explicitly so the SDK never falls back to reading the environment.
          authToken: null,
          webhookKey: null,
          baseURL: o.baseUrl ?? 'https://api.anthropic.com',
          timeout: o.timeoutMs ?? 30_000,
          maxRetries: o.maxRetries ?? 2,
          // Every answer bounded as the other connectors' are (remote-limits.ts).
          fetch: boundedFetch(o.fetch),
        }),
    );
    return this.clientLoad;
  }

  /** Ends archive retries still waiting. */
  close(): void {
    this.closing.abort();
  }

  private async call<T>(what: string, fn: (client: AnthropicClient) => Promise<T>): Promise<T> {
    try {
      return await fn(await this.client());
    } catch (err) {
      throw claudeError(err, what);
    }
  }

  async start(request: StartRequest, signal: AbortSignal): Promise<RemoteSnapshot> {
    const o = this.options;
    const cents = request.budget?.unit === 'cents' ? Math.ceil(request.budget.limit) : o.defaultBudgetCents;
    const params = {
      agent:
        o.agentVersion !== undefined
          ? { type: 'agent' as const, id: o.agentId, version: o.agentVersion }
          : o.agentId,
      environment_id: o.environmentId,
      initial_events: [{ type: 'user.message' as const, content: userContent(request.input) }],
      metadata: {
        [META_ENVELOPE]: request.envelopeId,
        [META_CONTEXT]: request.contextId ?? '',
        ...(o.archiveAfterTerminal ? { [META_ARCHIVE]: 'after_terminal' } : {}),
      },
      ...(cents !== undefined
        ? {
            budget: {
              type: 'limit' as const,
              max_list_cost: { amount: String(cents), currency: 'USD' as const },
            },
          }
        : {}),
    };
    // No SDK retries: the API has no idempotency key, so a retried create could start a second session.
    const session = await this.call('create session', (c) =>
      c.beta.sessions.create(params as never, { signal, maxRetries: 0 }),
    );
    // A 200 that names no session (a proxy's page, another API's object) may still have created one.
    if (typeof (session as { id?: unknown } | null)?.id !== 'string')
      throw unreadableAnswer('create session: the answer names no session');
    return new SessionFold(session as unknown as SessionObject, contextOf(session)).snapshot();
  }

  /** The session and its whole history, folded. */
  private async read(remoteId: string, signal: AbortSignal, session?: SessionObject): Promise<SessionFold> {
    const s =
      session ??
      ((await this.call('retrieve session', (c) =>
        c.beta.sessions.retrieve(remoteId, {}, { signal }),
      )) as unknown as SessionObject);
    const fold = new SessionFold(s, contextOf(s));
    await this.call('list events', async (c) => {
      for await (const e of c.beta.sessions.events.list(remoteId, { limit: 1000 }, { signal }))
        fold.add(e as unknown as SessionEvent);
    });
    return fold;
  }

  async get(remoteId: string, signal: AbortSignal): Promise<RemoteSnapshot> {
    return this.settled(await this.read(remoteId, signal));
  }

  /**
   * Sessions that changed at or after `since`, whatever their creation time: the API can filter only by
   * creation, so the agent's sessions (archived included) are read newest first back to the window
   * (`reconcileWindowMs`, or `since` when older), and those of ours whose `updated_at` is not before
   * `since` are folded with their history. At most `reconcileMaxSessions` are read per listing; an
   * older open job is read on its own once overdue. A lost create is found here too, by the contextId
   * in the metadata. Sessions waiting to be archived after their job ended are archived on the way.
   */
  async listChanged(query: ListChangedQuery, signal: AbortSignal): Promise<ListChangedPage> {
    return this.scan(query, signal, true);
  }

  /**
   * Archives the sessions whose job ended while nothing archived them (a crash of the plane between
   * the outcome and the archive): those created with the archive intent in their metadata, idle or
   * terminated, unarchived, whose history holds an outcome. Reconciliation does the same on its way;
   * this covers a start with no open job left to reconcile. Needs `archiveAfterTerminal`.
   */
  async sweepUnarchived(signal: AbortSignal = this.closing.signal): Promise<void> {
    if (!this.options.archiveAfterTerminal) return;
    let cursor: string | undefined;
    do {
      const page = await this.scan(
        { since: Number.POSITIVE_INFINITY, ...(cursor ? { cursor } : {}) },
        signal,
        false,
      );
      cursor = page.nextCursor;
    } while (cursor && !signal.aborted);
  }

  private async scan(query: ListChangedQuery, signal: AbortSignal, all: boolean): Promise<ListChangedPage> {
    const o = this.options;
    const at = decodeCursor(query.cursor);
    const from = Math.max(
      0,
      Math.min(query.since, this.clock.now() - (o.reconcileWindowMs ?? DEFAULT_WINDOW_MS)),
    );
    const page = await this.call('list sessions', (c) =>
      c.beta.sessions.list(
        {
          agent_id: o.agentId,
          'created_at[gte]': new Date(from).toISOString(),
          // Archived sessions are listed for the changes; the sweep wants only what is left to archive.
          include_archived: all,
          ...(all ? {} : { statuses: ['idle', 'terminated'] as Array<'idle' | 'terminated'> }),
          order: 'desc',
          limit: Math.min(100, Math.max(1, query.pageSize ?? 100)),
          ...(at ? { page: at.page } : {}),
        },
        { signal },
      ),
    );
    const items: RemoteSnapshot[] = [];
    for (const s of page.data as unknown as SessionObject[]) {
      if (!s.metadata?.[META_ENVELOPE]) continue;
      // No readable update time counts as changed: one read too many beats a missed change.
      const changed = all && !(Date.parse(s.updated_at ?? '') < query.since);
      const cleanup = this.awaitsArchive(s);
      if (!changed && !cleanup) continue;
      const snap = this.settled(await this.read(s.id, signal, s));
      // Checked once per process: one still waiting for input is read again when it changes.
      if (cleanup) this.remember(this.archiveChecked, s.id);
      if (changed) items.push(snap);
    }
    const read = (at?.read ?? 0) + page.data.length;
    const max = o.reconcileMaxSessions ?? DEFAULT_MAX_SESSIONS;
    return page.next_page && read < max
      ? { items, nextCursor: encodeCursor({ page: page.next_page, read }) }
      : { items };
  }

  /** Ours, meant to be archived once ended, not archived yet, not busy, and not checked by this process. */
  private awaitsArchive(s: SessionObject): boolean {
    return (
      !!s.metadata?.[META_ARCHIVE] &&
      !s.archived_at &&
      (s.status === 'idle' || s.status === 'terminated') &&
      !this.archiveChecked.has(s.id)
    );
  }

  /** Only to save repeated work in one process; forgetting is harmless, so the memory is bounded. */
  private remember(set: Set<string>, id: string): void {
    if (set.size >= ARCHIVED_REMEMBERED) set.clear();
    set.add(id);
  }

  /**
   * Open the stream first, then read the history, then follow the stream skipping what the history
   * held: nothing emitted in between is lost, because the stream does not replay. Preview deltas are
   * never asked for, and would be skipped as not persisted. A `session.deleted` frame ends the job's
   * record: `not_found`.
   */
  async *observe(
    remoteId: string,
    _cursor: string | null,
    signal: AbortSignal,
  ): AsyncGenerator<RemoteSnapshot> {
    const stream = await this.call('open event stream', (c) =>
      c.beta.sessions.events.stream(remoteId, {}, { signal, maxRetries: 0 }),
    );
    try {
      const fold = await this.read(remoteId, signal);
      let snap = this.settled(fold);
      yield snap;
      if (isTerminal(snap.state)) return;
      for await (const frame of stream) {
        const e = frame as unknown as SessionEvent;
        if (e.type === 'session.deleted')
          throw new TaskplaneError('not_found', `session ${remoteId} was deleted`, {
            details: { errorType: 'session_deleted' },
          });
        if (e.type === 'session.status_terminated') {
          // Whether an archive was our cancel is in the metadata, which only the session object holds.
          const s = await (await this.client()).beta.sessions.retrieve(remoteId, {}, { signal });
          fold.refresh(s as unknown as SessionObject);
        }
        if (!fold.add(e) || !RELEVANT.has(e.type)) continue;
        snap = this.settled(fold);
        yield snap;
        if (isTerminal(snap.state)) return;
      }
    } catch (err) {
      throw claudeError(err, 'event stream');
    } finally {
      stream.controller.abort();
    }
  }

  /**
   * Answers one keyed request: a tool confirmation, a custom tool result, or a budget raise. The
   * history is read first, so a retry of an answer that already landed sends nothing again.
   */
  async answer(remoteId: string, answer: InputAnswer, signal: AbortSignal): Promise<RemoteSnapshot> {
    const fold = await this.read(remoteId, signal);
    const open = fold.snapshot().inputRequests ?? [];
    const request = open.find((r) => r.requestId === answer.requestId);
    if (!request) return this.settled(fold);
    if (request.method === 'budget') {
      const cents = budgetLimit(answer.value);
      const current = Number(fold.session.budget?.max_list_cost?.amount);
      if (!(current >= cents))
        await this.call('raise budget', (c) =>
          c.beta.sessions.update(
            remoteId,
            { budget: { type: 'limit', max_list_cost: { amount: String(cents), currency: 'USD' } } } as never,
            { signal },
          ),
        );
    } else {
      const event = answerEvent(request, answer.value);
      await this.call('send answer', (c) =>
        c.beta.sessions.events.send(remoteId, { events: [event] } as never, { signal }),
      );
    }
    return this.get(remoteId, signal);
  }

  /**
   * `user.interrupt`: the turn stops at its next safe point and idles with `end_turn`, which the
   * interrupt in the history marks as cancelled. A session paused at its budget accepts and ignores
   * interrupts, so it is archived instead, after our metadata marks the archive as a cancel.
   */
  async cancel(remoteId: string, signal: AbortSignal): Promise<RemoteSnapshot> {
    const fold = await this.read(remoteId, signal);
    const now = fold.snapshot();
    if (isTerminal(now.state)) return this.settled(fold);
    if (now.nativeState === 'idle/budget_reached') {
      await this.call('mark cancel', (c) =>
        c.beta.sessions.update(remoteId, { metadata: { [META_CANCEL]: 'archive' } }, { signal }),
      );
      await this.call('archive session', (c) => c.beta.sessions.archive(remoteId, {}, { signal }));
    } else {
      await this.call('send interrupt', (c) =>
        c.beta.sessions.events.send(remoteId, { events: [{ type: 'user.interrupt' }] }, { signal }),
      );
    }
    return this.get(remoteId, signal);
  }

  /**
   * A Claude webhook is one endpoint for every session of the workspace, signed with its Standard
   * Webhooks secret: verified here (the target's own key, so no per-job token), deduplicated on
   * `webhook-id` by the ingress, and only a wake-up: the payload is thin, the session is fetched.
   */
  async parseWebhook(request: InboundWebhook): Promise<WebhookSignal> {
    const h = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), v]));
    if (!this.key) throw new TaskplaneError('unauthenticated', 'no webhook signing key configured');
    const refused = verifySignature(this.key, h, request.rawBody, this.clock.now());
    if (refused) throw new TaskplaneError('unauthenticated', `webhook signature: ${refused}`);
    const hook = sessionWebhook(request.rawBody);
    return {
      remoteId: hook.sessionId ?? '',
      deliveryId: h[WEBHOOK_ID_HEADER]!,
      token: null,
      snapshot: null,
      signedByTarget: true,
    };
  }

  /**
   * The fold's snapshot; when it is terminal, the session is archived if the target asks for it now or
   * asked at its create (the metadata keeps that across a crash of the plane).
   */
  private settled(fold: SessionFold): RemoteSnapshot {
    const snap = fold.snapshot();
    const s = fold.session;
    if (
      isTerminal(snap.state) &&
      (this.options.archiveAfterTerminal || !!s.metadata?.[META_ARCHIVE]) &&
      !s.archived_at &&
      snap.nativeState !== 'terminated/archived'
    )
      this.archiveLater(s.id);
    return snap;
  }

  private archiveLater(remoteId: string): void {
    if (this.archiving.has(remoteId)) return;
    this.remember(this.archiving, remoteId);
    const signal = this.closing.signal;
    void (async () => {
      for (let i = 0; i < ARCHIVE_TRIES && !signal.aborted; i++) {
        try {
          await (await this.client()).beta.sessions.archive(remoteId, {}, { signal });
          return;
        } catch (err) {
          const e = claudeError(err, 'archive session');
          this.logger.debug(
            { target: this.target, remoteId, err: { code: e.code, message: e.message } },
            'archive after terminal failed',
          );
          if (e.code !== 'remote_error' && e.code !== 'unavailable') break;
          await this.clock.sleep(ARCHIVE_RETRY_MS, signal).catch(() => undefined);
        }
      }
      // Not archived: the next reconciliation round or sweep looks at it again.
      this.archiving.delete(remoteId);
      this.archiveChecked.delete(remoteId);
    })();
  }
}

function contextOf(session: unknown): string | null {
  const m = (session as SessionObject).metadata;
  return m?.[META_CONTEXT] || null;
}
