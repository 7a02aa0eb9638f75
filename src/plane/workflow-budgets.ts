import { TaskplaneError, VersionConflictError } from '../core/errors.ts';
import { NORMALIZED_STATES, isTerminal } from '../core/states.ts';
import type {
  BudgetExceeded,
  CreateGuard,
  TargetUsage,
  WorkflowBudgetRecord,
  WorkflowLimits,
} from '../store/store.ts';
import type { PlaneContext } from './context.ts';
import { updateLocal } from './observe.ts';

/**
 * Budgets per workflow (docs/plane.md, "Budgets"): one budget over every task of a tenant's workflow,
 * child tasks included (a child names its parent and inherits its workflow). Limits are usage per unit
 * (what the remotes report: `cents`, `total_tokens`), a task count, and wall time from the workflow's
 * first task. A create that would pass a limit is refused with the limit named; the task count is checked
 * in the insert's own transaction (store CreateGuard), so parallel creates cannot both take the last
 * place. Usage is known only after the remotes report it, so work in flight can pass a usage limit: the
 * overshoot is recorded on the budget (`exceeded`) and shown by the workflow view, and with
 * `cancelRunning` the workflow's open tasks are cancelled (actor `budget`) once a limit is passed.
 */

/** Most usage units one budget may cap. */
const MAX_UNITS = 16;
const MAX_ID_CHARS = 200;
const OPEN_STATES = NORMALIZED_STATES.filter((s) => !isTerminal(s) && s !== 'cancel_requested');

const invalid = (field: string, message: string) =>
  new TaskplaneError('invalid_argument', `${field}: ${message}`, { field });

export function checkWorkflowId(field: string, value: unknown): string {
  if (typeof value !== 'string' || value === '' || value.length > MAX_ID_CHARS)
    throw invalid(field, `must be a non-empty string of at most ${MAX_ID_CHARS} characters`);
  return value;
}

function positiveNumber(field: string, value: unknown, integer = false): number {
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value <= 0 ||
    (integer && !Number.isInteger(value))
  )
    throw invalid(field, integer ? 'must be an integer > 0' : 'must be a number > 0');
  return value;
}

/** What a caller may set (PUT /v1/workflows/{id}/budget), validated; errors name the field. */
export function checkWorkflowBudgetInput(body: unknown): { limits: WorkflowLimits; cancelRunning: boolean } {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw invalid('body', 'must be an object');
  const b = body as Record<string, unknown>;
  const limits: WorkflowLimits = {};
  if (b.usage !== undefined && b.usage !== null) {
    if (typeof b.usage !== 'object' || Array.isArray(b.usage))
      throw invalid('usage', 'must be an object of usage unit → limit, e.g. {"cents": 500}');
    const entries = Object.entries(b.usage as Record<string, unknown>);
    if (entries.length === 0 || entries.length > MAX_UNITS)
      throw invalid('usage', `must cap 1 to ${MAX_UNITS} units`);
    limits.usage = {};
    for (const [unit, limit] of entries) {
      if (unit === '' || unit.length > 64) throw invalid('usage', 'unit names are 1 to 64 characters');
      limits.usage[unit] = positiveNumber(`usage.${unit}`, limit);
    }
  }
  if (b.tasks !== undefined && b.tasks !== null) limits.tasks = positiveNumber('tasks', b.tasks, true);
  if (b.wallTimeMs !== undefined && b.wallTimeMs !== null)
    limits.wallTimeMs = positiveNumber('wallTimeMs', b.wallTimeMs, true);
  if (!limits.usage && limits.tasks === undefined && limits.wallTimeMs === undefined)
    throw invalid('budget', 'set at least one of usage, tasks, wallTimeMs');
  if (b.cancelRunning !== undefined && typeof b.cancelRunning !== 'boolean')
    throw invalid('cancelRunning', 'must be a boolean');
  return { limits, cancelRunning: b.cancelRunning === true };
}

/**
 * The workflow and parent of a new task. A child names its parent (same tenant) and belongs to the
 * parent's workflow unless it names the same one itself: a workflow's budget holds over the tasks its
 * tasks start later.
 */
