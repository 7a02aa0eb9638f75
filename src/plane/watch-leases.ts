import type { Envelope } from '../core/envelope.ts';
import { isTerminal } from '../core/states.ts';
import type { EnvelopeVersion } from '../store/store.ts';
import { watchLeaseName } from '../store/store-query.ts';
import { describeError, type PlaneContext } from './context.ts';
import { WorkerLoop } from './worker-loop.ts';

/**
 * Per-job watch leases, so several planes sharing one database (PostgreSQL) do not all stream or poll
 * the same job (work is leased, no home-made cluster protocol).
 *
 * - A plane watches a job only while it holds the lease `watch:<envelope id>` (Store.acquireLease: an
 *   owner, an expiry, one atomic statement). The plane that creates a job takes its lease, so load
 *   spreads the way jobs arrive.
 * - Every ttl/3 it renews every lease it holds in one store call (Store.acquireLeases), and first reads
 *   the state and version of every job it holds in one more (Store.envelopeVersions): a job another
 *   plane finished stops its local watcher and lets its lease go, and a watcher parked on a job another
 *   plane changed is told to look again (the timer behind the store's change notices, which may be
 *   dropped). A renewal that fails because another plane took the lease over stops the local watcher.
 * - Every `adoptIntervalMs` it lists the open jobs whose lease no live plane holds
 *   (Store.listUnwatchedEnvelopes: from indexes, a page of 1,000 at a time, so a round costs the jobs
 *   nobody watches, not every open job) and offers to take those it does not watch locally, in one store
 *   call per page (Store.acquireLeases); a lease taken meanwhile by another plane refuses. The jobs it
 *   takes are watched the way a restart takes up its own: watchers started in waves (Plane.takeUp). A
 *   dead plane's leases are taken at once where the store can tell that their owner's process is gone
 *   (PostgreSQL: bindLeaseOwner), and after ttl elsewhere. Where it can tell, each renewal round also
 *   asks whether a dead owner still holds leases and then adopts at once, so a dead plane's jobs are
 *   picked up within ttl/3 (within ttl + one adoption interval without liveness); reconciliation covers
 *   them in the meantime.
 * - A job whose watcher cannot start (Plane.takeUp) is logged and its lease let go, for a later round.
 *
 * Off on a single-process store (memory) where there is nobody to share with: no extra writes.
 */
/** Jobs re-checked per store read in a renewal round. */
const RECHECK_BATCH = 1000;

export class WatchLeases {
  readonly enabled: boolean;
  /** The leases held here, each with the time it was last claimed or renewed (the store's expiry is that + ttl). */
  private readonly held = new Map<string, number>();

  constructor(
    private readonly ctx: PlaneContext,
    readonly owner: string,
  ) {
    const mode = ctx.config.watch.leases;
    this.enabled = mode === 'on' || (mode === 'auto' && ctx.store.capabilities.multiProcess);
  }

  /** Ties this plane's leases to its process (Store.bindLeaseOwner); before the first claim. */
  async bind(): Promise<void> {
    if (this.enabled) await this.ctx.store.bindLeaseOwner(this.owner, this.ctx.clock.now());
  }

  /** Takes (or renews) the job's lease; false when another live plane watches it. */
  async claim(envelopeId: string): Promise<boolean> {
    if (!this.enabled) return true;
    const now = this.ctx.clock.now();
    const ok = await this.ctx.store.acquireLease(
      watchLeaseName(envelopeId),
      this.owner,
      now,
      this.ctx.config.watch.leaseTtlMs,
    );
    if (ok) this.held.set(envelopeId, now);
    else this.held.delete(envelopeId);
    return ok;
  }

  /**
   * claim() for many jobs in one store call per RECHECK_BATCH (an adoption round offers every job it
   * does not watch: one statement per job would be a write per open job per round); returns the ids
   * now held here.
   */
  async claimMany(envelopeIds: readonly string[]): Promise<string[]> {
    if (!this.enabled) return [...envelopeIds];
    const got: string[] = [];
    for (let i = 0; i < envelopeIds.length; i += RECHECK_BATCH) {
      const batch = envelopeIds.slice(i, i + RECHECK_BATCH);
      const now = this.ctx.clock.now();
      const held = new Set(
        await this.ctx.store.acquireLeases(
          batch.map(watchLeaseName),
          this.owner,
          now,
          this.ctx.config.watch.leaseTtlMs,
        ),
      );
      for (const id of batch) {
        if (!held.has(watchLeaseName(id))) continue;
        this.held.set(id, now);
        got.push(id);
      }
    }
    return got;
  }

