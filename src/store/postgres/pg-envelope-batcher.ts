import { snapshot } from '../snapshot.ts';
import type pg from 'pg';
import type { EnvelopeEvent, NewEnvelopeEvent } from '../../core/envelope.ts';
import { envelopeNotices } from '../change-hub.ts';
import { TaskplaneError } from '../../core/errors.ts';
import type { ChangeNotice } from '../store.ts';
import { insertEvents } from './pg-sql.ts';

/** What an envelope write sees: its connection (inside the shared transaction) and the deferred event log. */
export interface EnvelopeTx {
  client: pg.PoolClient;
  /**
   * Queues events for insertion at the end of the transaction, under the event-order lock. The returned
   * objects get their `seq` filled in before the write resolves.
   */
  appendEvents(envelopeId: string, events: NewEnvelopeEvent[]): EnvelopeEvent[];
}

/**
 * One envelope write. Rule: an op may throw a TaskplaneError (version conflict, not found) only when it
 * has written nothing, i.e. its write matched no row. Any other error (SQL) aborts the shared transaction,
 * which is then rolled back and every write in it re-run alone.
 */
export type EnvelopeOp<T> = (tx: EnvelopeTx) => Promise<T>;

export interface EnvelopeBatcherOptions {
  pool: pg.Pool;
  /** Share one transaction between envelope writes issued while another batch runs. @default true */
  groupCommit: boolean;
  /** Most writes in one transaction. @default 128 */
  maxBatch: number;
  /** Takes the transaction-level lock that orders envelope events (see PostgresStore.appendEvents). */
  lockEvents: (client: pg.PoolClient) => Promise<void>;
  /** NOTIFYs inside the transaction. */
  notify: (client: pg.PoolClient, notices: ChangeNotice[]) => Promise<void>;
  /** Emits locally after COMMIT. */
  onCommit: (notices: ChangeNotice[]) => void;
  translate: (err: unknown) => Error;
}

interface Queued {
  op: EnvelopeOp<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

interface Pending {
  envelopeId: string;
  input: NewEnvelopeEvent[];
  output: EnvelopeEvent[];
}

/**
 * Group commit for envelope writes on PostgreSQL. Envelope events must commit in seq order, so every
 * event-writing transaction holds one advisory lock through its COMMIT, which also serializes the
 * fsync: one durable envelope write per fsync (docs/performance.md, "PostgreSQL: one durable envelope write per
 * fsync"). Writes that queue up while a batch is running therefore share the next transaction: one
 * statement each (no SAVEPOINT round trips: a version conflict is a 0-row UPDATE, which wrote nothing
 * and fails alone), all their events in one INSERT at the end, then one lock, one NOTIFY round, one
 * COMMIT. Every write still resolves only after its COMMIT. One batch runs at a time per store, so
 * batches of one process never deadlock each other; batches of two processes can (two envelopes updated
 * in opposite orders). Whenever a batch fails as a whole (deadlock, an SQL error in one write), nothing
 * of it committed, and each write is re-run in a transaction of its own, so one bad write fails alone.
 */
export class EnvelopeBatcher {
  private queue: Queued[] = [];
  private running = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: EnvelopeBatcherOptions) {}

  run<T>(op: EnvelopeOp<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ op, resolve: resolve as (value: unknown) => void, reject });
      this.pump();
    });
  }

  /** Resolves once every queued write has settled (close waits on it so nothing queued is cut off). */
  idle(): Promise<void> {
    if (!this.running && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    if (this.running) return;
    if (this.queue.length === 0) {
      for (const resolve of this.idleWaiters.splice(0)) resolve();
      return;
    }
    this.running = true;
    // One turn's delay lets writes issued together (Promise.all, N callers woken at once) join the batch.
    setImmediate(() => void this.drain());
  }

  private async drain(): Promise<void> {
    const size = this.options.groupCommit ? this.options.maxBatch : 1;
    const batch = this.queue.splice(0, size);
    try {
      await this.runWithRetry(batch);
    } finally {
      this.running = false;
      this.pump();
    }
  }

  private async runWithRetry(batch: Queued[]): Promise<void> {
    try {
      await this.runBatch(batch);
    } catch (err) {
      if (batch.length === 1) {
        batch[0]!.reject(this.options.translate(err));
        return;
      }
      for (const q of batch) {
        await this.runBatch([q]).catch((e: unknown) => q.reject(this.options.translate(e)));
      }
    }
  }

  /** Settles every write it commits; throws (nothing committed, nothing settled) if the transaction fails. */
  private async runBatch(batch: Queued[]): Promise<void> {
    const { pool } = this.options;
    const client = await pool.connect();
    const outcomes: { ok: boolean; value?: unknown; error?: unknown; pending: Pending[] }[] = [];
    try {
      await client.query('BEGIN');
      for (const q of batch) {
        const pending: Pending[] = [];
        const tx: EnvelopeTx = {
          client,
          appendEvents: (envelopeId, input) => {
            const output = input.map((e) => ({ ...snapshot(e), seq: 0 }));
            pending.push({ envelopeId, input, output });
            return output;
          },
        };
        try {
          outcomes.push({ ok: true, value: await q.op(tx), pending });
        } catch (err) {
          // A TaskplaneError means "nothing written" (EnvelopeOp's rule); anything else aborts the batch.
          if (!(err instanceof TaskplaneError)) throw err;
          outcomes.push({ ok: false, error: err, pending: [] });
        }
      }
      const pending = outcomes.flatMap((o) => o.pending);
      const events = pending.flatMap((p) => p.input);
      if (events.length > 0) {
        await this.options.lockEvents(client);
        const inserted = await insertEvents(client, events);
        let i = 0;
        for (const p of pending) for (const out of p.output) out.seq = inserted[i++]!.seq;
      }
      const notices = pending.flatMap((p) => envelopeNotices(p.envelopeId, p.output));
      await this.options.notify(client, notices);
      await client.query('COMMIT');
      client.release();
      this.options.onCommit(notices);
    } catch (err) {
      const broken = await client.query('ROLLBACK').then(
        () => undefined,
        (rollbackErr: unknown) => rollbackErr as Error,
      );
      client.release(broken);
      throw err;
    }
    batch.forEach((q, i) => {
      const o = outcomes[i]!;
      if (o.ok) q.resolve(o.value);
      else q.reject(o.error);
    });
  }
}
