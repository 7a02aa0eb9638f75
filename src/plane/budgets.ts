import type { Budget, Envelope } from '../core/envelope.ts';
import { TaskplaneError } from '../core/errors.ts';
import type { PlaneContext } from './context.ts';
import { updateLocal } from './observe.ts';

/**
 * Budgets: a spend cap in the remote's unit (tokens, cents) per job (`budget` on create) or per tenant
 * (engine option `budgets.tenants`). Usage is what the remote reports, kept on the envelope by observe.
 * An exhausted budget refuses NEW remote work (a new job for the tenant, an input answer that would
 * let a job go on, a resubmission of a lost job) and records why; work already running is not
 * cancelled, because the remote, not us, decides what a half-finished job has already spent.
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
