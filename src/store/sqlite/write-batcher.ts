import type Database from 'better-sqlite3';
import type { ChangeNotice } from '../store.ts';

/**
 * One write: runs inside a transaction, pushes the change notices to emit once it has committed.
 *
 * It may run twice: a batch first runs without savepoints, and when one of its writes throws the whole
 * transaction is rolled back and the batch runs again with a savepoint per write (WriteBatcher). So an op
 * has no effect outside the database that a rollback would leave behind: it only reads what was captured
 * at the call, builds its result afresh on each run, and reports notices only through `notices` (a new
 * array per run).
 */
export type WriteOp<T> = (notices: ChangeNotice[]) => T;

interface Queued {
  op: WriteOp<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/**
 * Makes committed transactions durable off the event loop. `sync` must call back once every byte the
 * process wrote to the WAL before the call is on stable storage (an fsync on the libuv pool).
 */
export interface WalSyncer {
  sync(done: (err: Error | null) => void): void;
}

export interface WriteBatcherOptions {
  /**
   * Gather writes issued in the same turn of its thread's event loop into one transaction (one fsync)
   * instead of one each.
   * Every write still resolves only after its transaction commits. @default true
   */
  groupCommit?: boolean;
  /** Most writes in one transaction; bounds how long the write lock is held. @default 256 */
  maxBatch?: number;
  /** Called with the committed writes' notices (once they are durable, with a syncer). */
  onCommit: (notices: ChangeNotice[]) => void;
  /** Maps a driver error to a TaskplaneError. */
  translate: (err: unknown) => unknown;
  /**
   * With synchronous=NORMAL: makes each commit durable before its writes resolve (see WalSyncer). Absent
   * when SQLite syncs inside COMMIT itself (FULL) or nothing needs syncing (`:memory:`, opted out).
   *
   * One fsync runs at a time, covering every commit made before it started; commits made meanwhile wait
   * and share the next. Two at a time once gave lower latency on a slow disk, but with cheaper writes
   * each fsync's own CPU mattered more: one at a time, plus minSyncGapMs, measured cheapest per durable
   * send (docs/performance.md, "SQLite: one fsync at a time and the sync gap").
   */
  syncer?: WalSyncer;
  /** Turns a failed fsync into the error every later write and read gets. */
  syncFailed?: (err: Error) => unknown;
  /**
   * Least time between the starts of two fsyncs, in ms, under load: when two or more writes are queued,
   * the commit waits out the rest of it (writes queued meanwhile join it), so each fsync and each WAL
   * frame of a shared page covers more writes. A lone write commits and syncs at once, so a client that
   * awaits each write one after another pays nothing (the store bench's single-writer rate fell several
   * times over when the gap applied to it too: docs/performance.md). @default 0
   */
  minSyncGapMs?: number;
}

/**
 * Settles once the commit with ticket `ticket` is durable. Small classes rather than closures: a queued
 * write then costs one object of a shape shared by every waiter, not function objects and their context.
 */
interface Waiter {
  readonly ticket: number;
  settle(err: unknown): void;
}

/** A read's value, held back until what it may have seen is durable. */
class ReadWaiter<T> implements Waiter {
  constructor(
    readonly ticket: number,
    private readonly value: T,
    private readonly resolve: (value: T) => void,
    private readonly reject: (err: unknown) => void,
  ) {}

  settle(err: unknown): void {
    if (err === undefined) this.resolve(this.value);
    else this.reject(err);
  }
}

/** A committed batch: its change notices go out and its writes resolve once it is durable. */
class BatchWaiter implements Waiter {
  constructor(
    readonly ticket: number,
    private readonly batch: Queued[],
    private readonly result: BatchResult,
    private readonly onCommit: (notices: ChangeNotice[]) => void,
  ) {}

