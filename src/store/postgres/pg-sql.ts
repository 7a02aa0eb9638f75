import { snapshot } from '../snapshot.ts';
import type pg from 'pg';
import type { EnvelopeEvent, NewEnvelopeEvent } from '../../core/envelope.ts';
import type { OutboxColumns, TaskEventColumns } from '../sql-rows.ts';

/**
 * One round trip for all of a write's events. WITH ORDINALITY + ORDER BY fixes the insert order, and
 * identity values are drawn in insert order, so the n-th event gets the n-th smallest seq.
 */
export async function insertEvents(c: pg.ClientBase, events: NewEnvelopeEvent[]): Promise<EnvelopeEvent[]> {
  if (events.length === 0) return [];
  const result = await c.query<{ seq: number }>(
    `INSERT INTO envelope_events (envelope_id, tenant, type, at, data)
     SELECT e, t, ty, a, d FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::jsonb[])
       WITH ORDINALITY AS u(e, t, ty, a, d, n) ORDER BY n
     RETURNING seq`,
    [
      events.map((e) => e.envelopeId),
      events.map((e) => e.tenant),
      events.map((e) => e.type),
      events.map((e) => e.at),
      events.map((e) => JSON.stringify(e.data)),
    ],
  );
  const seqs = result.rows.map((r) => r.seq).sort((a, b) => a - b);
  return events.map((e, i) => ({ ...snapshot(e), seq: seqs[i]! }));
}

/** Inserts the events in order (as insertEvents) and returns their seqs, in the same order. */
export async function insertTaskEvents(c: pg.ClientBase, events: TaskEventColumns[]): Promise<number[]> {
  if (events.length === 0) return [];
  const result = await c.query<{ seq: number }>(
    `INSERT INTO agent_task_events (task_id, at, payload)
     SELECT t, a, p FROM unnest($1::text[], $2::bigint[], $3::jsonb[]) WITH ORDINALITY AS u(t, a, p, n) ORDER BY n
     RETURNING seq`,
    [events.map((e) => e[0]), events.map((e) => e[1]), events.map((e) => e[2])],
  );
  return result.rows.map((r) => r.seq).sort((a, b) => a - b);
}

export async function insertOutbox(
  c: pg.ClientBase,
  outbox: OutboxColumns[],
  createdAt: number,
): Promise<void> {
  if (outbox.length === 0) return;
  await c.query(
    `INSERT INTO outbox (task_id, config_id, delivery_id, payload, status, attempts, next_attempt_at, created_at)
     SELECT t, c, d, p, 'pending', 0, a, $6
     FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::bigint[]) WITH ORDINALITY AS u(t, c, d, p, a, n)
     ORDER BY n`,
    [
      outbox.map((r) => r[0]),
      outbox.map((r) => r[1]),
      outbox.map((r) => r[2]),
      outbox.map((r) => r[3]),
      outbox.map((r) => r[4]),
      createdAt,
    ],
  );
}

/**
 * The claim, in one statement (graphile-worker getJobs): pick due rows that are the oldest open row of
 * their (task, config) pair, lock them skipping rows another claimer holds, lease them, return them.
 * A pair's second row is never picked while its head is open, even if the head is locked by a concurrent
 * claimer (NOT EXISTS sees it open), which keeps delivery in order per receiver.
 * $1 owner, $2 lease expiry, $3 now, $4 limit.
 */
export const claimOutboxSql = `
  UPDATE outbox o SET status = 'leased', lease_owner = $1, lease_expires_at = $2, attempts = o.attempts + 1
  FROM (
    SELECT c.id FROM outbox c
    WHERE ((c.status = 'pending' AND c.next_attempt_at <= $3) OR (c.status = 'leased' AND c.lease_expires_at <= $3))
      AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.task_id = c.task_id AND p.config_id = c.config_id
                      AND p.status IN ('pending', 'leased') AND p.id < c.id)
    ORDER BY c.id
    LIMIT $4
    FOR UPDATE OF c SKIP LOCKED
  ) due
  WHERE o.id = due.id
  RETURNING o.*`;
