import type { Context, Hono } from 'hono';
import type { Clock } from '../core/clock.ts';
import { TaskplaneError } from '../core/errors.ts';
import { CachedReadsByKey } from './cached-read.ts';
import type { Plane } from '../plane/plane.ts';
import { costPerAccepted } from '../plane/workflow-budgets.ts';
import { readJsonObject, type BodyLimits } from './request-body.ts';
import type { ServerEnv } from './task-routes.ts';
import type { TenantLimits } from './tenant-limits.ts';

/**
 * Workflows (docs/plane.md, "Budgets"): a workflow is the tasks of one tenant that share a `workflowId`
 * (children inherit their parent's). GET /v1/workflows/{id} sums them per target with the cost per
 * accepted completion; PUT/GET /v1/workflows/{id}/budget set and read the budget over all of them.
 */
export function registerWorkflowRoutes(
  app: Hono<ServerEnv>,
  deps: {
    plane: Plane;
    limits: BodyLimits;
    tenantLimits: TenantLimits;
    clock: Pick<Clock, 'now'>;
    /** How old a tenant's GET /v1/costs figures may be before a request refreshes them. @default 30000 */
    costsMaxAgeMs?: number;
  },
): void {
  const { plane } = deps;
  const jsonBody = (c: Context<ServerEnv>) =>
    readJsonObject(c.req.raw, deps.limits, (bytes) => deps.tenantLimits.paceBody(c.get('tenant'), bytes));

  // The secret this tenant's acceptance verifiers check our requests with (Standard Webhooks).
  app.get('/v1/verifier-secret', async (c) =>
    c.json({ secret: await plane.verifierSecret(c.get('tenant')), scheme: 'standard-webhooks' }),
  );

  // The tenant's own figures per target (the dashboard's cost view; /metrics has them for all tenants).
  // They come from one read of every task of the tenant, which grows with the tasks it stored: kept per
  // tenant for costsMaxAgeMs and refreshed in the background, so a request reads nothing itself but the
  // first of a tenant (and the first after it was dropped), and any number of requests cost the store
  // one read per tenant per costsMaxAgeMs. `ageSeconds` says how old the figures are. Every acceptance
  // decision this plane writes (a person's through the API, the schema check at completion, a verifier's
  // verdict) drops its tenant's figures, so the next request counts it; a decision written by another
  // plane sharing the store shows within costsMaxAgeMs.
  const costs = new CachedReadsByKey(
    (tenant) => plane.usageByTarget(tenant),
    deps.costsMaxAgeMs ?? 30_000,
    deps.clock,
  );
  plane.onAcceptanceDecided((tenant) => costs.forget(tenant));
  app.get('/v1/costs', async (c) => {
    const { value: targets, ageMs } = await costs.get(c.get('tenant'));
    return c.json({
      targets: targets.map((t) => ({
        ...t,
        costPerAcceptedCompletion: costPerAccepted(t.usage, t.accepted),
      })),
      ageSeconds: ageMs / 1000,
    });
  });

  app.get('/v1/workflows/:id', async (c) => c.json(await plane.workflow(c.get('tenant'), c.req.param('id'))));

  app.get('/v1/workflows/:id/budget', async (c) => {
    const view = await plane.workflow(c.get('tenant'), c.req.param('id'));
    if (!view.budget) throw new TaskplaneError('not_found', 'this workflow has no budget');
    return c.json(view.budget);
  });

  app.put('/v1/workflows/:id/budget', async (c) => {
    const tenant = c.get('tenant');
    const id = c.req.param('id');
    await plane.setWorkflowBudget(tenant, id, await jsonBody(c));
    return c.json((await plane.workflow(tenant, id)).budget);
  });
}
