import type { Budget, Envelope } from '../core/envelope.ts';
import { TaskplaneError } from '../core/errors.ts';
import { NORMALIZED_STATES, isTerminal } from '../core/states.ts';
import type { PlaneContext } from './context.ts';
import { updateLocal } from './observe.ts';

/**
 * Budgets: a spend cap in the remote's unit (tokens, cents) per job (`budget` on create) or per tenant
 * (engine option `budgets.tenants`). Usage is what the remote reports, kept on the envelope by observe.
 * An exhausted budget refuses NEW remote work (a new job for the tenant, an input answer that would
 * let a job go on, a resubmission of a lost job) and records why. Work already running is cancelled
 * only when the operator asks for it (`budgets.cancelRunning`, `enforceRunningBudgets`): then a job
 * whose usage passes its own budget, or every open job of a tenant whose jobs together pass the
 * tenant's (failure matrix row 11: parallel work that, summed, overspends), gets a cancel. The remote
 * still decides what a half-finished job has spent, and its true outcome is recorded as always.
 * Generic: it reads only `usage[unit]`, whatever connector reported it.
 */

export function checkBudget(field: string, value: unknown): Budget | null {
  if (value === undefined || value === null) return null;
  const b = value as Partial<Budget>;
  if (
    typeof b !== 'object' ||
    typeof b.limit !== 'number' ||
    !(b.limit > 0) ||
    typeof b.unit !== 'string' ||
    b.unit === ''
  ) {
    throw new TaskplaneError('invalid_argument', `${field}: must be {limit: number > 0, unit: string}`, {
      field,
    });
  }
  return { limit: b.limit, unit: b.unit };
}

/** Why the job's own budget forbids new work, or null. */
export function jobBudgetExhausted(env: Pick<Envelope, 'budget' | 'usage'>): string | null {
  if (!env.budget) return null;
  const used = env.usage?.[env.budget.unit] ?? 0;
  return used >= env.budget.limit
    ? `job budget exhausted: used ${used} of ${env.budget.limit} ${env.budget.unit}`
    : null;
}

/**
 * Why the tenant's budget forbids a new job, or null. Sums the usage of the tenant's envelopes: one
 * paged scan per create, and only for tenants that have a budget configured.
 */
export async function tenantBudgetExhausted(ctx: PlaneContext, tenant: string): Promise<string | null> {
  const budget = ctx.config.budgets.tenants[tenant];
  if (!budget) return null;
  let used = 0;
  let cursor: string | undefined;
  do {
    const page = await ctx.store.listEnvelopes({ tenant, limit: 500, ...(cursor ? { cursor } : {}) });
    for (const env of page.items) used += env.usage?.[budget.unit] ?? 0;
    cursor = page.nextCursor;
  } while (cursor && used < budget.limit);
  return used >= budget.limit
    ? `tenant budget exhausted: used ${used} of ${budget.limit} ${budget.unit}`
    : null;
}

/** Records on the envelope that new work was refused for budget, then throws the refusal. */
export async function refuseForBudget(
  ctx: PlaneContext,
  envelopeId: string,
  action: string,
  reason: string,
): Promise<never> {
  await updateLocal(ctx, envelopeId, (env) => ({
    next: env,
    events: [{ type: 'budget_refused', data: { action, reason } }],
  }));
  ctx.logger.warn({ envelopeId, action, reason }, 'remote work refused: budget exhausted');
  throw new TaskplaneError('failed_precondition', reason, { field: 'budget' });
}

const OPEN_STATES = NORMALIZED_STATES.filter((s) => !isTerminal(s) && s !== 'cancel_requested');

/**
 * Called after an observation changed a job's usage (wired by the Plane when `budgets.cancelRunning`):
 * cancels the job when its own budget is used up, and every open job of its tenant when the tenant's
 * is. Each cancelled job gets a `budget_refused` event (action `run`) saying which budget and how much
 * was used, then the usual cancel (actor `budget`). `cancel` is the engine's cancel path, passed in
 * so this file does not import it (it imports this one).
 */
export async function enforceRunningBudgets(
  ctx: PlaneContext,
  env: Envelope,
  cancel: (envelopeId: string, actor: string) => Promise<unknown>,
): Promise<string[]> {
  const stops: Array<{ id: string; reason: string }> = [];
  const own = jobBudgetExhausted(env);
  if (own && OPEN_STATES.includes(env.state)) stops.push({ id: env.id, reason: own });
  const tenantReason = await tenantBudgetExhausted(ctx, env.tenant);
  if (tenantReason) {
    let cursor: string | undefined;
    do {
      const page = await ctx.store.listEnvelopes({
        tenant: env.tenant,
        states: OPEN_STATES,
        limit: 500,
        ...(cursor ? { cursor } : {}),
      });
      for (const e of page.items)
        if (!stops.some((s) => s.id === e.id)) stops.push({ id: e.id, reason: tenantReason });
      cursor = page.nextCursor;
    } while (cursor);
  }
  const stopped: string[] = [];
  for (const stop of stops) {
    try {
      const { written } = await updateLocal(ctx, stop.id, (cur) =>
        isTerminal(cur.state) || cur.state === 'cancel_requested'
          ? null
          : { next: cur, events: [{ type: 'budget_refused', data: { action: 'run', reason: stop.reason } }] },
      );
      if (!written) continue;
      ctx.logger.warn(
        { envelopeId: stop.id, reason: stop.reason },
        'running work cancelled: budget exhausted',
      );
      await cancel(stop.id, 'budget');
      stopped.push(stop.id);
    } catch (err) {
      ctx.logger.warn(
        { envelopeId: stop.id, err: err instanceof TaskplaneError ? err.code : 'internal' },
        'budget cancel failed; reconciliation sends it again',
      );
    }
  }
  return stopped;
}