export async function taskLineage(
  ctx: PlaneContext,
  tenant: string,
  req: { workflowId?: string | null | undefined; parentId?: string | null | undefined },
): Promise<{ workflowId: string | null; parentId: string | null }> {
  const named = req.workflowId == null ? null : checkWorkflowId('workflowId', req.workflowId);
  if (req.parentId == null) return { workflowId: named, parentId: null };
  if (typeof req.parentId !== 'string' || req.parentId === '' || req.parentId.length > MAX_ID_CHARS)
    throw invalid('parentId', `must be a non-empty string of at most ${MAX_ID_CHARS} characters`);
  const parent = await ctx.store.getEnvelope(req.parentId);
  if (!parent || parent.tenant !== tenant) throw invalid('parentId', 'no such task');
  if (named !== null && parent.workflowId !== null && named !== parent.workflowId)
    throw invalid(
      'workflowId',
      `the parent task belongs to workflow ${parent.workflowId}; a child stays in its parent's workflow`,
    );
  return { workflowId: named ?? parent.workflowId, parentId: req.parentId };
}

/** Everything a budget is checked against, summed over the workflow's tasks. */
export interface WorkflowUse {
  usage: Record<string, number>;
  tasks: number;
  /** Since the first task was created; null while there is none. */
  wallTimeMs: number | null;
  firstCreatedAt: number | null;
}

export function workflowUse(targets: TargetUsage[], now: number): WorkflowUse {
  const usage: Record<string, number> = {};
  let tasks = 0;
  let first: number | null = null;
  for (const t of targets) {
    tasks += t.tasks;
    first = first === null ? t.firstCreatedAt : Math.min(first, t.firstCreatedAt);
    for (const [unit, n] of Object.entries(t.usage)) usage[unit] = (usage[unit] ?? 0) + n;
  }
  return {
    usage,
    tasks,
    wallTimeMs: first === null ? null : Math.max(0, now - first),
    firstCreatedAt: first,
  };
}

/** Each limit the use has reached (`used >= limit`): no new task may be added once one is. */
export function limitsReached(limits: WorkflowLimits, use: WorkflowUse): BudgetExceeded[] {
  const out: Omit<BudgetExceeded, 'at'>[] = [];
  for (const [unit, limit] of Object.entries(limits.usage ?? {})) {
    const used = use.usage[unit] ?? 0;
    if (used >= limit) out.push({ budget: `usage.${unit}`, limit, used });
  }
  if (limits.tasks !== undefined && use.tasks >= limits.tasks)
    out.push({ budget: 'tasks', limit: limits.tasks, used: use.tasks });
  if (limits.wallTimeMs !== undefined && use.wallTimeMs !== null && use.wallTimeMs >= limits.wallTimeMs)
    out.push({ budget: 'wallTimeMs', limit: limits.wallTimeMs, used: use.wallTimeMs });
  return out.map((e) => ({ ...e, at: 0 }));
}

function describe(workflowId: string, e: Omit<BudgetExceeded, 'at'>): string {
  return `workflow budget exhausted: ${e.budget} (workflow ${workflowId} used ${e.used} of ${e.limit})`;
}

/**
 * Checks a new task of `workflowId` against its budget: throws `failed_precondition` naming the usage or
 * wall-time limit already reached, and returns the guard the insert checks the task count with.
 */
export async function admitToWorkflow(
  ctx: PlaneContext,
  tenant: string,
  workflowId: string,
): Promise<CreateGuard> {
  const budget = await ctx.store.getWorkflowBudget(tenant, workflowId);
  if (!budget) return {};
  const { tasks, ...rest } = budget.limits;
  const use = workflowUse(await ctx.store.summarizeUsage({ tenant, workflowId }), ctx.clock.now());
  const reached = limitsReached(rest, use)[0];
  if (reached) {
    ctx.logger.warn({ tenant, workflowId, budget: reached.budget }, 'new job refused: workflow budget');
    throw new TaskplaneError('failed_precondition', describe(workflowId, reached), {
      field: `budget.${reached.budget}`,
      details: { budget: reached.budget, workflowId, limit: reached.limit, used: reached.used },
    });
  }
  return tasks === undefined ? {} : { workflowTaskLimit: tasks };
}

