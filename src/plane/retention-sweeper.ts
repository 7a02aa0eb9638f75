import type { Clock } from '../core/clock.ts';
import type { Envelope } from '../core/envelope.ts';
import type { Logger } from '../core/logger.ts';
import { isTerminal } from '../core/states.ts';
import type { EnvelopeStore, ExpiredEnvelope } from '../store/store.ts';
import type { RetentionConfig } from './options.ts';
import { WorkerLoop } from './worker-loop.ts';

/**
 * Retention of finished jobs (seed 000: the retention deadline is part of the envelope, and task and
 * event data can be exported to a vendor-neutral audit store before it goes).
 *
 * - When a job ends, `withRetention` records its deadline on the envelope: end + the tenant's period
 *   (`retention.tenants[tenant]`, else `retention.terminalMs`). Recorded once; a later change of the
 *   configuration applies to jobs that end after it.
 * - The sweeper deletes envelopes past their deadline, with their events, stored artifact content and
 *   delivery records, `batchSize` per transaction (EnvelopeStore.purgeEnvelopes: short transactions,
 *   rows held by a writer skipped, never waited for). On a shared store one plane sweeps at a time (the
 *   `retention` lease), so an export before the purge is written once.
 * - `beforePurge`, when given, receives each batch before it is deleted (the server writes the batch's
 *   events to JSONL files). If it throws, nothing of the batch is deleted and the round ends: the next
 *   round tries again, so the export happens at least once before the purge.
 */

/** Deadline to record on `next` now, or `next` itself when it is not finished or already has one. */
export function withRetention(next: Envelope, config: RetentionConfig, now: number): Envelope {
  if (!isTerminal(next.state) || next.retentionUntil !== null) return next;
  const period = (config.tenants[next.tenant] ?? config).terminalMs;
  return period === null ? next : { ...next, retentionUntil: now + period };
}

export type BeforePurge = (batch: ExpiredEnvelope[], store: EnvelopeStore) => Promise<void>;

export interface RetentionSweeperOptions {
  clock: Clock;
  store: EnvelopeStore;
  logger: Logger;
  config: RetentionConfig;
  /** Lease owner name of this plane. */
  owner: string;
  signal: AbortSignal;
  beforePurge?: BeforePurge;
}

/** What the sweeper did since the process started (/metrics). */
export interface RetentionStats {
  /** Envelopes purged. */
  purged: number;
  /** Batches left in place because `beforePurge` failed. */
  exportFailures: number;
  rounds: number;
}

/** The purge lease: one sweeping plane at a time on a shared store; renewed before each batch. */
const LEASE = 'retention';

export class RetentionSweeper {
  readonly stats: RetentionStats = { purged: 0, exportFailures: 0, rounds: 0 };
  private loop: WorkerLoop<'round'> | null = null;

  constructor(private readonly o: RetentionSweeperOptions) {}

  start(): void {
    const o = this.o;
    this.loop = new WorkerLoop<'round'>({
      name: 'retention',
      clock: o.clock,
      signal: o.signal,
      fetch: async () => ['round'],
      handle: async () => {
        await this.sweep();
      },
      error: (err) =>
        o.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'retention purge failed'),
      intervalMs: () => o.config.sweepIntervalMs,
      initialDelayMs: o.config.sweepIntervalMs,
    });
    this.loop.start();
  }

  async finished(): Promise<void> {
    await this.loop?.finished();
  }

  /**
   * One round: batches until nothing is due, `maxPerRound` are gone, or a batch deletes nothing (its
   * rows are all held by writers just now). Returns how many envelopes it deleted.
   */
  async sweep(): Promise<number> {
    const { clock, store, config, owner, signal } = this.o;
    // Longer than any batch takes; renewed before each one, released at the end of the round.
    const leaseMs = Math.max(60_000, 2 * config.sweepIntervalMs);
    let total = 0;
    try {
      while (total < config.maxPerRound && !signal.aborted) {
        const now = clock.now();
        if (!(await store.acquireLease(LEASE, owner, now, leaseMs))) break;
        const batch = await store.listExpiredEnvelopes(
          now,
          Math.min(config.batchSize, config.maxPerRound - total),
        );
        if (batch.length === 0) break;
        if (this.o.beforePurge) {
          try {
            await this.o.beforePurge(batch, store);
          } catch (err) {
            this.stats.exportFailures++;
            this.o.logger.error(
              { envelopes: batch.length, err: err instanceof Error ? err.message : String(err) },
              'export before purge failed: nothing of the batch deleted',
            );
            break;
          }
        }
        const gone = await store.purgeEnvelopes(
          batch.map((e) => e.id),
          now,
        );
        total += gone.length;
        this.stats.purged += gone.length;
        if (gone.length === 0) break;
      }
    } finally {
      this.stats.rounds++;
      if (total > 0) this.o.logger.info({ purged: total }, 'finished jobs purged past their retention');
      await store.releaseLease(LEASE, owner).catch(() => {
        // Expires by itself.
      });
    }
    return total;
  }
}
