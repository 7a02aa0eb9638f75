import type { Envelope } from '../core/envelope.ts';
import { isTaskplaneError } from '../core/errors.ts';
import { NORMALIZED_STATES, isTerminal, type NormalizedState } from '../core/states.ts';
import type { Store } from '../store/store.ts';
import { connectorFor, describeError, remoteCall, type PlaneContext } from './context.ts';
import { answerInDoubt, cancelTask, resendAnswer } from './answer-and-cancel.ts';
import { observe } from './observe.ts';
import { ensureStarted, handleLost } from './start-remote.ts';

/**
 * Reconciliation: the slow path that catches everything the fast path dropped (seed 004, "Polling and
 * reconciliation"). Per target and round: ONE paged listChanged(since the previous round) where the
 * connector can list, then one get() per job that the list did not mention and that is past its
 * expected duration plus a margin (or every job, where there is no list). TaskNotFound on our own job
 * → lost → policy. Jobs whose start was never confirmed are started again with the same messageId.
 */

export const ACTIVE_STATES: NormalizedState[] = NORMALIZED_STATES.filter((s) => !isTerminal(s));

export interface ReconcileReport {
  target: string;
  listPages: number;
  listed: number;
  fetched: number;
  changed: number;
  lost: number;
  restarted: number;
}

/** Every non-terminal envelope, optionally of one target and/or tenant, oldest first. */
export async function listActiveEnvelopes(
  store: Store,
  filter: { target?: string; tenant?: string } = {},
): Promise<Envelope[]> {
  const out: Envelope[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.listEnvelopes({
      states: ACTIVE_STATES,
      order: 'asc',
      limit: 500,
      ...(filter.target !== undefined ? { target: filter.target } : {}),
      ...(filter.tenant !== undefined ? { tenant: filter.tenant } : {}),
      ...(cursor ? { cursor } : {}),
    });
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

export class Reconciler {
  /** Start time of the previous completed round per target (in memory: after a restart we list from the oldest job). */
  private readonly lastRound = new Map<string, number>();

  constructor(
    private readonly ctx: PlaneContext,
    private readonly owner: string,
  ) {}

  async releaseLeases(): Promise<void> {
    for (const lease of this.leases) await this.ctx.store.releaseLease(lease, this.owner).catch(() => {});
    this.leases.clear();
  }

  /** Targets that have active jobs. */
  async dueTargets(): Promise<string[]> {
    const active = await listActiveEnvelopes(this.ctx.store);
    return [...new Set(active.map((e) => e.target))];
  }

  /** Leases this reconciler took, released on stop so another plane need not wait for their expiry. */
  private readonly leases = new Set<string>();

  /**
   * One round for one target. `force` runs it even when another owner holds the target's lease: a
   * plane that just restarted after a crash must reconcile at once, and its own dead predecessor may
   * still hold the lease (one extra list per restart is the price).
   */
  async reconcileTarget(target: string, opts: { force?: boolean } = {}): Promise<ReconcileReport> {
    const ctx = this.ctx;
    const report: ReconcileReport = {
      target,
      listPages: 0,
      listed: 0,
      fetched: 0,
      changed: 0,
      lost: 0,
      restarted: 0,
    };
    const lease = `reconcile:${target}`;
    const held = await ctx.store.acquireLease(
      lease,
      this.owner,
      ctx.clock.now(),
      ctx.config.reconcile.leaseTtlMs,
    );
    if (held) this.leases.add(lease);
    else if (!opts.force) return report;
    ctx.counters.count('reconcileRounds', null);
    const roundStart = ctx.clock.now();
    const connector = connectorFor(ctx, target);
    const active = await listActiveEnvelopes(ctx.store, { target });
    if (active.length === 0) return report;
    const byRemote = new Map(active.filter((e) => e.remoteId).map((e) => [e.remoteId!, e]));
    const byContext = new Map(active.filter((e) => !e.remoteId && e.contextId).map((e) => [e.contextId!, e]));
    const seen = new Set<string>();

    if (connector.capabilities.list && connector.listChanged) {
      const oldest = Math.min(...active.map((e) => e.createdAt));
      const since = (this.lastRound.get(target) ?? oldest) - ctx.config.reconcile.sinceSkewMs;
      let cursor: string | undefined;
      do {
        const page = await remoteCall(ctx, 'list', null, (signal) =>
          connector.listChanged!(
            { since, pageSize: ctx.config.reconcile.pageSize, ...(cursor ? { cursor } : {}) },
            signal,
          ),
        );
        report.listPages++;
        for (const snap of page.items) {
          const env =
            byRemote.get(snap.remoteId) ?? (snap.contextId ? byContext.get(snap.contextId) : undefined);
          if (!env || seen.has(env.id)) continue;
          seen.add(env.id);
          report.listed++;
          const result = await observe(ctx, env.id, snap, 'reconcile');
          if (result.changed) {
            report.changed++;
            ctx.wake(env.id);
          }
        }
        cursor = page.nextCursor;
      } while (cursor && !ctx.signal.aborted);
    }

    const now = ctx.clock.now();
    for (const env of active) {
      if (ctx.signal.aborted) break;
      if (
        env.timeoutMs !== null &&
        now - env.createdAt > env.timeoutMs &&
        env.state !== 'cancel_requested' &&
        env.remoteId
      ) {
        // The caller's timeout: ask the remote to stop, then keep observing what it really ends as
        // (never invent an outcome; a job that finishes anyway is recorded as finished).
        await cancelTask(ctx, env.id, 'timeout');
        continue;
      }
      // Recorded long enough ago that its call has ended, yet the job still waits: send it again.
      if (answerInDoubt(env, now, 2 * ctx.config.requestTimeoutMs)) await resendAnswer(ctx, env.id);
      if (seen.has(env.id)) continue;
      if (env.remoteId === null) {
        if (now - env.createdAt >= ctx.config.reconcile.startGraceMs) {
          report.restarted++;
          await ensureStarted(ctx, env.id, { maxAttempts: 1 });
        }
        continue;
      }
      const expected = env.expectedDurationMs ?? ctx.config.reconcile.defaultExpectedDurationMs;
      const overdue = now - env.createdAt > expected + ctx.config.reconcile.orphanMarginMs;
      if (connector.capabilities.list && !overdue) continue;
      const remoteId = env.remoteId;
      report.fetched++;
      try {
        const snap = await remoteCall(ctx, 'get', env, (signal) => connector.get(remoteId, signal));
        const result = await observe(ctx, env.id, snap, 'reconcile');
        if (result.changed) {
          report.changed++;
          ctx.wake(env.id);
        }
      } catch (err) {
        if (isTaskplaneError(err) && err.code === 'not_found') {
          report.lost++;
          await handleLost(ctx, env.id, remoteId, 'reconcile');
        } else if (!ctx.signal.aborted) {
          ctx.logger.warn({ envelopeId: env.id, err: describeError(err) }, 'reconcile get failed');
        }
      }
    }
    this.lastRound.set(target, roundStart);
    return report;
  }
}
