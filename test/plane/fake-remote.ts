import type { Clock } from '../../src/core/clock.ts';
import { TaskplaneError } from '../../src/core/errors.ts';
import type { NormalizedState } from '../../src/core/states.ts';
import type {
  Connector,
  ConnectorCapabilities,
  InboundWebhook,
  ListChangedPage,
  ListChangedQuery,
  RemoteSnapshot,
  StartRequest,
  WebhookSignal,
} from '../../src/connectors/connector.ts';

/**
 * A small in-memory remote agent and its connector for engine tests. The test moves jobs along with
 * `set()`; open streams see every change; `dropStreams()`, `forget()` (agent restart without
 * persistence) and `failNext()` inject faults. Pushes are collected in `pushes` for the test to deliver.
 */
interface Job {
  id: string;
  contextId: string | null;
  messageId: string;
  state: NormalizedState;
  native: string;
  ts: number;
  input: unknown;
  inputRequest: RemoteSnapshot['inputRequest'];
  artifacts: NonNullable<RemoteSnapshot['artifacts']>;
  push: { url: string; token: string } | null;
  statusMessage?: string | null;
}

/** The remote timestamp of every seeded job (FakeRemote.seededPrefix). */
export const SEEDED_TS = 1;

interface Listener {
  push(s: RemoteSnapshot): void;
  fail(err: Error): void;
}

export class FakeRemote {
  readonly jobs = new Map<string, Job>();
  readonly calls: Array<{ method: string; id?: string; at?: number }> = [];
  readonly pushes: Array<{ url: string; token: string; body: string }> = [];
  private readonly listeners = new Map<string, Set<Listener>>();
  private seq = 0;
  /** Stream event ids, like the SSE `id:` our host sends (one sequence across jobs). */
  private eventSeq = 0;
  private failures: Array<{ method: string; error: TaskplaneError }> = [];
  /** Deduplicate start on messageId (our durable host does; a forgetful agent does not after restart). */
  dedupMessageIds = true;
  /** Open streams stay open but hear of no change (a proxy holding a dead stream, a stalled remote). */
  silentStreams = false;
  /** Close streams when the job waits for input (as A2A servers do). */
  closeOnInput = true;
  /**
   * Every start fails in transport: `refused` before anything was sent (the agent never got it),
   * `in_doubt` after sending (a timeout), null to accept starts.
   */
  /**
   * `refused`: refused before sending; `in_doubt`: a timeout after sending; `nameless`: the job is made
   * but the answer's snapshot names it with an empty id (a connector that let an answer through unread).
   */
  startFault: 'refused' | 'in_doubt' | 'nameless' | null = null;
  /** A start answers this long after it arrives (on the clock): a slow agent. */
  startDelayMs = 0;
  /** A get answers this long after it arrives (on the clock): a slow read. */
  getDelayMs = 0;
  /** The most gets that were in flight at once. */
  maxGetsInFlight = 0;
  private getsInFlight = 0;
  /** CancelTask ends the job as cancelled (otherwise the agent acknowledges and keeps running). */
  cancelCompletes = false;
  /** What the connector reports as its interface revision (a redeploy changes it). */
  revision = 'v1';
  /**
   * Remote ids starting with this prefix are running jobs the remote knows without a record of its own
   * (jobs a benchmark wrote straight into the store): get and subscribe answer `running` at
   * `SEEDED_TS`, no call is recorded and no listener is kept, so the remote's memory does not grow with
   * them beyond the open stream itself. They never move. Null: every job needs a start.
   */
  seededPrefix: string | null = null;
  /** Streams open on seeded jobs now. */
  seededStreams = 0;

  constructor(readonly clock: Clock) {}

  failNext(
    method: string,
    code: 'unavailable' | 'not_found' | 'failed_precondition' | 'timeout' | 'route' = 'unavailable',
  ): void {
    // `route`: a page that is not the protocol's answer (an HTML 404, a gateway's JSON), as the A2A
    // connector reports it.
    const error =
      code === 'route'
        ? new TaskplaneError('unavailable', 'injected 404 page', { details: { route: 'not_protocol' } })
        : new TaskplaneError(code, `injected ${code}`);
    this.failures.push({ method, error });
  }

  private maybeFail(method: string): void {
    const i = this.failures.findIndex((f) => f.method === method);
    if (i >= 0) throw this.failures.splice(i, 1)[0]!.error;
  }

  snapshot(job: Job): RemoteSnapshot {
    return {
      remoteId: job.id,
      contextId: job.contextId,
      state: job.state,
      nativeState: job.native,
      remoteVersion: job.ts,
      stateTimestamp: job.ts,
      inputRequest: job.inputRequest ?? null,
      artifacts: job.artifacts.map((a) => ({ ...a })),
      ...(job.statusMessage !== undefined ? { statusMessage: job.statusMessage } : {}),
    };
  }