  settle(err: unknown): void {
    const { batch } = this;
    if (err !== undefined) {
      for (const q of batch) q.reject(err);
      return;
    }
    const { outcomes, notices } = this.result;
    this.onCommit(notices);
    for (let i = 0; i < batch.length; i++) {
      const outcome = outcomes[i]!;
      if (outcome.ok) batch[i]!.resolve(outcome.value);
      else batch[i]!.reject(outcome.error);
    }
  }
}

/**
 * Group commit for better-sqlite3. Writes queued in the same turn share one BEGIN IMMEDIATE … COMMIT. A
 * write that fails (a version conflict, a constraint) rejects alone and its neighbours still commit: the
 * batch runs first with no savepoints, and only if one of its writes throws is the transaction rolled
 * back and the batch run again with each write inside its own SAVEPOINT, so the failing one rolls back
 * alone (see WriteOp: every op may run twice). Savepoints cost: every page a write changes inside one is
 * first copied to the sub-journal, measured as a clear share of a send's CPU (docs/performance.md, "SQLite:
 * savepoints only when a write fails").
 * Failures are rare on the hot paths (a duplicate SendMessage is a result, not an error; a version
 * conflict needs a second process), so the second run is the exception. The queue is drained on
 * setImmediate, so a lone awaited write pays one event-loop turn, not a timer.
 *
 * It runs on the thread that owns the connection: the SQLite write worker (write-worker.ts, the default for
 * a file) or the event loop (event-loop-writes.ts).
 *
 * Durability. With synchronous=FULL SQLite fsyncs the WAL inside COMMIT, on that thread: on the event
 * loop every request waits behind it (milliseconds on a busy disk: docs/performance.md, "SQLite: fsync on the event
 * loop"), which is why the event loop uses a syncer and the worker, which has nothing else to do,
 * uses FULL.
 * With a `syncer` (synchronous=NORMAL) COMMIT only write()s the WAL frames, and the batch's writes resolve
 * after an fsync of the WAL that started after that COMMIT returned, run on the libuv thread pool.
 *
 * Guarantee: a write's promise resolves, and its change notices are emitted, only once its transaction
 * is on stable storage: the point FULL gives (a commit is in the WAL on disk before any caller hears of
 * it). Meanwhile the event loop serves requests instead of waiting on the disk. One fsync runs at a time
 * and resolves the commits made before it started. Reads go
 * through `visible()`, which holds a result back until every commit it could have seen is durable, so no
 * caller in this process is shown data a power loss could take back. One difference from FULL remains:
 * another process reading the same file may see a commit up to one fsync before it is durable.
 * Checkpoints keep FULL's safety under NORMAL: SQLite fsyncs the WAL before copying it into the database
 * and the database before the WAL is reused.
 */
export class WriteBatcher {
  private queue: Queued[] = [];
  private scheduled = false;
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;
  private readonly savepoint: Database.Statement;
  private readonly release: Database.Statement;
  private readonly rollbackTo: Database.Statement;
  /** Commits made so far (a ticket per commit) and the last one known to be durable. */
  private committed = 0;
  private synced = 0;
  /** Whether an fsync is running, and the last ticket it (or the one before) covers. */
  private syncing = false;
  private started = 0;
  private readonly maxBatch: number;
  /** A drain found every fsync slot busy and left the queue for when one ends. */
  private drainAfterSync = false;
  /** When the last fsync started (performance.now), and the timer waiting out minSyncGapMs. */
  private syncStartedAt = -Infinity;
  private gapTimer: ReturnType<typeof setTimeout> | undefined;
  private failure: unknown;
  /** In ticket order. */
  private waiters: Waiter[] = [];
  private idle: Array<() => void> = [];

  constructor(
    private readonly db: Database.Database,
    private readonly options: WriteBatcherOptions,
  ) {
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.savepoint = db.prepare('SAVEPOINT op');
    this.release = db.prepare('RELEASE op');
    this.rollbackTo = db.prepare('ROLLBACK TO op');
    this.maxBatch = options.maxBatch ?? 256;
  }

