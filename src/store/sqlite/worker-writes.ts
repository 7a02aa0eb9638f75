import { Worker } from 'node:worker_threads';
import { TaskplaneError } from '../../core/errors.ts';
import type { ChangeNotice } from '../store.ts';
import { errorFromData, type ErrorData } from './sqlite-errors.ts';
import type { StoreWrites } from './store-writes.ts';
import type { WriteArgs, WriteName, WriteResult } from './write-ops.ts';

/** What the write worker is started with (write-worker.ts). */
export interface WorkerOptions {
  path: string;
  synchronous: 'FULL' | 'NORMAL';
  busyTimeoutMs: number;
  groupCommit: boolean;
}

/** A batch of writes, numbered in the order sent. */
export interface WorkerBatch {
  seq: number;
  ops: Array<[WriteName, unknown[]]>;
}

/**
 * The worker's answer to one batch: a result or an error per write, in order, and the notices of every
 * commit since its previous answer (write-worker.ts).
 */
export interface WorkerReply {
  seq: number;
  results: Array<[true, unknown] | [false, ErrorData]>;
  notices: ChangeNotice[];
}

interface Pending {
  name: WriteName;
  args: unknown[];
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/**
 * The event loop's side of the SQLite write worker: writes are sent to it as `[name, args]` (write-ops.ts)
 * and resolve with its answer. Writes issued in one event-loop turn go as one message, sent at once: the
 * worker's WriteBatcher puts every message that arrived while it was busy (in COMMIT's fsync, say) into
 * its next transaction, so group commit happens there, and the worker never waits on this thread to hear
 * of the next writes. (Holding writes back until the previous batch was answered did worse: the worker
 * then idled for two thread wake-ups per commit.)
 *
 * Why a worker: on the host's send path the event loop spent about a third of its time in SQLite's write
 * path (statements, COMMIT's WAL writes, checkpoints) and in handing the fsync to the thread pool, while
 * the machine's second core sat partly idle. Measured with `test/bench/host-ab.sh` (see docs/performance.md,
 * "Host").
 *
 * Durability: the worker's connection runs synchronous=FULL, and SQLite makes a commit visible to readers
 * (the wal-index header) only after the WAL's fsync inside COMMIT. So every reader, the store's own
 * connection on the event loop included, sees only durable commits, and reads need no holding back.
 *
 * The worker is referenced only while writes are in flight: an open store does not keep the process alive,
 * and a process awaiting a write is not let exit before its answer.
 */
export class WorkerWrites implements StoreWrites {
  private readonly worker: Worker;
  private queue: Pending[] = [];
  /** Batches sent and not yet answered, by seq. */
  private readonly inFlight = new Map<number, Pending[]>();
  private sent = 0;
  private scheduled = false;
  private failure: TaskplaneError | undefined;
  private idle: Array<() => void> = [];
  private readonly exited: Promise<void>;
  /** Settles once the worker has opened its connection, or failed to. */
  readonly ready: Promise<void>;
  /** The worker connection's `synchronous` pragma as SQLite reports it (2 = FULL), once ready. */
  synchronous: number | undefined;
  private markReady!: () => void;
  private failReady!: (err: unknown) => void;

  constructor(
    options: WorkerOptions,
    private readonly onCommit: (notices: ChangeNotice[]) => void,
  ) {
    this.worker = startWorker(options);
    this.worker.unref();
    this.ready = new Promise((resolve, reject) => {
      this.markReady = resolve;
      this.failReady = reject;
    });
    this.ready.catch(() => {}); // also reported to every write; awaiting it is optional
    this.worker.on('message', (reply: WorkerReply | { ready: number }) => {
      if ('ready' in reply) {
        this.synchronous = reply.ready;
        this.markReady();
      } else this.answered(reply);
    });
    this.worker.on('error', (err) => this.fail(err));
    this.exited = new Promise((resolve) => {
      this.worker.once('exit', () => {
        this.fail(new Error('the write worker exited'));
        resolve();
      });
    });
  }

  /** Every commit a reader can see is already durable (FULL: see the class comment). */
  visible<T>(value: T): Promise<T> {
    return Promise.resolve(value);
  }

  run<K extends WriteName>(name: K, args: WriteArgs<K>): Promise<WriteResult<K>> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.queue.push({ name, args, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // Writes issued in this turn go as one batch.
        setImmediate(() => this.send());
      }
    });
  }

  /** Resolves once nothing is queued or in flight. */
  whenIdle(): Promise<void> {
    if (this.inFlight.size === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Waits for the writes made so far, then closes the worker's connection and ends the thread. */
  async close(): Promise<void> {
    await this.whenIdle();
    if (this.failure === undefined) {
      this.worker.ref();
      this.worker.postMessage('close');
      await this.exited;
    } else await this.worker.terminate();
  }

  private send(): void {
    this.scheduled = false;
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    // Built by push, not map: map's result is a holey array, which structured clone writes key by key.
    const ops: WorkerBatch['ops'] = [];
    for (const p of batch) ops.push([p.name, p.args]);
    const message: WorkerBatch = { seq: ++this.sent, ops };
    // The arguments are strings, numbers and snapshot()s: nothing that cannot be cloned.
    this.worker.postMessage(message);
    if (this.inFlight.size === 0) this.worker.ref();
    this.inFlight.set(message.seq, batch);
  }

  private answered(reply: WorkerReply): void {
    const batch = this.inFlight.get(reply.seq);
    if (!batch) return;
    this.inFlight.delete(reply.seq);
    this.onCommit(reply.notices);
    for (let i = 0; i < batch.length; i++) {
      const r = reply.results[i]!;
      if (r[0]) batch[i]!.resolve(r[1]);
      else batch[i]!.reject(errorFromData(r[1]));
    }
    if (this.inFlight.size === 0) {
      this.worker.unref();
      if (this.queue.length === 0) for (const resolve of this.idle.splice(0)) resolve();
    }
  }

  /** The worker died: what was in flight has an unknown outcome, and nothing more can be written. */
  private fail(err: unknown): void {
    if (this.failure) return;
    const why = err instanceof Error ? err.message : String(err);
    this.failure = new TaskplaneError(
      'unavailable',
      `sqlite write worker stopped (${why}); restart the process`,
      {
        cause: err,
        retryable: false,
      },
    );
    const lost = [...[...this.inFlight.values()].flat(), ...this.queue];
    this.inFlight.clear();
    this.queue = [];
    for (const p of lost) p.reject(this.failure);
    this.failReady(this.failure);
    for (const resolve of this.idle.splice(0)) resolve();
  }
}

/**
 * The write worker thread. Compiled, write-worker.js sits beside this module and starts directly. Run
 * from source (vitest, tsx) the entry is TypeScript, and a worker thread does not inherit the main
 * thread's loader on Node 20, so it starts through write-worker-source.mjs, which registers tsx (a dev
 * dependency, present wherever the sources run) before importing write-worker.ts.
 */
function startWorker(workerData: WorkerOptions): Worker {
  const fromSource = import.meta.url.endsWith('.ts');
  const entry = new URL(fromSource ? './write-worker-source.mjs' : './write-worker.js', import.meta.url);
  return new Worker(entry, { workerData });
}
