import type { RemoteSnapshot } from '../connectors/connector.ts';
import type { Envelope } from '../core/envelope.ts';
import { isTaskplaneError } from '../core/errors.ts';
import { NORMALIZED_STATES, isTerminal, type NormalizedState } from '../core/states.ts';
import type { EnvelopeStore } from '../store/store.ts';
import { REMOTE_LOOKUP_LIMIT } from '../store/store-query.ts';
import {
  connectorFor,
  describeError,
  isRouteTrouble,
  remoteCall,
  type PlaneContext,
  jobFields,
} from './context.ts';
import { answerInDoubt, cancelTask, resendAnswer } from './answer-and-cancel.ts';
import { observe, updateLocal } from './observe.ts';
import { cancelUndelivered, sendCancel } from './cancel-delivery.ts';
import { HeardLog } from './heard-log.ts';
import { handleLost } from './lost-policy.ts';
import { ensureStarted } from './start-remote.ts';
import { WRITES_PER_TURN, turnPacer, type NextTurn } from './turns.ts';

/**
 * Reconciliation: the slow path that catches everything the fast path dropped (docs/a2a-notes.md,
 * "Delivery mix"). Per target and round: ONE paged listChanged(since the previous round) where the
 * connector can list, then one get() per job that the list did not mention and that is past its
 * expected duration plus a margin. Where there is no list (MCP has none by design) or it failed, one
 * get() per job the fast path has not heard of within the interval (PlaneContext.heard). Either way
 * a round asks about at most `maxFetchesPerRound` jobs, the longest-unchecked first, `fetchConcurrency`
 * at a time; the rest wait for the next round. TaskNotFound on our own job → lost → policy. Jobs whose
 * start was never confirmed are started again with the same messageId.
 *
 * What a round reads grows with what changed or is due, not with the open jobs quietly running
 * (docs/deploy.md, "A reconciliation pass against what changed"): the targets, a target's tenants and its
 * oldest open job come from an index; each listed page is matched to its jobs by remote id; and the
 * per-job duties look only at the jobs whose own deadlines have come (store-query.ts reconcileDueAt:
 * timeout, unacknowledged cancel, recorded answer, unconfirmed start, expected duration, or the default
 * one). Without a list, or when it failed, every open job is looked at, as then each quiet one is due.
 */

/**
 * Jobs a reconciliation pass looks over per turn for their own deadlines (reconcileJob). Most need
 * nothing but a few comparisons, so more go per turn than writes do; a target that cannot list has every
 * open job looked over each pass.
 */
export const DUE_CHECKS_PER_TURN = 64;

export const ACTIVE_STATES: NormalizedState[] = NORMALIZED_STATES.filter((s) => !isTerminal(s));

export interface ReconcileReport {
  target: string;
  listPages: number;
  listed: number;
  fetched: number;
  changed: number;
  lost: number;
  restarted: number;
  /** Jobs due a one-by-one read that the round's bound left for the next round. */
  deferred: number;
}

/**
 * Every non-terminal envelope, optionally of one target and/or tenant, oldest first. With `nextTurn`
 * each page after the first is read on a turn of its own: the memory store copies a whole page out in
 * the turn it is asked.
 */
