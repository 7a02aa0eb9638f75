import type { Context, Hono } from 'hono';
import { TaskplaneError } from '../core/errors.ts';
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
  deps: { plane: Plane; limits: BodyLimits; tenantLimits: TenantLimits },
): void {
  const { plane } = deps;
  const jsonBody = (c: Context<ServerEnv>) =>
    readJsonObject(c.req.raw, deps.limits, (bytes) => deps.tenantLimits.paceBody(c.get('tenant'), bytes));

  // The secret this tenant's acceptance verifiers check our requests with (Standard Webhooks).
  app.get('/v1/verifier-secret', async (c) =>
    c.json({ secret: await plane.verifierSecret(c.get('tenant')), scheme: 'standard-webhooks' }),
  );

  // The tenant's own figures per target (the dashboard's cost view; /metrics has them for all tenants).
  app.get('/v1/costs', async (c) => {
    const targets = await plane.usageByTarget(c.get('tenant'));
    return c.json({
      targets: targets.map((t) => ({
        ...t,
        costPerAcceptedCompletion: costPerAccepted(t.usage, t.accepted),
      })),
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