  /** Moves a job; every open stream and push config hears of it. */
  set(
    id: string,
    state: NormalizedState,
    extra: Partial<Pick<Job, 'inputRequest' | 'artifacts' | 'native' | 'statusMessage'>> = {},
  ): void {
    const job = this.jobs.get(id);
    if (!job) throw new Error(`no job ${id}`);
    job.state = state;
    job.native = extra.native ?? state.toUpperCase();
    job.ts = Math.max(job.ts + 1, this.clock.now());
    job.inputRequest = extra.inputRequest ?? null;
    if (extra.artifacts) job.artifacts = extra.artifacts;
    if (extra.statusMessage !== undefined) job.statusMessage = extra.statusMessage;
    const snap = this.snapshot(job);
    if (!this.silentStreams) for (const l of this.listeners.get(id) ?? []) l.push(snap);
    if (job.push)
      this.pushes.push({
        ...job.push,
        body: JSON.stringify({ deliveryId: `d${++this.seq}`, snapshot: snap }),
      });
  }

  /** A seeded job (seededPrefix), made afresh on every call: nothing is kept per job. */
  seededJob(id: string): Job | null {
    if (this.seededPrefix === null || !id.startsWith(this.seededPrefix) || this.jobs.has(id)) return null;
    return {
      id,
      contextId: null,
      messageId: id,
      state: 'running',
      native: 'WORKING',
      ts: SEEDED_TS,
      input: null,
      inputRequest: null,
      artifacts: [],
      push: null,
    };
  }

  dropStreams(): void {
    for (const set of this.listeners.values())
      for (const l of set) l.fail(new TaskplaneError('unavailable', 'stream dropped'));
  }

  /** Agent restart without persistence. */
  forget(): void {
    this.jobs.clear();
    for (const set of this.listeners.values())
      for (const l of set) l.fail(new TaskplaneError('unavailable', 'connection reset'));
  }

  jobsByMessageId(messageId: string): Job[] {
    return [...this.jobs.values()].filter((j) => j.messageId === messageId);
  }

