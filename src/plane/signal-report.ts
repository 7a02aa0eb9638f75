import type { NormalizedState } from '../core/states.ts';
import type { PlaneContext } from './context.ts';
import { listActiveEnvelopes } from './reconciler.ts';
import type { CounterSignals } from './signals.ts';

/**
 * Age buckets for jobs waiting on a person (anything older than a few minutes is a missed notification:
 * docs/a2a-notes.md, "Lifecycle signals").
 */
export interface AgeBuckets {
  under1m: number;
  under5m: number;
  under15m: number;
  over15m: number;
}

export interface PlaneSignals extends CounterSignals {
  /**
   * Whose view this is. `tenant`: everything is about that tenant's own jobs (what /v1/signals shows a
   * tenant); counts about no single job (reconciliation list pages, refused webhooks, rounds) are zero
   * here. `process`: every job of every tenant this process saw, for operators (/metrics).
   */
  scope: { kind: 'tenant'; tenant: string } | { kind: 'process' };
  /** Non-terminal jobs past their expected duration plus the margin. */
  orphans: number;
  /** Jobs waiting for input (native INPUT_REQUIRED and the like), by how long they have waited. */
  inputRequiredByAge: AgeBuckets;
  /** Jobs waiting for authorization (native AUTH_REQUIRED), by age. */
  authRequiredByAge: AgeBuckets;
  byState: Partial<Record<NormalizedState, number>>;
}

function bucket(b: AgeBuckets, ageMs: number): void {
  if (ageMs < 60_000) b.under1m++;
  else if (ageMs < 300_000) b.under5m++;
  else if (ageMs < 900_000) b.under15m++;
  else b.over15m++;
}

const emptyBuckets = (): AgeBuckets => ({ under1m: 0, under5m: 0, under15m: 0, over15m: 0 });

/** The signals read from the open jobs' documents (the rest come from memory and the count table). */
export type OpenJobSignals = Pick<PlaneSignals, 'orphans' | 'inputRequiredByAge' | 'authRequiredByAge'>;

/**
 * Orphans and jobs waiting on a person, from a listing of the open jobs (one tenant's, or every tenant's
 * when `tenant` is undefined): the one part of the signals whose read grows with the jobs open, which
 * /metrics therefore keeps and refreshes in the background (server/metrics.ts).
 */
export async function collectOpenJobSignals(ctx: PlaneContext, tenant?: string): Promise<OpenJobSignals> {
  const now = ctx.clock.now();
  const active = await listActiveEnvelopes(ctx.store, tenant === undefined ? {} : { tenant }, ctx.nextTurn);
  const inputRequiredByAge = emptyBuckets();
  const authRequiredByAge = emptyBuckets();
  let orphans = 0;
  for (const env of active) {
    const expected = env.expectedDurationMs ?? ctx.config.reconcile.defaultExpectedDurationMs;
    if (now - env.createdAt > expected + ctx.config.reconcile.orphanMarginMs) orphans++;
    if (env.state === 'waiting_for_input') {
      const since = env.pendingInput?.askedAt ?? env.stateTimestamp ?? env.updatedAt;
      bucket(/AUTH/i.test(env.nativeState ?? '') ? authRequiredByAge : inputRequiredByAge, now - since);
    }
  }
  return { orphans, inputRequiredByAge, authRequiredByAge };
}

/**
 * Counters from memory plus the signals derived from the envelopes themselves (they survive restarts),
 * for one tenant's jobs, or for the whole process when `tenant` is undefined. `openJobs`: those derived
 * from the open jobs, as read earlier by the caller (collectOpenJobSignals); read now when absent.
 */
export async function collectSignals(
  ctx: PlaneContext,
  tenant?: string,
  openJobs?: OpenJobSignals,
): Promise<PlaneSignals> {
  const open = openJobs ?? (await collectOpenJobSignals(ctx, tenant));
  return {
    scope: tenant === undefined ? { kind: 'process' } : { kind: 'tenant', tenant },
    ...ctx.counters.snapshot(tenant),
    orphans: open.orphans,
    inputRequiredByAge: open.inputRequiredByAge,
    authRequiredByAge: open.authRequiredByAge,
    byState: await ctx.store.countEnvelopesByState(tenant),
  };
}