  heldIds(): string[] {
    return [...this.held.keys()];
  }

  holds(envelopeId: string): boolean {
    return !this.enabled || this.held.has(envelopeId);
  }

  /**
   * Held, and claimed or renewed within two thirds of the lease's time to live: what a plane checks
   * before it sends a job's start (PlaneContext.mayStart). Renewal comes every third, so only a plane
   * that stalled or lost its store for longer finds its lease stale; the last third is the margin for
   * the send itself and for clocks that disagree between planes.
   */
  fresh(envelopeId: string): boolean {
    if (!this.enabled) return true;
    const at = this.held.get(envelopeId);
    return at !== undefined && this.ctx.clock.now() - at < (2 * this.ctx.config.watch.leaseTtlMs) / 3;
  }

  async release(envelopeId: string): Promise<void> {
    if (!this.held.delete(envelopeId)) return;
    await this.ctx.store.releaseLease(watchLeaseName(envelopeId), this.owner).catch((err: unknown) => {
      this.ctx.logger.warn({ envelopeId, err: describeError(err) }, 'watch lease release failed');
    });
  }

  /** Renews every held lease in one store call; returns the jobs whose lease another plane now holds. */
  async renew(): Promise<string[]> {
    const ids = [...this.held.keys()];
    if (ids.length === 0 || this.ctx.signal.aborted) return [];
    const now = this.ctx.clock.now();
    let kept: Set<string>;
    try {
      const names = await this.ctx.store.acquireLeases(
        ids.map(watchLeaseName),
        this.owner,
        now,
        this.ctx.config.watch.leaseTtlMs,
      );
      kept = new Set(names);
    } catch (err) {
      // A store hiccup is not a takeover: keep watching, the next renewal tries again (the leases have
      // two more renewal periods before they expire).
      this.ctx.logger.warn({ jobs: ids.length, err: describeError(err) }, 'watch lease renewal failed');
      return [];
    }
    const lost: string[] = [];
    for (const id of ids) {
      // Released meanwhile (its watcher ended): not lost, just gone.
      if (!this.held.has(id)) continue;
      if (kept.has(watchLeaseName(id))) {
        this.held.set(id, now);
      } else {
        this.held.delete(id);
        lost.push(id);
      }
    }
    return lost;
  }

  async releaseAll(): Promise<void> {
    for (const id of [...this.held.keys()]) await this.release(id);
  }
}

/**
 * The two loops behind the leases, started by the plane when leases are on: renewal every ttl/3 (a lost
 * lease stops the local watcher) and adoption every adoptIntervalMs (claim what nobody watches).
 */
