import { TaskplaneError } from '../core/errors.ts';
import type { TargetUsage } from './store.ts';

/**
 * The per-target sums every backend builds for `summarizeUsage`, from one small row per envelope (the SQL
 * backends select only these fields), so memory, SQLite and PostgreSQL count the same way.
 */
export interface UsageRow {
  target: string;
  terminal: boolean;
  state: string;
  acceptance: string | null;
  usage: Record<string, unknown> | null;
  createdAt: number;
}

export function summarize(rows: Iterable<UsageRow>): TargetUsage[] {
  const byTarget = new Map<string, TargetUsage>();
  for (const r of rows) {
    let t = byTarget.get(r.target);
    if (!t) {
      t = {
        target: r.target,
        tasks: 0,
        finished: 0,
        accepted: 0,
        rejected: 0,
        succeededUnchecked: 0,
        usage: {},
        firstCreatedAt: r.createdAt,
      };
      byTarget.set(r.target, t);
    }
    t.tasks++;
    if (r.terminal) t.finished++;
    if (r.acceptance === 'accepted') t.accepted++;
    else if (r.acceptance === 'rejected') t.rejected++;
    else if (r.acceptance === null && r.state === 'succeeded') t.succeededUnchecked++;
    t.firstCreatedAt = Math.min(t.firstCreatedAt, r.createdAt);
    for (const [unit, n] of Object.entries(r.usage ?? {}))
      if (typeof n === 'number' && Number.isFinite(n)) t.usage[unit] = (t.usage[unit] ?? 0) + n;
  }
  return [...byTarget.values()].sort((a, b) => (a.target < b.target ? -1 : a.target > b.target ? 1 : 0));
}

/** The refusal of a create that would take a workflow past its task budget (CreateGuard). */
export function workflowTaskLimitError(workflowId: string, limit: number): TaskplaneError {
  return new TaskplaneError(
    'failed_precondition',
    `workflow budget exhausted: tasks (workflow ${workflowId} already has ${limit} of ${limit} tasks)`,
    { field: 'budget.tasks', details: { budget: 'tasks', workflowId, limit } },
  );
}
