import type { Envelope } from '../core/envelope.ts';
import { isTerminal } from '../core/states.ts';
import { describeError, type PlaneContext } from './context.ts';
import { listActiveEnvelopes } from './reconciler.ts';
import { WorkerLoop } from './worker-loop.ts';

/**
 * Per-job watch leases, so several planes sharing one database (PostgreSQL) do not all stream or poll
 * the same job (work is leased, no home-made cluster protocol).
 *
 * - A plane watches a job only while it holds the lease `watch:<envelope id>` (Store.acquireLease: an
 *   owner, an expiry, one atomic statement). The plane that creates a job takes its lease, so load
 *   spreads the way jobs arrive.
 * - It renews every lease it holds every ttl/3 (one store call per watched job per renewal: 1,000
 *   jobs at the 30 s default is ~100 small writes a second, fine for the PostgreSQL this is for). A
 *   renewal that fails because another plane took the lease over stops the local watcher at once.
 * - Every `adoptIntervalMs` it offers to take every active job nobody watches locally; the lease of a
 *   live plane refuses, the lease of a dead plane has expired after ttl, so a dead plane's jobs are
 *   picked up within ttl + adoptIntervalMs (reconciliation covers them in the meantime).
 *
 * Off on a single-process store (memory) where there is nobody to share with: no extra writes.
 */
export class WatchLeases {
  readonly enabled: boolean;
  private readonly held = new Set<string>();

  constructor(
    private readonly ctx: PlaneContext,
    readonly owner: string,
  ) {
    const mode = ctx.config.watch.leases;
    this.enabled = mode === 'on' || (mode === 'auto' && ctx.store.capabilities.multiProcess);
  }

  private static lease(envelopeId: string): string {
    return `watch:${envelopeId}`;
  }

  /** Takes (or renews) the job's lease; false when another live plane watches it. */
  async claim(envelopeId: string): Promise<boolean> {
    if (!this.enabled) return true;
    const ok = await this.ctx.store.acquireLease(
      WatchLeases.lease(envelopeId),
      this.owner,
      this.ctx.clock.now(),
      this.ctx.config.watch.leaseTtlMs,
    );
    if (ok) this.held.add(envelopeId);
    else this.held.delete(envelopeId);
    return ok;
  }

  heldIds(): string[] {
    return [...this.held];
  }

  holds(envelopeId: string): boolean {
    return !this.enabled || this.held.has(envelopeId);
  }

  async release(envelopeId: string): Promise<void> {
    if (!this.held.delete(envelopeId)) return;
    await this.ctx.store.releaseLease(WatchLeases.lease(envelopeId), this.owner).catch((err: unknown) => {
      this.ctx.logger.warn({ envelopeId, err: describeError(err) }, 'watch lease release failed');
    });
  }

  /** Renews every held lease; returns the jobs whose lease another plane now holds. */
  async renew(): Promise<string[]> {
    const lost: string[] = [];
    for (const id of [...this.held]) {
      if (this.ctx.signal.aborted) break;
      try {
        if (!(await this.claim(id))) lost.push(id);
      } catch (err) {
        // A store hiccup is not a takeover: keep watching, the next renewal tries again (the lease has
        // two more renewal periods before it expires).
        this.ctx.logger.warn({ envelopeId: id, err: describeError(err) }, 'watch lease renewal failed');
      }
    }
    return lost;
  }

  async releaseAll(): Promise<void> {
    for (const id of [...this.held]) await this.release(id);
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
    /** A local watcher runs for this job. */
    hasWatcher(id: string): boolean;
    isWatching(id: string): boolean;
    adopt(env: Envelope): Promise<void>;
  },
): Array<WorkerLoop<string>> {
  const cfg = ctx.config.watch;
  const loop = (
    name: string,
    intervalMs: number,
    fetch: () => Promise<string[]>,
    handle: (id: string) => Promise<void>,
  ) =>
    new WorkerLoop<string>({
      name,
      clock: ctx.clock,
      signal,
      fetch,
      handle,
      error: (err, id) => ctx.logger.warn({ envelopeId: id, err: describeError(err) }, `${name} failed`),
      intervalMs: () => intervalMs,
    });
  // A job with no local watcher (push-only, or still being started) ends without a watcher's `done` to
  // release its lease: drop it here once the job is finished, so held leases do not pile up.
  const prune = async () => {
    for (const id of leases.heldIds()) {
      if (plane.hasWatcher(id)) continue;
      const env = await ctx.store.getEnvelope(id);
      if (!env || isTerminal(env.state)) await leases.release(id);
    }
  };
  const renew = loop(
    'watch-renew',
    Math.max(1, Math.floor(cfg.leaseTtlMs / 3)),
    async () => (await prune(), leases.renew()),
    async (id) => {
      ctx.logger.info({ envelopeId: id }, 'watch lease taken over by another plane');
      plane.stopWatching(id);
    },
  );
  const adopt = loop(
    'watch-adopt',
    cfg.adoptIntervalMs,
    async () =>
      (await listActiveEnvelopes(ctx.store)).filter((e) => !plane.isWatching(e.id)).map((e) => e.id),
    async (id) => {
      const env = await ctx.store.getEnvelope(id);
      if (env && (await leases.claim(id))) await plane.adopt(env);
    },
  );
  const loops = [renew, adopt];
  for (const l of loops) l.start();
  return loops;
}
