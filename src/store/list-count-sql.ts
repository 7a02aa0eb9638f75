import { where } from './sql-where.ts';
import type { ListCountReads } from './store-query.ts';
import type { AgentTaskQuery } from './store.ts';

/** Runs one SQL statement and returns its first row. */
export type FirstRow = (sql: string, params: unknown[]) => Promise<Record<string, unknown> | undefined>;

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/**
 * ListTasks' count reads (store-query.ts countListed) in SQL, for either backend. Every statement stays on
 * an index: agent_task_counts, agent_tasks_scope (owner, tenant, status_timestamp, id) and, for a
 * contextId filter, agent_tasks_context (owner, tenant, context_id, status_timestamp, id); the counted
 * ones stop at `limit` rows.
 */
export function listCountReads(
  style: 'sqlite' | 'pg',
  query: AgentTaskQuery,
  first: FirstRow,
): ListCountReads {
  const scoped = (withState: boolean, withContext: boolean) => {
    const w = where(style);
    w.add('owner = $?', query.owner);
    w.add('tenant = $?', query.tenant);
    if (withContext && query.contextId !== undefined) w.add('context_id = $?', query.contextId);
    if (withState && query.state !== undefined) w.add('state = $?', query.state);
    return w;
  };
  return {
    async scopeTotal() {
      const w = scoped(true, false);
      return (
        num(
          (await first(`SELECT COALESCE(SUM(n), 0) AS n FROM agent_task_counts ${w.sql()}`, w.params))?.n,
        ) ?? 0
      );
    },
    async head(limit) {
      const w = scoped(true, true);
      if (query.statusTimestampAfter !== undefined)
        w.add('status_timestamp >= $?', query.statusTimestampAfter);
      const row = await first(
        `SELECT COUNT(*) AS n, MIN(status_timestamp) AS lo, MAX(status_timestamp) AS hi FROM (
           SELECT status_timestamp FROM agent_tasks ${w.sql()}
           ORDER BY status_timestamp DESC, id DESC LIMIT ${Math.floor(limit)}) h`,
        w.params,
      );
      return { n: num(row?.n) ?? 0, oldestAt: num(row?.lo), newestAt: num(row?.hi) };
    },
    async olderThanAfter(limit) {
      const w = scoped(true, false);
      w.add('status_timestamp < $?', query.statusTimestampAfter ?? 0);
      const row = await first(
        `SELECT COUNT(*) AS n FROM (SELECT 1 FROM agent_tasks ${w.sql()} LIMIT ${Math.floor(limit)}) o`,
        w.params,
      );
      return num(row?.n) ?? 0;
    },
    async oldestInScope() {
      const w = scoped(false, true);
      return num(
        (await first(`SELECT MIN(status_timestamp) AS lo FROM agent_tasks ${w.sql()}`, w.params))?.lo,
      );
    },
  };
}
