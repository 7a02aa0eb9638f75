import type Database from 'better-sqlite3';
import type { ChangeNotice } from '../store.ts';

/** One write: runs inside a transaction, pushes the change notices to emit once it has committed. */
export type WriteOp<T> = (notices: ChangeNotice[]) => T;

interface Queued {
  op: WriteOp<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export interface WriteBatcherOptions {
  /**
   * Gather writes issued in the same event-loop turn into one transaction (one fsync) instead of one each.
   * Every write still resolves only after its transaction commits. @default true
   */
  groupCommit: boolean;
  /** Most writes in one transaction; bounds how long the write lock is held. @default 256 */
  maxBatch: number;
  /** Called with the committed writes' notices. */
  onCommit: (notices: ChangeNotice[]) => void;
  /** Maps a driver error to a TaskplaneError. */
  translate: (err: unknown) => unknown;
}

/**
 * Group commit for better-sqlite3. With synchronous=FULL a commit costs one fsync (about 2–5 ms here), so
 * one transaction per write caps a process at a few hundred durable writes/s. Writes queued in the same
 * turn instead share one BEGIN IMMEDIATE … COMMIT, each inside its own SAVEPOINT: a write that fails (a
 * version conflict, a constraint) rolls back alone and rejects alone, its neighbours still commit. The
 * queue is drained on setImmediate, so a lone awaited write pays one event-loop turn, not a timer.
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
  }

  run<T>(op: WriteOp<T>): Promise<T> {
    if (!this.options.groupCommit) {
      try {
        return Promise.resolve(this.runBatch([op])[0] as T);
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ op, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.drain());
      }
    });
  }

  /** Runs whatever is queued now (used by close so nothing queued is lost). */
  drain(): void {
    this.scheduled = false;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.maxBatch);
      let outcomes: Outcome[];
      try {
        outcomes = this.runBatchSettled(batch.map((q) => q.op));
      } catch (err) {
        for (const q of batch) q.reject(err);
        continue;
      }
      batch.forEach((q, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok) q.resolve(outcome.value);
        else q.reject(outcome.error);
      });
    }
  }

  /** One write, its own transaction: throws its error directly. */
  private runBatch(ops: WriteOp<unknown>[]): unknown[] {
    const outcomes = this.runBatchSettled(ops);
    return outcomes.map((o) => {
      if (!o.ok) throw o.error;
      return o.value;
    });
  }

  /**
   * Throws only when the transaction itself fails (BEGIN, a SAVEPOINT statement, COMMIT), after rolling
   * it back so the connection is never left inside a transaction; per-write errors are outcomes.
   */
  private runBatchSettled(ops: WriteOp<unknown>[]): Outcome[] {
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
            return [{ ok: false, error: translate(err) }];
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
    this.options.onCommit(notices);
    return outcomes;
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
