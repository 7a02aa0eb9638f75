import type { Envelope } from '../../core/envelope.ts';
import { VersionConflictError, notFound } from '../../core/errors.ts';
import { envelopeNotices, taskNotices } from '../change-hub.ts';
import * as rows from '../sql-rows.ts';
import type {
  AgentScope,
  ApiKeyRecord,
  AgentTaskRecord,
  ChangeNotice,
  CreateGuard,
  InboundDelivery,
  WorkflowBudgetRecord,
  OutboxRow,
  PushConfigRecord,
} from '../store.ts';
import { workflowTaskLimitError } from '../usage-summary.ts';
import { directReplyText, findEnvelopeByKey, readTask, taskIdForMessage } from './shared-reads.ts';
import { PURGE_WRITES } from './purge-ops.ts';
import type { SqlConn } from './statement-cache.ts';
import {
  ENVELOPE_ID,
  ID,
  OWNER,
  TENANT,
  UPDATED_AT,
  type EnvelopeEventRow,
  type EnvelopeRow,
  type EventRow,
  type OutboxInsert,
  type TaskRow,
} from './write-rows.ts';

/**
 * Every write the SQLite Store makes, as a named function of a connection and plain arguments. Named and
 * plain so the same code runs on the event loop's connection or on the write worker's (see
 * write-worker.ts): a write crosses the thread boundary as `[name, args]`, and its result and any error
 * come back as structured clones. So arguments and results hold only data (strings, numbers, plain
 * objects), never functions or class instances, and each op follows the WriteOp rules (write-batcher.ts):
 * it may run twice, and reports change notices only through `notices`.
 */

const OPEN_STATES = `('pending', 'leased')`;

