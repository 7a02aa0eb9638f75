import type pg from 'pg';
import { TERMINAL_STATES } from '../../core/states.ts';
import type { AgentTaskPurge, ExpiredEnvelope } from '../store.ts';
import { TERMINAL_AGENT_TASK_STATES_SQL } from '../store-query.ts';

/**
 * The retention statements of the PostgreSQL Store. Each purge is ONE statement (data-modifying CTEs
 * run once, whether or not the final DELETE reads them), so it is its own short transaction, and it
 * picks its rows with `FOR UPDATE SKIP LOCKED`: a row a writer holds is left for the next batch instead
 * of making the purge (and every writer queued behind it) wait. Several processes may purge at once:
 * each row is deleted by whichever locks it first.
 */

type Run = <R extends pg.QueryResultRow>(sql: string, params: unknown[]) => Promise<R[]>;

const TERMINAL_ENVELOPE_STATES = [...TERMINAL_STATES];

export async function listExpiredEnvelopes(run: Run, now: number, limit: number): Promise<ExpiredEnvelope[]> {
  const found = await run<{ id: string; tenant: string; retention_until: string }>(
    `SELECT id, tenant, retention_until FROM envelopes
     WHERE retention_until <= $1 AND state = ANY($2::text[])
     ORDER BY retention_until, id LIMIT $3`,
    [now, TERMINAL_ENVELOPE_STATES, Math.max(0, limit)],
  );
  return found.map((r) => ({ id: r.id, tenant: r.tenant, retentionUntil: Number(r.retention_until) }));
}

export async function purgeEnvelopes(run: Run, ids: readonly string[], now: number): Promise<string[]> {
  if (ids.length === 0) return [];
  const gone = await run<{ id: string }>(
    `WITH doomed AS (
       SELECT id FROM envelopes
       WHERE id = ANY($1::text[]) AND retention_until <= $2 AND state = ANY($3::text[])
       FOR UPDATE SKIP LOCKED
     ), events AS (
       DELETE FROM envelope_events WHERE envelope_id IN (SELECT id FROM doomed)
     ), deliveries AS (
       DELETE FROM deliveries WHERE envelope_id IN (SELECT id FROM doomed)
     ), leases AS (
       DELETE FROM leases WHERE name IN (SELECT 'watch:' || id FROM doomed) AND expires_at <= $2
     )
     DELETE FROM envelopes WHERE id IN (SELECT id FROM doomed) RETURNING id`,
    [[...new Set(ids)], now, TERMINAL_ENVELOPE_STATES],
  );
  return gone.map((r) => r.id);
}

export async function purgeAgentTasks(
  run: Run,
  finishedBefore: number,
  limit: number,
): Promise<AgentTaskPurge> {
  const n = Math.max(0, limit);
  // The literal state list repeats the agent_tasks_finished index's predicate, so the planner may use it.
  const gone = await run<{ id: string }>(
    `WITH doomed AS (
       SELECT id FROM agent_tasks WHERE state IN ${TERMINAL_AGENT_TASK_STATES_SQL} AND updated_at < $1
       ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED
     ), events AS (
       DELETE FROM agent_task_events WHERE task_id IN (SELECT id FROM doomed)
     ), outbox AS (
       DELETE FROM outbox WHERE task_id IN (SELECT id FROM doomed)
     ), configs AS (
       DELETE FROM push_configs WHERE task_id IN (SELECT id FROM doomed)
     ), messages AS (
       DELETE FROM agent_task_messages WHERE task_id IN (SELECT id FROM doomed)
     ), acks AS (
       DELETE FROM agent_task_acks WHERE task_id IN (SELECT id FROM doomed)
     )
     DELETE FROM agent_tasks WHERE id IN (SELECT id FROM doomed) RETURNING id`,
    [finishedBefore, n],
  );
  const replies = await run<{ n: number }>(
    `WITH doomed AS (
       SELECT owner, tenant, message_id FROM agent_direct_replies WHERE created_at < $1
       ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED
     ), gone AS (
       DELETE FROM agent_direct_replies r USING doomed d
       WHERE r.owner = d.owner AND r.tenant = d.tenant AND r.message_id = d.message_id RETURNING 1
     )
     SELECT COUNT(*)::float8 AS n FROM gone`,
    [finishedBefore, n],
  );
  return { tasks: gone.map((r) => r.id), directReplies: replies[0]?.n ?? 0 };
}