export function leaseLoops(
  ctx: PlaneContext,
  leases: WatchLeases,
  signal: AbortSignal,
  plane: {
    stopWatching(id: string): void;
    /** The job is open at `version`: a watcher parked on it looks again if that is news to it. */
    recheck(id: string, version: number): void;
    isWatching(id: string): boolean;
    /** Watch these jobs, whose leases are ours now; resolves once their watchers' first reads are done. */
    adopt(envs: readonly Envelope[]): Promise<void>;
  },
): Array<WorkerLoop<string> | WorkerLoop<Envelope[]>> {
  const cfg = ctx.config.watch;
  const loop = <T>(
    name: string,
    intervalMs: number,
    fetch: () => Promise<T[]>,
    handle: (item: T) => Promise<void>,
    describeItem: (item: T) => Record<string, unknown>,
  ) =>
    new WorkerLoop<T>({
      name,
      clock: ctx.clock,
      signal,
      fetch,
      handle,
      error: (err, item) =>
        ctx.logger.warn(
          { ...(item === undefined ? {} : describeItem(item)), err: describeError(err) },
          `${name} failed`,
        ),
      intervalMs: () => intervalMs,
    });
  // Before renewing: a job finished elsewhere (or by a path without a watcher: push-only, a start never
  // watched) drops its watcher and lease, so held leases do not pile up; a parked watcher whose job
  // changed looks again.
  const recheck = async () => {
    const ids = leases.heldIds();
    for (let i = 0; i < ids.length; i += RECHECK_BATCH) {
      const batch = ids.slice(i, i + RECHECK_BATCH);
      const open = new Map<string, number>();
      for (const v of await ctx.store.envelopeVersions(batch))
        if (!isTerminal(v.state)) open.set(v.id, v.version);
      for (const id of batch) {
        const version = open.get(id);
        if (version !== undefined) {
          plane.recheck(id, version);
          continue;
        }
        plane.stopWatching(id);
        await leases.release(id);
      }
    }
  };
  // Where the store can tell a dead plane (ownerLiveness), each renewal round also asks whether one
  // still holds leases, and if so runs the adoption round now: a dead plane's jobs move within ttl/3
  // (10 s) instead of waiting for the adoption interval (30 s). One read of the few lease owners.
  const orphans = async () => {
    if (!ctx.store.capabilities.ownerLiveness) return;
    try {
      const dead = await ctx.store.deadLeaseOwners();
      if (dead.length > 0) {
        ctx.logger.info({ owners: dead }, 'a dead plane holds watch leases; adopting its jobs now');
        adopt.wake();
      }
    } catch (err) {
      ctx.logger.warn({ err: describeError(err) }, 'dead lease owner probe failed');
    }
  };
  const renew = loop(
    'watch-renew',
    Math.max(1, Math.floor(cfg.leaseTtlMs / 3)),
    async () => (await recheck(), await orphans(), leases.renew()),
    async (id) => {
      ctx.logger.info({ envelopeId: id }, 'watch lease taken over by another plane');
      plane.stopWatching(id);
    },
    (id) => ({ envelopeId: id }),
  );
  // A round's items are batches of the jobs it claimed, handled one batch after another: the plane starts
  // a batch's watchers in take-up waves and the next batch waits for them, so adopting a dead plane's
  // 10,000 jobs queues no more reads at once than a restart taking them up.
  const adopt = loop(
    'watch-adopt',
    cfg.adoptIntervalMs,
    async () => {
      // Only the open jobs whose lease no live plane holds (Store.listUnwatchedEnvelopes), a page at a
      // time, each page offered in one claim: a round where every job is watched reads no job at all.
      const claimed: Envelope[] = [];
      let cursor: string | undefined;
      try {
        do {
          const page = await ctx.store.listUnwatchedEnvelopes({
            now: ctx.clock.now(),
            limit: RECHECK_BATCH,
            ...(cursor === undefined ? {} : { cursor }),
          });
          cursor = page.nextCursor;
          // A job claimed on an earlier page that moved on (updated meanwhile) is held here now, so
          // isWatching leaves it out.
          const unwatched = page.items.filter((e) => !plane.isWatching(e.id));
          const held = new Set(await leases.claimMany(unwatched.map((e) => e.id)));
          for (const e of unwatched) if (held.has(e.id)) claimed.push(e);
        } while (cursor !== undefined && !signal.aborted);
      } catch (err) {
        // The pages claimed before the failure are ours: watched now (unwatched leases held here would
        // never be offered again); the next round reads on.
        if (claimed.length === 0) throw err;
        ctx.logger.warn({ jobs: claimed.length, err: describeError(err) }, 'watch-adopt listing failed');
      }
      const batches: Envelope[][] = [];
      for (let i = 0; i < claimed.length; i += RECHECK_BATCH)
        batches.push(claimed.slice(i, i + RECHECK_BATCH));
      return batches;
    },
    async (batch) => {
      // Their leases are ours now (claimMany): watch the jobs still open, let the lease go of those that
      // finished meanwhile. One read of states and versions per batch; only a job changed since the
      // listing is read again, so the watcher starts from what it is now.
      // A lease claimed here and left without a watcher would keep every plane, this one included, from
      // offering the job again (a held lease counts as watched): a job that cannot be read now is let go,
      // for a later round to try again.
      let now: Map<string, EnvelopeVersion>;
      try {
        now = new Map((await ctx.store.envelopeVersions(batch.map((e) => e.id))).map((v) => [v.id, v]));
      } catch (err) {
        for (const listed of batch) await leases.release(listed.id);
        throw err;
      }
      const open: Envelope[] = [];
      for (const listed of batch) {
        const v = now.get(listed.id);
        let env: Envelope | undefined;
        try {
          env =
            v === undefined || isTerminal(v.state)
              ? undefined
              : v.version === listed.version
                ? listed
                : await ctx.store.getEnvelope(listed.id);
        } catch (err) {
          ctx.logger.warn({ envelopeId: listed.id, err: describeError(err) }, 'adopted job read failed');
        }
        if (env && !isTerminal(env.state)) open.push(env);
        else await leases.release(listed.id);
      }
      await plane.adopt(open);
    },
    (batch) => ({ jobs: batch.length }),
  );
  const loops = [renew, adopt];
  for (const l of loops) l.start();
  return loops;
}