  run<T>(op: WriteOp<T>): Promise<T> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.options.groupCommit === false) {
      return new Promise<T>((resolve, reject) => {
        this.settleBatch([{ op, resolve: resolve as (value: unknown) => void, reject }]);
      });
    }
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ op, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.drain());
      }
    });
  }

  /**
   * `value` (read just now, outside any transaction) once every commit it may include is durable:
   * at once when nothing is waiting for an fsync, else with the next fsync.
   */
  visible<T>(value: T): Promise<T> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.synced === this.committed) return Promise.resolve(value);
    return new Promise<T>((resolve, reject) => {
      this.waiters.push(new ReadWaiter(this.committed, value, resolve, reject));
    });
  }

  /**
   * Commits whatever is queued. With every fsync slot busy it waits for one to end (unless `now`, used by
   * close so nothing queued is lost): a write committed now could not resolve before that, since its own
   * fsync cannot start sooner, and everything queued meanwhile shares one transaction and one fsync.
   */
  drain(now = false): void {
    this.scheduled = false;
    if (now && this.gapTimer !== undefined) {
      clearTimeout(this.gapTimer);
      this.gapTimer = undefined;
    }
    if (!now && this.syncing) {
      this.drainAfterSync = true;
      return;
    }
    // Only under load (two or more writes waiting): a lone writer that awaits each write never waits.
    if (!now && this.queue.length >= 2) {
      const wait = this.syncStartedAt + (this.options.minSyncGapMs ?? 0) - performance.now();
      if (wait > 0) {
        this.gapTimer ??= setTimeout(() => {
          this.gapTimer = undefined;
          this.drain();
        }, wait);
        return;
      }
    }
    while (this.queue.length > 0) this.settleBatch(this.queue.splice(0, this.maxBatch));
  }

  /** Resolves once no commit is waiting for its fsync (close waits for this before closing the file). */
  whenSynced(): Promise<void> {
    if (this.synced === this.committed) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private settleBatch(batch: Queued[]): void {
    let result: BatchResult;
    try {
      result = this.runBatchSettled(batch.map((q) => q.op));
    } catch (err) {
      for (const q of batch) q.reject(err);
      return;
    }
    if (this.failure !== undefined) {
      // a failed fsync before this commit: it can no longer be made durable
      new BatchWaiter(0, batch, result, this.options.onCommit).settle(this.failure);
      return;
    }
    if (result.committed && this.options.syncer) this.committed++;
    const waiter = new BatchWaiter(this.committed, batch, result, this.options.onCommit);
    // A batch that rolled back still read the database: its answer (a conflict, say) waits like a read.
    if (this.synced === this.committed) waiter.settle(undefined);
    else {
      this.waiters.push(waiter);
      this.startSync();
    }
  }

  /** Starts an fsync, unless one runs or nothing is left to sync; it covers every commit made so far. */
  private startSync(): void {
    const { syncer } = this.options;
    if (!syncer || this.syncing || this.started === this.committed) return;
    const target = (this.started = this.committed);
    this.syncing = true;
    this.syncStartedAt = performance.now();
    syncer.sync((err) => this.synced_(target, err));
  }

  private synced_(target: number, err: Error | null): void {
    this.syncing = false;
    if (err && this.failure === undefined) {
      // After a failed fsync the kernel may have dropped the dirty pages (fsyncgate): what is on disk is
      // unknown, so nothing more is acknowledged. Every waiting and later call fails; restart the process.
      this.failure = this.options.syncFailed?.(err) ?? err;
    }
    if (this.failure !== undefined) {
      this.synced = this.started = this.committed;
      this.settleAll(this.waiters.splice(0), this.failure);
    } else {
      this.synced = target;
      let n = 0;
      while (n < this.waiters.length && this.waiters[n]!.ticket <= target) n++;
      this.settleAll(this.waiters.splice(0, n), undefined);
    }
    if (this.drainAfterSync) {
      this.drainAfterSync = false;
      this.drain();
    }
    if (this.synced === this.committed) for (const resolve of this.idle.splice(0)) resolve();
    else this.startSync();
  }

  private settleAll(waiters: Waiter[], err: unknown): void {
    for (const w of waiters) w.settle(err);
  }

  /**
   * Throws only when the transaction itself fails (BEGIN, a SAVEPOINT statement, COMMIT), after rolling
   * it back so the connection is never left inside a transaction; per-write errors are outcomes.
   */
  private runBatchSettled(ops: WriteOp<unknown>[]): BatchResult {
    return (ops.length > 1 && this.runTogether(ops)) || this.runIsolated(ops);
  }

  /**
   * Every op in one transaction with no savepoints. Undefined, with everything rolled back, when an op
   * throws: the caller then runs the batch again isolated. A failing COMMIT throws as in runIsolated.
   */
  private runTogether(ops: WriteOp<unknown>[]): BatchResult | undefined {
    const { translate } = this.options;
    try {
      this.begin.run();
    } catch (err) {
      throw translate(err);
    }
    const outcomes: Outcome[] = [];
    const notices: ChangeNotice[] = [];
    try {
      for (const op of ops) outcomes.push({ ok: true, value: op(notices) });
    } catch {
      this.rollbackQuietly();
      return undefined;
    }
    try {
      this.commit.run();
    } catch (err) {
      this.rollbackQuietly();
      throw translate(err);
    }
    return { outcomes, notices, committed: true };
  }

  /** Each op inside its own SAVEPOINT (none for a lone op): a failing op rolls back and rejects alone. */
  private runIsolated(ops: WriteOp<unknown>[]): BatchResult {
    const { translate } = this.options;
    try {
      this.begin.run();
    } catch (err) {
      throw translate(err);
    }
    const single = ops.length === 1;
    const outcomes: Outcome[] = [];
    const notices: ChangeNotice[] = [];
    try {
      for (const op of ops) {
        const mine: ChangeNotice[] = [];
        if (!single) this.savepoint.run();
        try {
          const value = op(mine);
          if (!single) this.release.run();
          outcomes.push({ ok: true, value });
          notices.push(...mine);
        } catch (err) {
          if (single) {
            this.rollbackQuietly();
            return { outcomes: [{ ok: false, error: translate(err) }], notices: [], committed: false };
          }
          this.rollbackTo.run();
          this.release.run();
          outcomes.push({ ok: false, error: translate(err) });
        }
      }
      this.commit.run();
    } catch (err) {
      this.rollbackQuietly();
      throw translate(err);
    }
    return { outcomes, notices, committed: true };
  }

  private rollbackQuietly(): void {
    try {
      if (this.db.inTransaction) this.rollback.run();
    } catch {
      // SQLite may already have rolled back (e.g. after SQLITE_FULL); nothing more to undo.
    }
  }
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
interface BatchResult {
  outcomes: Outcome[];
  notices: ChangeNotice[];
  committed: boolean;
}