export const WRITES = {
  ...PURGE_WRITES,

  // --- agent tasks -------------------------------------------------------------------------------

  createAgentTask(
    c: SqlConn,
    notices: ChangeNotice[],
    row: TaskRow,
    messageId: string,
    events: EventRow[],
    outbox: OutboxInsert[],
  ): { created: true } | { created: false; task: AgentTaskRecord } {
    // The (owner, tenant, messageId) row goes first: a duplicate is found by the insert itself, and the
    // SELECT runs only then (one statement fewer per new task). A pair whose task its owner has
    // acknowledged is taken over: that resend is a new message, not a retry.
    const scope = { owner: row[OWNER], tenant: row[TENANT] };
    const claimed = c
      .q(
        `INSERT INTO agent_task_messages (owner, tenant, message_id, task_id) VALUES (?, ?, ?, ?)
         ON CONFLICT (owner, tenant, message_id) DO UPDATE SET task_id = excluded.task_id
         WHERE agent_task_messages.task_id IN (SELECT task_id FROM agent_task_acks)`,
      )
      .run(scope.owner, scope.tenant, messageId, row[ID]);
    if (claimed.changes === 0) {
      return { created: false, task: readTask(c, taskIdForMessage(c, scope, messageId)!)! };
    }
    c.q(
      `INSERT INTO agent_tasks (owner, tenant, context_id, state, status_timestamp, created_at, updated_at, version,
         task, executor_state, id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(row);
    notices.push(...taskNotices(row[ID], appendTaskEvents(c, events)));
    appendOutbox(c, outbox, row[UPDATED_AT]);
    return { created: true };
  },

  /** Marks task `id` acknowledged when it is the scope's (Store.acknowledgeAgentTask). */
  acknowledgeAgentTask(
    c: SqlConn,
    _notices: ChangeNotice[],
    id: string,
    owner: string,
    tenant: string,
  ): void {
    c.q(
      `INSERT INTO agent_task_acks (task_id) SELECT id FROM agent_tasks WHERE id = ? AND owner = ? AND tenant = ?
       ON CONFLICT DO NOTHING`,
    ).run(id, owner, tenant);
  },

  /** Inserts the reply unless the pair has one; returns the stored reply's JSON text. */
  putDirectReply(
    c: SqlConn,
    _notices: ChangeNotice[],
    owner: string,
    tenant: string,
    messageId: string,
    reply: string,
    now: number,
  ): string {
    c.q(
      `INSERT INTO agent_direct_replies (owner, tenant, message_id, reply, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT DO NOTHING`,
    ).run(owner, tenant, messageId, reply, now);
    return directReplyText(c, { owner, tenant }, messageId)!;
  },

  updateAgentTask(
    c: SqlConn,
    notices: ChangeNotice[],
    row: TaskRow,
    expectedVersion: number,
    events: EventRow[],
    outbox: OutboxInsert[],
    messageId: string | undefined,
  ): { duplicate: true; task: AgentTaskRecord } | { duplicate: false; scope: AgentScope; seqs: number[] } {
    // Duplicate before version: a retried message must read as "already done", not as a conflict.
    if (messageId !== undefined) {
      const found = c.q('SELECT owner, tenant FROM agent_tasks WHERE id = ?').get(row[ID]) as
        AgentScope | undefined;
      if (!found) throw notFound(`agent task ${row[ID]}`);
      if (taskIdForMessage(c, found, messageId) !== undefined) {
        return { duplicate: true, task: readTask(c, row[ID])! };
      }
    }
    // The scope never changes: it is not SET, and RETURNING gives the stored one (no read of the whole
    // record first, which was a SELECT plus two JSON.parse per write).
    const updated = c
      .q(
        `UPDATE agent_tasks SET context_id = ?, state = ?, status_timestamp = ?, created_at = ?, updated_at = ?,
           version = ?, task = ?, executor_state = ? WHERE id = ? AND version = ? RETURNING owner, tenant`,
      )
      // The row's columns after owner and tenant, in order, end with id: the SET list, then WHERE id = ?.
      .get(...row.slice(TENANT + 1), expectedVersion) as AgentScope | undefined;
    if (!updated) {
      const exists = c.q('SELECT 1 FROM agent_tasks WHERE id = ?').get(row[ID]) !== undefined;
      throw exists ? new VersionConflictError(`agent task ${row[ID]}`) : notFound(`agent task ${row[ID]}`);
    }
    const scope: AgentScope = { owner: updated.owner, tenant: updated.tenant };
    if (messageId !== undefined) {
      c.q('INSERT INTO agent_task_messages (owner, tenant, message_id, task_id) VALUES (?, ?, ?, ?)').run(
        scope.owner,
        scope.tenant,
        messageId,
        row[ID],
      );
    }
    const appended = appendTaskEvents(c, events);
    appendOutbox(c, outbox, row[UPDATED_AT]);
    notices.push(...taskNotices(row[ID], appended));
    return { duplicate: false, scope, seqs: appended.map((e) => e.seq) };
  },

  // --- push configs ------------------------------------------------------------------------------

  putPushConfig(
    c: SqlConn,
    _notices: ChangeNotice[],
    p: PushConfigRecord,
    authentication: string | null,
  ): void {
    c.q(
      `INSERT INTO push_configs (task_id, id, owner, tenant, url, token, authentication, created_at, protocol_version)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (task_id, id) DO UPDATE SET owner = excluded.owner, tenant = excluded.tenant, url = excluded.url,
         token = excluded.token, authentication = excluded.authentication, created_at = excluded.created_at,
         protocol_version = excluded.protocol_version`,
    ).run(
      p.taskId,
      p.id,
      p.owner,
      p.tenant,
      p.url,
      p.token,
      authentication,
      p.createdAt,
      p.protocolVersion ?? '1.0',
    );
  },

  deletePushConfig(c: SqlConn, _notices: ChangeNotice[], taskId: string, id: string): void {
    c.q('DELETE FROM push_configs WHERE task_id = ? AND id = ?').run(taskId, id);
  },

  // --- push outbox -------------------------------------------------------------------------------

  claimOutbox(
    c: SqlConn,
    _notices: ChangeNotice[],
    owner: string,
    now: number,
    leaseMs: number,
    limit: number,
  ): OutboxRow[] {
    // Runs inside the batch's BEGIN IMMEDIATE, so no other writer can claim between SELECT and UPDATE.
    const claimed = c
      .q(
        `UPDATE outbox SET status = 'leased', lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1
         WHERE id IN (
           SELECT c.id FROM outbox c
           WHERE ((c.status = 'pending' AND c.next_attempt_at <= ?) OR (c.status = 'leased' AND c.lease_expires_at <= ?))
             AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.task_id = c.task_id AND p.config_id = c.config_id
                             AND p.status IN ${OPEN_STATES} AND p.id < c.id)
           ORDER BY c.id LIMIT ?)
         RETURNING *`,
      )
      .all(owner, now + leaseMs, now, now, Math.max(0, limit)) as rows.OutboxDbRow[];
    return claimed.map(rows.toOutbox).sort((a, b) => a.id - b.id);
  },

  completeOutbox(c: SqlConn, _notices: ChangeNotice[], id: number, owner: string, now: number): void {
    c.q(
      `UPDATE outbox SET status = 'delivered', delivered_at = ?, lease_owner = NULL, lease_expires_at = NULL
       WHERE id = ? AND status = 'leased' AND lease_owner = ?`,
    ).run(now, id, owner);
  },

  failOutbox(
    c: SqlConn,
    _notices: ChangeNotice[],
    id: number,
    owner: string,
    error: string,
    nextAttemptAt: number | null,
  ): void {
    c.q(
      `UPDATE outbox SET status = ?, next_attempt_at = COALESCE(?, next_attempt_at), last_error = ?,
         lease_owner = NULL, lease_expires_at = NULL
       WHERE id = ? AND status = 'leased' AND lease_owner = ?`,
    ).run(nextAttemptAt === null ? 'dead' : 'pending', nextAttemptAt, error, id, owner);
  },

  requeueDeadOutbox(c: SqlConn, _notices: ChangeNotice[], now: number, taskId: string | null): number {
    return c
      .q(
        `UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = ?
         WHERE status = 'dead' AND (? IS NULL OR task_id = ?)`,
      )
      .run(now, taskId, taskId).changes;
  },

  // --- envelopes ---------------------------------------------------------------------------------

  createEnvelope(
    c: SqlConn,
    notices: ChangeNotice[],
    row: EnvelopeRow,
    events: EnvelopeEventRow[],
    guard: CreateGuard | undefined,
    workflowId: string | null,
  ): { created: true; seqs: number[] } | { created: false; envelope: Envelope } {
    const [tenant, idempotencyKey] = row;
    if (idempotencyKey !== null) {
      const existing = findEnvelopeByKey(c, tenant, idempotencyKey);
      if (existing) return { created: false, envelope: existing };
    }
    // Inside the write transaction (one writer at a time): no other create of this workflow lands between
    // the count and the insert.
    if (guard?.workflowTaskLimit !== undefined && workflowId !== null) {
      const { n } = c
        .q('SELECT COUNT(*) AS n FROM envelopes WHERE tenant = ? AND workflow_id = ?')
        .get(tenant, workflowId) as { n: number };
      if (n >= guard.workflowTaskLimit) throw workflowTaskLimitError(workflowId, guard.workflowTaskLimit);
    }
    c.q(
      `INSERT INTO envelopes (tenant, idempotency_key, connector, target, remote_id, state, updated_at, version,
         retention_until, doc, id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(row);
    const seqs = appendEnvelopeEvents(c, events);
    notices.push(...envelopeNotices(row[ENVELOPE_ID], seqs));
    return { created: true, seqs: seqs.map((e) => e.seq) };
  },

  /** `row` carries the new version; the UPDATE checks the one before it. */
  updateEnvelope(
    c: SqlConn,
    notices: ChangeNotice[],
    row: EnvelopeRow,
    expectedVersion: number,
    events: EnvelopeEventRow[],
  ): number[] {
    const id = row[ENVELOPE_ID];
    const result = c
      .q(
        `UPDATE envelopes SET tenant = ?, idempotency_key = ?, connector = ?, target = ?, remote_id = ?, state = ?,
           updated_at = ?, version = ?, retention_until = ?, doc = ? WHERE id = ? AND version = ?`,
      )
      .run(...row, expectedVersion);
    if (result.changes === 0) {
      const exists = c.q('SELECT 1 FROM envelopes WHERE id = ?').get(id) !== undefined;
      throw exists ? new VersionConflictError(`envelope ${id}`) : notFound(`envelope ${id}`);
    }
    const appended = appendEnvelopeEvents(c, events);
    notices.push(...envelopeNotices(id, appended));
    return appended.map((e) => e.seq);
  },

  putWorkflowBudget(
    c: SqlConn,
    _notices: ChangeNotice[],
    record: WorkflowBudgetRecord,
    expectedVersion: number | null,
  ): WorkflowBudgetRecord {
    const stored = { ...record, version: (expectedVersion ?? 0) + 1 };
    const doc = JSON.stringify(stored);
    const changes =
      expectedVersion === null
        ? c
            .q(
              `INSERT INTO workflow_budgets (tenant, workflow_id, version, updated_at, doc) VALUES (?, ?, 1, ?, ?)
               ON CONFLICT DO NOTHING`,
            )
            .run(record.tenant, record.workflowId, record.updatedAt, doc).changes
        : c
            .q(
              `UPDATE workflow_budgets SET version = ?, updated_at = ?, doc = ?
               WHERE tenant = ? AND workflow_id = ? AND version = ?`,
            )
            .run(stored.version, record.updatedAt, doc, record.tenant, record.workflowId, expectedVersion)
            .changes;
    if (changes === 0) throw new VersionConflictError(`workflow budget ${record.workflowId}`);
    return stored;
  },

  // --- deliveries, leases, settings --------------------------------------------------------------

  recordDelivery(c: SqlConn, _notices: ChangeNotice[], d: InboundDelivery): boolean {
    return (
      c
        .q(
          `INSERT INTO deliveries (source, delivery_id, envelope_id, received_at) VALUES (?, ?, ?, ?)
           ON CONFLICT DO NOTHING`,
        )
        .run(d.source, d.deliveryId, d.envelopeId, d.receivedAt).changes === 1
    );
  },

  acquireLease(
    c: SqlConn,
    _notices: ChangeNotice[],
    name: string,
    owner: string,
    now: number,
    ttlMs: number,
  ): boolean {
    return (
      c
        .q(
          `INSERT INTO leases (name, owner, expires_at) VALUES (?, ?, ?)
           ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
           WHERE leases.owner = excluded.owner OR leases.expires_at <= ?`,
        )
        .run(name, owner, now + ttlMs, now).changes === 1
    );
  },

  acquireLeases(
    c: SqlConn,
    notices: ChangeNotice[],
    names: string[],
    owner: string,
    now: number,
    ttlMs: number,
  ): string[] {
    return names.filter((name) => WRITES.acquireLease(c, notices, name, owner, now, ttlMs));
  },

  releaseLease(c: SqlConn, _notices: ChangeNotice[], name: string, owner: string): void {
    c.q('DELETE FROM leases WHERE name = ? AND owner = ?').run(name, owner);
  },

  putSettingIfAbsent(c: SqlConn, _notices: ChangeNotice[], key: string, value: string): string {
    c.q('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT DO NOTHING').run(key, value);
    return (c.q('SELECT value FROM settings WHERE key = ?').get(key) as { value: string }).value;
  },

  // --- API keys ----------------------------------------------------------------------------------

  putApiKeyIfAbsent(c: SqlConn, _notices: ChangeNotice[], k: ApiKeyRecord): ApiKeyRecord {
    c.q(
      `INSERT INTO api_keys (id, tenant, hash, read_only, name, created_at, revoked_at)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    ).run(k.id, k.tenant, k.hash, k.readOnly ? 1 : 0, k.name, k.createdAt, k.revokedAt);
    const row = (c.q('SELECT * FROM api_keys WHERE hash = ?').get(k.hash) ??
      c.q('SELECT * FROM api_keys WHERE id = ?').get(k.id)) as rows.ApiKeyRow;
    return rows.toApiKey(row);
  },

  revokeApiKey(c: SqlConn, _notices: ChangeNotice[], id: string, now: number): ApiKeyRecord | undefined {
    c.q('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(now, id);
    const row = c.q('SELECT * FROM api_keys WHERE id = ?').get(id) as rows.ApiKeyRow | undefined;
    return row ? rows.toApiKey(row) : undefined;
  },
};

export type Writes = typeof WRITES;
export type WriteName = keyof Writes;
/** An op's arguments after the connection and the notices. */
export type WriteArgs<K extends WriteName> = Writes[K] extends (
  c: SqlConn,
  notices: ChangeNotice[],
  ...args: infer A
) => unknown
  ? A
  : never;
export type WriteResult<K extends WriteName> = ReturnType<Writes[K]>;

/** Runs op `name` (the one dispatch both threads use). */
export function runWrite(c: SqlConn, notices: ChangeNotice[], name: WriteName, args: unknown[]): unknown {
  return (WRITES[name] as (c: SqlConn, notices: ChangeNotice[], ...args: unknown[]) => unknown)(
    c,
    notices,
    ...args,
  );
}

function appendTaskEvents(c: SqlConn, events: EventRow[]): Array<{ seq: number }> {
  const insert = c.q('INSERT INTO agent_task_events (task_id, at, payload) VALUES (?, ?, ?)');
  return events.map((e) => ({ seq: Number(insert.run(e).lastInsertRowid) }));
}

function appendOutbox(c: SqlConn, outbox: OutboxInsert[], createdAt: number): void {
  const insert = c.q(
    `INSERT INTO outbox (task_id, config_id, delivery_id, payload, status, attempts, next_attempt_at, created_at)
     VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)`,
  );
  for (const r of outbox) insert.run(...r, createdAt);
}

function appendEnvelopeEvents(c: SqlConn, events: EnvelopeEventRow[]): Array<{ seq: number }> {
  const insert = c.q(
    'INSERT INTO envelope_events (envelope_id, tenant, type, at, data) VALUES (?, ?, ?, ?, ?)',
  );
  return events.map((e) => ({ seq: Number(insert.run(e).lastInsertRowid) }));
}