/** Sets (or replaces) a workflow's budget; what it recorded as exceeded before stays. */
export async function setWorkflowBudget(
  ctx: PlaneContext,
  tenant: string,
  workflowId: string,
  input: { limits: WorkflowLimits; cancelRunning: boolean },
): Promise<WorkflowBudgetRecord> {
  const now = ctx.clock.now();
  const current = await ctx.store.getWorkflowBudget(tenant, workflowId);
  try {
    return await ctx.store.putWorkflowBudget(
      {
        tenant,
        workflowId,
        limits: input.limits,
        cancelRunning: input.cancelRunning,
        exceeded: current?.exceeded ?? [],
        createdAt: current?.createdAt ?? now,
        updatedAt: now,
        version: current?.version ?? 0,
      },
      current?.version ?? null,
    );
  } catch (err) {
    if (err instanceof VersionConflictError)
      throw new TaskplaneError('conflict', 'the workflow budget was changed at the same time; send it again');
    throw err;
  }
}

/**
 * Records each limit the workflow has passed that was not recorded yet (first time only, with the use
 * then), and with `cancelRunning` cancels its open tasks. Called when a task's usage changes, when a
 * budget is set, and at the wall-time deadline. Returns the ids cancelled.
 */
export async function enforceWorkflowBudget(
  ctx: PlaneContext,
  tenant: string,
  workflowId: string,
  cancel: (envelopeId: string, actor: string) => Promise<unknown>,
): Promise<string[]> {
  const now = ctx.clock.now();
  let budget = await ctx.store.getWorkflowBudget(tenant, workflowId);
  if (!budget) return [];
  const use = workflowUse(await ctx.store.summarizeUsage({ tenant, workflowId }), now);
  // A full task count refuses new tasks but stops nothing: every task in it was admitted.
  const { tasks: _count, ...running } = budget.limits;
  const passed = limitsReached(running, use);
  if (passed.length === 0) return [];
  for (let attempt = 0; attempt < 3 && budget; attempt++) {
    const fresh = passed.filter(
      (p) => !budget!.exceeded.some((e) => e.budget === p.budget && e.limit === p.limit),
    );
    if (fresh.length === 0) break;
    try {
      budget = await ctx.store.putWorkflowBudget(
        {
          ...budget,
          exceeded: [...budget.exceeded, ...fresh.map((p) => ({ ...p, at: now }))],
          updatedAt: now,
        },
        budget.version,
      );
      ctx.logger.warn({ tenant, workflowId, exceeded: fresh.map((p) => p.budget) }, 'workflow budget passed');
      break;
    } catch (err) {
      if (!(err instanceof VersionConflictError)) throw err;
      budget = await ctx.store.getWorkflowBudget(tenant, workflowId);
    }
  }
  if (!budget?.cancelRunning) return [];
  const reason = describe(workflowId, passed[0]!);
  const stopped: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await ctx.store.listEnvelopes({
      tenant,
      workflowId,
      states: OPEN_STATES,
      limit: 500,
      ...(cursor ? { cursor } : {}),
    });
    for (const env of page.items) {
      try {
        const { written } = await updateLocal(ctx, env.id, (cur) =>
          isTerminal(cur.state) || cur.state === 'cancel_requested'
            ? null
            : {
                next: cur,
                events: [{ type: 'budget_refused', data: { action: 'run', reason, workflowId } }],
              },
        );
        if (!written) continue;
        await cancel(env.id, 'budget');
        stopped.push(env.id);
      } catch (err) {
        ctx.logger.warn(
          { envelopeId: env.id, err: err instanceof TaskplaneError ? err.code : 'internal' },
          'workflow budget cancel failed; reconciliation sends it again',
        );
      }
    }
    cursor = page.nextCursor;
  } while (cursor);
  return stopped;
}

/** Cost per accepted completion, per usage unit: everything spent over the tasks accepted (null: none). */
export function costPerAccepted(
  usage: Record<string, number>,
  accepted: number,
): Record<string, number> | null {
  if (accepted === 0) return null;
  return Object.fromEntries(Object.entries(usage).map(([unit, n]) => [unit, n / accepted]));
}