  connector(
    target = 'fake',
    caps: Partial<ConnectorCapabilities> = {},
    options: { startStream?: boolean } = {},
  ): Connector {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the connector object closes over its remote
    const remote = this;
    const capabilities: ConnectorCapabilities = {
      idempotentStart: true,
      list: true,
      stream: true,
      streamResume: false,
      push: true,
      input: true,
      cancel: true,
      ...caps,
    };
    const need = (id: string) => {
      const job = remote.jobs.get(id) ?? remote.seededJob(id);
      if (!job) throw new TaskplaneError('not_found', 'task not found');
      return job;
    };
    const connector: Connector = {
      kind: 'fake',
      target,
      capabilities,
      get revision() {
        return remote.revision;
      },
      async start(req: StartRequest, signal: AbortSignal) {
        remote.calls.push({ method: 'start' });
        remote.maybeFail('start');
        if (remote.startFault === 'refused')
          throw new TaskplaneError('unavailable', 'connection refused', { details: { notSent: true } });
        if (remote.startFault === 'in_doubt') throw new TaskplaneError('timeout', 'start timed out');
        if (remote.startDelayMs > 0) await remote.clock.sleep(remote.startDelayMs, signal);
        if (remote.dedupMessageIds) {
          const existing = remote.jobsByMessageId(req.messageId)[0];
          if (existing) return remote.snapshot(existing);
        }
        const job: Job = {
          id: `r${++remote.seq}`,
          contextId: req.contextId,
          messageId: req.messageId,
          state: 'accepted',
          native: 'SUBMITTED',
          ts: remote.clock.now(),
          input: req.input,
          inputRequest: null,
          artifacts: [],
          push: req.push ?? null,
        };
        remote.jobs.set(job.id, job);
        remote.maybeFail('start-after');
        if (remote.startFault === 'nameless') return { ...remote.snapshot(job), remoteId: '' };
        return remote.snapshot(job);
      },
      async get(id: string) {
        if (remote.seededJob(id)) return remote.snapshot(need(id));
        remote.calls.push({ method: 'get', id, at: remote.clock.now() });
        remote.maxGetsInFlight = Math.max(remote.maxGetsInFlight, ++remote.getsInFlight);
        try {
          if (remote.getDelayMs > 0) await remote.clock.sleep(remote.getDelayMs);
          remote.maybeFail('get');
          return remote.snapshot(need(id));
        } finally {
          remote.getsInFlight--;
        }
      },
      async listChanged(q: ListChangedQuery): Promise<ListChangedPage> {
        remote.calls.push({ method: 'list' });
        remote.maybeFail('list');
        const all = [...remote.jobs.values()].filter((j) => j.ts >= q.since).sort((a, b) => b.ts - a.ts);
        const offset = q.cursor ? Number(q.cursor) : 0;
        const size = q.pageSize ?? 50;
        const items = all.slice(offset, offset + size).map((j) => remote.snapshot(j));
        return offset + size < all.length ? { items, nextCursor: String(offset + size) } : { items };
      },
      observe(id: string, _cursor: string | null, signal: AbortSignal): AsyncIterable<RemoteSnapshot> {
        const seeded = remote.seededJob(id) !== null;
        if (!seeded) remote.calls.push({ method: 'subscribe', id });
        return {
          [Symbol.asyncIterator]() {
            const queue: RemoteSnapshot[] = [];
            let failure: Error | null = null;
            let done = false;
            let notify: (() => void) | null = null;
            const listener: Listener = {
              push: (s) => {
                queue.push(s);
                notify?.();
              },
              fail: (e) => {
                failure = e;
                notify?.();
              },
            };
            let opened = false;
            const close = () => {
              if (seeded && opened && !done) remote.seededStreams--;
              remote.listeners.get(id)?.delete(listener);
              done = true;
            };
            signal.addEventListener('abort', () => listener.fail(new Error('aborted')), { once: true });
            return {
              async next(): Promise<IteratorResult<RemoteSnapshot>> {
                if (!opened) {
                  opened = true;
                  remote.maybeFail('subscribe');
                  const job = need(id);
                  if (['succeeded', 'failed', 'cancelled'].includes(job.state)) {
                    throw new TaskplaneError('failed_precondition', 'task is terminal');
                  }
                  if (seeded) {
                    remote.seededStreams++;
                    return { value: remote.snapshot(job), done: false };
                  }
                  let set = remote.listeners.get(id);
                  if (!set) remote.listeners.set(id, (set = new Set()));
                  set.add(listener);
                  return {
                    value: { ...remote.snapshot(job), eventId: `ev${++remote.eventSeq}` },
                    done: false,
                  };
                }
                for (;;) {
                  if (done) return { value: undefined, done: true };
                  const s = queue.shift();
                  if (s) {
                    const end =
                      ['succeeded', 'failed', 'cancelled'].includes(s.state) ||
                      (remote.closeOnInput && s.state === 'waiting_for_input');
                    if (end) close();
                    return { value: { ...s, eventId: `ev${++remote.eventSeq}` }, done: false };
                  }
                  if (failure) {
                    close();
                    throw failure;
                  }
                  await new Promise<void>((r) => (notify = r));
                  notify = null;
                }
              },
              async return() {
                close();
                return { value: undefined, done: true };
              },
            };
          },
        };
      },
      async answer(id, answer) {
        remote.calls.push({ method: 'answer', id });
        remote.maybeFail('answer');
        const job = need(id);
        if (job.state !== 'waiting_for_input') throw new TaskplaneError('failed_precondition', 'not waiting');
        remote.set(id, 'running', { native: `ANSWERED:${JSON.stringify(answer.value)}` });
        return remote.snapshot(job);
      },
      async cancel(id) {
        remote.calls.push({ method: 'cancel', id });
        remote.maybeFail('cancel');
        const job = need(id);
        if (['succeeded', 'failed', 'cancelled'].includes(job.state))
          throw new TaskplaneError('failed_precondition', 'not cancelable');
        if (remote.cancelCompletes) remote.set(id, 'cancelled');
        return remote.snapshot(job);
      },
      webhookToken(headers: Record<string, string>): string | null {
        return (headers['authorization'] ?? '').replace(/^Bearer /, '') || null;
      },
      async parseWebhook(req: InboundWebhook): Promise<WebhookSignal> {
        remote.calls.push({ method: 'parseWebhook' });
        const auth = req.headers['authorization'] ?? '';
        const body = JSON.parse(req.rawBody) as { deliveryId: string; snapshot: RemoteSnapshot };
        return {
          remoteId: body.snapshot.remoteId,
          deliveryId: body.deliveryId,
          token: auth.replace(/^Bearer /, '') || null,
          snapshot: body.snapshot,
        };
      },
    };
    if (options.startStream) {
      // SendStreamingMessage: start, then the job's stream (its first frame repeats the snapshot, absorbed as a duplicate).
      connector.startStream = async function* (req, signal) {
        const first = await connector.start(req, signal);
        remote.calls.pop();
        remote.calls.push({ method: 'startStream' });
        yield first;
        const it = connector.observe!(first.remoteId, null, signal)[Symbol.asyncIterator]();
        remote.calls.pop();
        for (;;) {
          const r = await it.next();
          if (r.done) return;
          yield r.value;
        }
      };
    }
    return connector;
  }
}

/** Lets promise chains and setImmediate-scheduled work settle (no timing involved). */
export async function drain(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
}
