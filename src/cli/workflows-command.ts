import type { Command } from 'commander';
import { TaskplaneError } from '../core/errors.ts';
import { intOption, table } from './cli-options.ts';
import { call, conn, print } from './tasks-command.ts';

/**
 * `taskplane workflows show|budget`: a workflow's tasks summed per target with the cost per accepted
 * completion, and the budget over all of its tasks (docs/plane.md, "Budgets"). Same connection options as
 * `taskplane tasks`.
 */

interface BudgetView {
  limits: { usage?: Record<string, number>; tasks?: number; wallTimeMs?: number };
  cancelRunning: boolean;
  used: { usage: Record<string, number>; tasks: number; wallTimeMs: number | null };
  overshoot: Record<string, number>;
  exhausted: string[];
  exceeded: Array<{ budget: string; limit: number; used: number; at: number }>;
}

interface WorkflowView {
  workflowId: string;
  tasks: number;
  accepted: number;
  rejected: number;
  usage: Record<string, number>;
  costPerAcceptedCompletion: Record<string, number> | null;
  targets: Array<{
    target: string;
    tasks: number;
    accepted: number;
    rejected: number;
    usage: Record<string, number>;
    costPerAcceptedCompletion: Record<string, number> | null;
  }>;
  budget: BudgetView | null;
}

const units = (u: Record<string, number> | null) =>
  u && Object.keys(u).length
    ? Object.entries(u)
        .map(([k, n]) => `${round(n)} ${k}`)
        .join(', ')
    : '-';
const round = (n: number) => Math.round(n * 100) / 100;

/** `--usage cents=500,total_tokens=20000` → {cents: 500, total_tokens: 20000}. */
export function usageOption(value: string, previous: Record<string, number> = {}): Record<string, number> {
  const out = { ...previous };
  for (const pair of value.split(',')) {
    const m = /^\s*([^=\s]+)\s*=\s*([0-9.]+)\s*$/.exec(pair);
    if (!m || !(Number(m[2]) > 0))
      throw new TaskplaneError('invalid_argument', `--usage: "${pair}" is not unit=number (e.g. cents=500)`, {
        field: 'usage',
      });
    out[m[1]!] = Number(m[2]);
  }
  return out;
}

export function budgetLines(b: BudgetView): string[] {
  const rows: string[][] = [['BUDGET', 'LIMIT', 'USED', 'OVERSHOOT']];
  for (const [unit, limit] of Object.entries(b.limits.usage ?? {}))
    rows.push([
      `usage.${unit}`,
      String(limit),
      String(round(b.used.usage[unit] ?? 0)),
      over(b, `usage.${unit}`),
    ]);
  if (b.limits.tasks !== undefined)
    rows.push(['tasks', String(b.limits.tasks), String(b.used.tasks), over(b, 'tasks')]);
  if (b.limits.wallTimeMs !== undefined)
    rows.push([
      'wallTimeMs',
      String(b.limits.wallTimeMs),
      String(b.used.wallTimeMs ?? '-'),
      over(b, 'wallTimeMs'),
    ]);
  const lines = [table(rows)];
  lines.push(`running tasks: ${b.cancelRunning ? 'cancelled once a limit is passed' : 'left to finish'}`);
  if (b.exhausted.length) lines.push(`exhausted:     ${b.exhausted.join(', ')} (new tasks are refused)`);
  for (const e of b.exceeded)
    lines.push(
      `passed:        ${e.budget} at ${new Date(e.at).toISOString()} (used ${round(e.used)} of ${e.limit})`,
    );
  return lines;
}

const over = (b: BudgetView, name: string) => (b.overshoot[name] ? String(round(b.overshoot[name])) : '-');

export function workflowLines(w: WorkflowView): string[] {
  const lines = [
    `workflow:    ${w.workflowId}`,
    `tasks:       ${w.tasks} (${w.accepted} accepted, ${w.rejected} rejected)`,
    `spent:       ${units(w.usage)}`,
    `cost per accepted completion: ${units(w.costPerAcceptedCompletion)}`,
  ];
  if (w.targets.length)
    lines.push(
      table([
        ['TARGET', 'TASKS', 'ACCEPTED', 'REJECTED', 'SPENT', 'PER ACCEPTED'],
        ...w.targets.map((t) => [
          t.target,
          String(t.tasks),
          String(t.accepted),
          String(t.rejected),
          units(t.usage),
          units(t.costPerAcceptedCompletion),
        ]),
      ]),
    );
  if (w.budget) lines.push(...budgetLines(w.budget));
  return lines;
}

export function registerWorkflowsCommand(program: Command): void {
  const workflows = program
    .command('workflows')
    .description("Show a workflow's tasks and cost, and set the budget over all of them")
    .option('--url <url>', 'control plane URL (TASKPLANE_URL, default http://127.0.0.1:8080)')
    .option('--key <key>', 'API key (TASKPLANE_API_KEY)')
    .option('--json', 'print JSON instead of tables', false);

  workflows
    .command('show <id>')
    .description('Tasks per target, what they spent, cost per accepted completion, and the budget')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const c = conn(cmd);
      const w = (await call(c, 'GET', `/v1/workflows/${encodeURIComponent(id)}`)) as WorkflowView;
      print(c, w, () => workflowLines(w).join('\n'));
    });

  workflows
    .command('budget <id>')
    .description('Set the budget over every task of the workflow (with no limit given: show it)')
    .option('--usage <unit=n,...>', "caps in the remote's usage units (e.g. cents=500)", usageOption)
    .option('--tasks <n>', 'most tasks the workflow may have', intOption(1))
    .option('--wall-time-ms <ms>', 'longest the workflow may run, from its first task', intOption(1))
    .option('--cancel-running', 'cancel its open tasks once a usage or wall-time limit is passed', false)
    .action(
      async (
        id: string,
        o: { usage?: Record<string, number>; tasks?: number; wallTimeMs?: number; cancelRunning: boolean },
        cmd: Command,
      ) => {
        const c = conn(cmd);
        const path = `/v1/workflows/${encodeURIComponent(id)}/budget`;
        const setting = o.usage !== undefined || o.tasks !== undefined || o.wallTimeMs !== undefined;
        const b = (
          setting
            ? await call(c, 'PUT', path, {
                ...(o.usage ? { usage: o.usage } : {}),
                ...(o.tasks !== undefined ? { tasks: o.tasks } : {}),
                ...(o.wallTimeMs !== undefined ? { wallTimeMs: o.wallTimeMs } : {}),
                cancelRunning: o.cancelRunning,
              })
            : await call(c, 'GET', path)
        ) as BudgetView;
        print(c, b, () => budgetLines(b).join('\n'));
      },
    );
}