/** What GET /v1/workflows/{id} shows: the budget with its use and overshoot, and cost per target. */
export interface WorkflowView {
  workflowId: string;
  tasks: number;
  accepted: number;
  rejected: number;
  usage: Record<string, number>;
  /** Every unit spent by the workflow, over its accepted tasks; null while none is accepted. */
  costPerAcceptedCompletion: Record<string, number> | null;
  targets: Array<TargetUsage & { costPerAcceptedCompletion: Record<string, number> | null }>;
  budget: WorkflowBudgetView | null;
}

export interface WorkflowBudgetView {
  limits: WorkflowLimits;
  cancelRunning: boolean;
  used: { usage: Record<string, number>; tasks: number; wallTimeMs: number | null };
  /** How far each limit is passed now (`used - limit`, only those past): work in flight can overshoot. */
  overshoot: Record<string, number>;
  /** The limits reached now: no new task is admitted while one is. */
  exhausted: string[];
  /** Each limit's first passing, as recorded then. */
  exceeded: BudgetExceeded[];
  version: number;
  createdAt: number;
  updatedAt: number;
}

export function budgetView(budget: WorkflowBudgetRecord, use: WorkflowUse): WorkflowBudgetView {
  const reached = limitsReached(budget.limits, use);
  const overshoot: Record<string, number> = {};
  for (const r of reached) if (r.used > r.limit) overshoot[r.budget] = r.used - r.limit;
  return {
    limits: budget.limits,
    cancelRunning: budget.cancelRunning,
    used: { usage: use.usage, tasks: use.tasks, wallTimeMs: use.wallTimeMs },
    overshoot,
    exhausted: reached.map((r) => r.budget),
    exceeded: budget.exceeded,
    version: budget.version,
    createdAt: budget.createdAt,
    updatedAt: budget.updatedAt,
  };
}

export async function workflowView(
  ctx: PlaneContext,
  tenant: string,
  workflowId: string,
): Promise<WorkflowView> {
  const [targets, budget] = await Promise.all([
    ctx.store.summarizeUsage({ tenant, workflowId }),
    ctx.store.getWorkflowBudget(tenant, workflowId),
  ]);
  if (targets.length === 0 && !budget) throw new TaskplaneError('not_found', 'workflow not found');
  const use = workflowUse(targets, ctx.clock.now());
  const accepted = targets.reduce((n, t) => n + t.accepted, 0);
  return {
    workflowId,
    tasks: use.tasks,
    accepted,
    rejected: targets.reduce((n, t) => n + t.rejected, 0),
    usage: use.usage,
    costPerAcceptedCompletion: costPerAccepted(use.usage, accepted),
    targets: targets.map((t) => ({ ...t, costPerAcceptedCompletion: costPerAccepted(t.usage, t.accepted) })),
    budget: budget ? budgetView(budget, use) : null,
  };
}

/**
 * Wall-time deadlines of budgeted workflows in this process: at the deadline the budget is enforced
 * (recorded, and open tasks cancelled when asked). Armed when a task joins a budgeted workflow, when a
 * budget is set, and for every open task's workflow at start, so a restart does not lose one.
 */
export class WorkflowDeadlines {
  private readonly timers = new Map<string, { at: number; cancel: () => void }>();

  constructor(
    private readonly ctx: PlaneContext,
    private readonly enforce: (tenant: string, workflowId: string) => Promise<unknown>,
  ) {}

  async arm(tenant: string, workflowId: string): Promise<void> {
    const budget = await this.ctx.store.getWorkflowBudget(tenant, workflowId);
    if (budget?.limits.wallTimeMs === undefined || !budget.cancelRunning) return;
    const use = workflowUse(
      await this.ctx.store.summarizeUsage({ tenant, workflowId }),
      this.ctx.clock.now(),
    );
    if (use.firstCreatedAt === null) return;
    const at = use.firstCreatedAt + budget.limits.wallTimeMs;
    const key = JSON.stringify([tenant, workflowId]);
    const existing = this.timers.get(key);
    if (existing?.at === at) return;
    existing?.cancel();
    const cancel = this.ctx.clock.setTimer(Math.max(0, at - this.ctx.clock.now()), () => {
      this.timers.delete(key);
      this.ctx.spawn(this.enforce(tenant, workflowId));
    });
    this.timers.set(key, { at, cancel });
  }

  clear(): void {
    for (const t of this.timers.values()) t.cancel();
    this.timers.clear();
  }
}