export async function listActiveEnvelopes(
  store: EnvelopeStore,
  filter: { target?: string; tenant?: string } = {},
  nextTurn: NextTurn | null = null,
): Promise<Envelope[]> {
  const out: Envelope[] = [];
  const pace = turnPacer(nextTurn, 1);
  let cursor: string | undefined;
  do {
    await pace();
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

/**
 * The connector moved to another interface of a redeployed remote (its description lists other
 * bindings or URLs): every open job of the target gets a `card_changed` event, so its history shows
 * why the route changed under it.
 */
export async function recordCardChanged(
  ctx: PlaneContext,
  target: string,
  from: string | null,
  to: string | null,
): Promise<void> {
  const active = await listActiveEnvelopes(ctx.store, { target }, ctx.nextTurn);
  ctx.logger.info({ target, from, to, jobs: active.length }, 'agent card changed');
  const pace = turnPacer(ctx.nextTurn, WRITES_PER_TURN);
  for (const env of active) {
    await pace();
    try {
      await updateLocal(ctx, env.id, (cur) =>
        isTerminal(cur.state)
          ? null
          : { next: cur, events: [{ type: 'card_changed', data: { target, from, to } }] },
      );
    } catch (err) {
      ctx.logger.warn({ ...jobFields(env), err: describeError(err) }, 'recording card_changed failed');
    }
  }
}

/**
 * The remote answered, but not as its protocol (a page, a gateway's 404) and its description offers
 * no other route: the job stays open as `unknown`, saying why, until a source can see it again.
 */
async function markUnreachable(ctx: PlaneContext, env: Envelope, err: unknown): Promise<void> {
  await updateLocal(ctx, env.id, (cur) =>
    isTerminal(cur.state) || cur.state === 'unknown' || cur.state === 'cancel_requested'
      ? null
      : {
          next: { ...cur, state: 'unknown' },
          events: [
            {
              type: 'state_changed',
              data: {
                source: 'reconcile',
                from: cur.state,
                to: 'unknown',
                reason: 'unreachable',
                error: describeError(err),
              },
            },
          ],
        },
  );
}

export class Reconciler {
  /** Start time of the previous completed round per target (in memory: after a restart we list from the oldest job). */
  private readonly lastRound = new Map<string, number>();
  /** When this reconciler last read each open job on its own: the order of a bounded round. */
  private readonly checked = new HeardLog();

  constructor(
    private readonly ctx: PlaneContext,
    private readonly owner: string,
  ) {}

  async releaseLeases(): Promise<void> {
    for (const lease of this.leases) await this.ctx.store.releaseLease(lease, this.owner).catch(() => {});
    this.leases.clear();
  }

  /** Targets that have active jobs (from an index: one probe per target, not a read of every job). */
  async dueTargets(): Promise<string[]> {
    return this.ctx.store.openTargets();
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
      deferred: 0,
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
    // Who has open jobs here and since when: a few index probes, not a read of the open jobs.
    const open = await ctx.store.openJobsOfTarget(target);
    if (open.tenants.length === 0) return report;
    const tenants = new Set(open.tenants);
    const seen = new Set<string>();

    const canList = !!(connector.capabilities.list && connector.listChanged);
    let listFailed = false;
    if (canList) {
      const since =
        (this.lastRound.get(target) ?? open.oldestCreatedAt ?? roundStart) - ctx.config.reconcile.sinceSkewMs;
      let cursor: string | undefined;
      // A page's observations take turns with the streams' frames: on a store that answers without I/O a
      // whole page would otherwise be observed in one turn, every frame waiting behind it
      // (docs/performance.md, "A reconciliation page a few jobs a turn").
      const pace = turnPacer(ctx.nextTurn, WRITES_PER_TURN);
      try {
        do {
          const page = await remoteCall(ctx, 'list', null, (signal) =>
            connector.listChanged!(
              { since, pageSize: ctx.config.reconcile.pageSize, ...(cursor ? { cursor } : {}) },
              signal,
            ),
          );
          report.listPages++;
          const { byRemote, byContext } = await this.matchListed(target, page.items);
          for (const snap of page.items) {
            const env =
              byRemote.get(snap.remoteId) ?? (snap.contextId ? byContext.get(snap.contextId) : undefined);
            if (!env || seen.has(env.id)) continue;
            await pace();
            try {
              const result = await observe(ctx, env.id, snap, 'reconcile');
              seen.add(env.id);
              report.listed++;
              if (result.changed) {
                report.changed++;
                ctx.wake(env.id);
              }
            } catch (err) {
              // One job's failure never skips the rest: it is fetched on its own below.
              ctx.logger.warn({ ...jobFields(env), err: describeError(err) }, 'reconcile observe failed');
            }
          }
          cursor = page.nextCursor;
        } while (cursor && !ctx.signal.aborted);
      } catch (err) {
        if (ctx.signal.aborted) return report;
        listFailed = true;
        ctx.counters.targets.failed(target, tenants, {
          at: ctx.clock.now(),
          during: 'reconcile',
          ...describeError(err),
        });
        ctx.logger.warn(
          { target, err: describeError(err) },
          'reconcile list failed; checking jobs one by one',
        );
      }
    }

    const now = ctx.clock.now();
    // With a list that answered, only the jobs whose own deadlines have come can need more than it gave
    // (store-query.ts reconcileDueAt, read from indexes). Without one, every quiet job is due a read once
    // an interval, so every open job is looked at, as the fast path's silence is only known in memory.
    const withList = canList && !listFailed;
    const candidates = withList
      ? await ctx.store.listReconcileDue(target, {
          now,
          defaultOrphanCreatedBefore:
            now - ctx.config.reconcile.defaultExpectedDurationMs - ctx.config.reconcile.orphanMarginMs,
        })
      : await listActiveEnvelopes(ctx.store, { target }, ctx.nextTurn);
    const due: Envelope[] = [];
    const paceChecks = turnPacer(ctx.nextTurn, DUE_CHECKS_PER_TURN);
    for (const env of candidates) {
      await paceChecks();
      if (ctx.signal.aborted) break;
      try {
        if (await this.reconcileJob(env, now, { seen, listFailed, report })) due.push(env);
      } catch (err) {
        // Isolated: this job is retried next round; the pass goes on with the others.
        if (!ctx.signal.aborted)
          ctx.logger.warn(
            { envelopeId: env.id, target, err: describeError(err) },
            'reconciling a job failed',
          );
      }
    }
    await this.fetchDue(target, due, report);
    const ids = new Set(candidates.map((e) => e.id));
    if (withList) {
      // The logs order the reads of due jobs and let a push skip a read the stream made (a short grace):
      // keep the candidates' entries and what was heard within the interval, not one per open job.
      ctx.heard.retain(target, ids, roundStart - ctx.config.reconcile.intervalMs);
      this.checked.retain(target, ids);
    } else {
      ctx.heard.retain(target, ids);
      this.checked.retain(target, ids);
    }
    this.lastRound.set(target, roundStart);
    ctx.counters.targets.reconciled(target, tenants, ctx.clock.now());
    ctx.logger.info(
      {
        target,
        pages: report.listPages,
        listed: report.listed,
        fetched: report.fetched,
        changed: report.changed,
        lost: report.lost,
        restarted: report.restarted,
        deferred: report.deferred,
      },
      'reconciliation pass',
    );
    return report;
  }

  /**
   * The open jobs a page of the list refers to, by indexed lookups (remote ids; context ids for jobs
   * whose start has not answered yet), at most REMOTE_LOOKUP_LIMIT ids a call: a page the remote made
   * larger than asked is looked up in parts.
   */
  private async matchListed(
    target: string,
    items: readonly RemoteSnapshot[],
  ): Promise<{ byRemote: Map<string, Envelope>; byContext: Map<string, Envelope> }> {
    const byRemote = new Map<string, Envelope>();
    const byContext = new Map<string, Envelope>();
    const remoteIds = [...new Set(items.map((s) => s.remoteId))];
    const contextIds = [...new Set(items.flatMap((s) => (s.contextId ? [s.contextId] : [])))];
    for (let i = 0; i < Math.max(remoteIds.length, contextIds.length); i += REMOTE_LOOKUP_LIMIT) {
      const found = await this.ctx.store.findOpenEnvelopesByRemote(
        target,
        remoteIds.slice(i, i + REMOTE_LOOKUP_LIMIT),
        contextIds.slice(i, i + REMOTE_LOOKUP_LIMIT),
      );
      for (const env of found) {
        if (env.remoteId) byRemote.set(env.remoteId, env);
        else if (env.contextId) byContext.set(env.contextId, env);
      }
    }
    return { byRemote, byContext };
  }

  /**
   * Everything one round does for one job but the read: its timeout, an undelivered cancel, an answer
   * in doubt, a start never confirmed. True when the job is due a one-by-one read (fetchDue).
   */
  private async reconcileJob(
    env: Envelope,
    now: number,
    round: { seen: Set<string>; listFailed: boolean; report: ReconcileReport },
  ): Promise<boolean> {
    const ctx = this.ctx;
    const { report } = round;
    const connector = connectorFor(ctx, env.target);
    if (env.timeoutMs !== null && now - env.createdAt > env.timeoutMs && env.state !== 'cancel_requested') {
      // The caller's timeout: ask the remote to stop, then keep observing what it really ends as
      // (never invent an outcome; a job that finishes anyway is recorded as finished). Before the
      // remote id is known the intent is kept and sent once it is.
      await cancelTask(ctx, env.id, 'timeout');
      return false;
    }
    // Cancel intent not yet acknowledged by the remote: send it again.
    if (cancelUndelivered(env)) await sendCancel(ctx, env.id);
    // Recorded long enough ago that its call has ended, yet the job still waits: send it again.
    if (answerInDoubt(env, now, 2 * ctx.config.requestTimeoutMs)) await resendAnswer(ctx, env.id);
    if (round.seen.has(env.id)) return false;
    if (env.remoteId === null) {
      if (now - env.createdAt >= ctx.config.reconcile.startGraceMs) {
        report.restarted++;
        await ensureStarted(ctx, env.id, { maxAttempts: 1 });
      }
      return false;
    }
    if (connector.capabilities.list && !round.listFailed) {
      // The list covers every change since the previous round; only a job running past its expected
      // duration is read on its own (an orphan the remote may have forgotten).
      const expected = env.expectedDurationMs ?? ctx.config.reconcile.defaultExpectedDurationMs;
      return now - env.createdAt > expected + ctx.config.reconcile.orphanMarginMs;
    }
    // No list to catch what the fast path dropped: read each job it has gone quiet on.
    const heard = ctx.heard.at(env.target, env.id);
    return heard === undefined || now - heard >= ctx.config.reconcile.intervalMs;
  }

  /**
   * The round's one-by-one reads: the jobs last heard of or checked longest ago first, at most
   * `maxFetchesPerRound` of them, `fetchConcurrency` at a time. Checking a job moves it to the back, so
   * a bound smaller than the backlog still reaches every job in turn.
   */
  private async fetchDue(target: string, due: Envelope[], report: ReconcileReport): Promise<void> {
    const ctx = this.ctx;
    const { maxFetchesPerRound, fetchConcurrency } = ctx.config.reconcile;
    const last = (env: Envelope) =>
      Math.max(ctx.heard.at(target, env.id) ?? -Infinity, this.checked.at(target, env.id) ?? -Infinity);
    const order = due
      .map((env) => ({ env, last: last(env) }))
      // Stable: equally stale jobs keep the oldest-created-first order of the active list.
      .sort((a, b) => (a.last < b.last ? -1 : a.last > b.last ? 1 : 0))
      .map((x) => x.env);
    const batch = order.slice(0, maxFetchesPerRound);
    report.deferred = order.length - batch.length;
    for (let i = 0; i < batch.length && !ctx.signal.aborted; i += fetchConcurrency) {
      await Promise.all(
        batch.slice(i, i + fetchConcurrency).map((env) =>
          this.fetchJob(env, report).catch((err: unknown) => {
            // Isolated: this job is read again next round; the others go on.
            if (!ctx.signal.aborted)
              ctx.logger.warn(
                { envelopeId: env.id, target, err: describeError(err) },
                'reconciling a job failed',
              );
          }),
        ),
      );
    }
  }

  /** One job read on its own: its state observed, or lost, or its route unreachable. */
  private async fetchJob(env: Envelope, report: ReconcileReport): Promise<void> {
    const ctx = this.ctx;
    const connector = connectorFor(ctx, env.target);
    const remoteId = env.remoteId!;
    this.checked.note(env.target, env.id, ctx.clock.now());
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
      } else if (isRouteTrouble(err)) {
        await markUnreachable(ctx, env, err);
      } else if (!ctx.signal.aborted) {
        ctx.logger.warn({ ...jobFields(env), err: describeError(err) }, 'reconcile get failed');
      }
    }
  }
}
