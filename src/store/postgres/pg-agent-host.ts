import { snapshot } from '../snapshot.ts';
import type pg from 'pg';
import { VersionConflictError, notFound } from '../../core/errors.ts';
import { taskNotices } from '../change-hub.ts';
import * as rows from '../sql-rows.ts';
import { listCountReads } from '../list-count-sql.ts';
import { where } from '../sql-where.ts';
import type {
  AgentScope,
  AgentTaskEvent,
  AgentTaskPage,
  AgentTaskPurge,
  AgentTaskQuery,
  AgentTaskRecord,
  ChangeNotice,
  NewAgentTaskEvent,
  NewOutboxRow,
  OutboxRow,
  OutboxStatus,
  PushConfigRecord,
} from '../store.ts';
import {
  TERMINAL_AGENT_TASK_STATES,
  agentTaskPageSize,
  countListed,
  decodeCursor,
  encodeCursor,
  eventLimit,
  inScope,
  outboxLimit,
} from '../store-query.ts';
import { purgeAgentTasks } from './pg-purge.ts';
import { claimOutboxSql, insertOutbox, insertTaskEvents } from './pg-sql.ts';

type Client = pg.PoolClient;

/**
 * The agent-host half of the PostgreSQL Store (tasks, their events, push configs, the push outbox), split
 * from pg-store.ts to keep files readable. It needs only the pool query path and the transaction path.
 */
export abstract class PgAgentHost {
  protected abstract readonly pool: pg.Pool;
  /** Runs one statement on the pool, translating errors. */
  protected abstract query<R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<R[]>;
  protected abstract run<R extends pg.QueryResultRow>(
    sql: string,
    params: unknown[],
  ): Promise<pg.QueryResult<R>>;
  /** One transaction; notices pushed by `fn` are NOTIFYed inside it and emitted locally after COMMIT. */
  protected abstract tx<T>(fn: (client: Client, notices: ChangeNotice[]) => Promise<T>): Promise<T>;

  // --- agent tasks -----------------------------------------------------------------------------

  purgeAgentTasks(finishedBefore: number, limit: number): Promise<AgentTaskPurge> {
    return purgeAgentTasks((sql, params) => this.query(sql, params), finishedBefore, limit);
  }

  createAgentTask(
    task: AgentTaskRecord,
    messageId: string,
    events: NewAgentTaskEvent[],
    outbox: NewOutboxRow[],
  ): Promise<{ created: boolean; task: AgentTaskRecord }> {
    // The JSON text is the copy taken at the call (Store rule); the created record shares the caller's
    // documents (Store contract) instead of a structuredClone on the way in and another on the way out.
    const created: AgentTaskRecord = { ...task, version: 1 };
    const columns = rows.agentTaskColumns(created);
    const rowEvents = events.map(rows.taskEventColumns);
    const rowOutbox = outbox.map(rows.outboxColumns);
    return this.tx(async (c, notices) => {
      // The (owner, tenant, messageId) row goes first: a concurrent duplicate waits on it, then sees ours.
      const claimed = await this.recordMessage(c, created, messageId, created.id, true);
      if (!claimed) {
        const existing = await c.query<{ task_id: string }>(
          'SELECT task_id FROM agent_task_messages WHERE owner = $1 AND tenant = $2 AND message_id = $3',
          [created.owner, created.tenant, messageId],
        );
        return { created: false, task: (await this.readTask(c, existing.rows[0]!.task_id))! };
      }
      await c.query(
        `INSERT INTO agent_tasks (owner, tenant, context_id, state, status_timestamp, created_at, updated_at, version,
           task, executor_state, id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
        [...columns, created.id],
      );
      const seqs = await insertTaskEvents(c, rowEvents);
      notices.push(
        ...taskNotices(
          created.id,
          seqs.map((seq) => ({ seq })),
        ),
      );
      await insertOutbox(c, rowOutbox, created.updatedAt);
      return { created: true, task: created };
    });
  }

  async getAgentTask(id: string, scope?: AgentScope): Promise<AgentTaskRecord | undefined> {
    const task = await this.readTask(this.pool, id);
    return task && (scope === undefined || inScope(task, scope)) ? task : undefined;
  }

  async acknowledgeAgentTask(id: string, scope: AgentScope): Promise<void> {
    // One statement that writes only the first time (GetTask acknowledges on every call).
    await this.query(
      `INSERT INTO agent_task_acks (task_id) SELECT id FROM agent_tasks
       WHERE id = $1 AND owner = $2 AND tenant = $3 AND NOT EXISTS (SELECT 1 FROM agent_task_acks WHERE task_id = $1)
       ON CONFLICT DO NOTHING`,
      [id, scope.owner, scope.tenant],
    );
  }

  async findAgentTaskByMessageId(scope: AgentScope, messageId: string): Promise<string | undefined> {
    const sql =
      'SELECT task_id FROM agent_task_messages WHERE owner = $1 AND tenant = $2 AND message_id = $3';
    return (await this.query<{ task_id: string }>(sql, [scope.owner, scope.tenant, messageId]))[0]?.task_id;
  }

  async putDirectReply(
    scope: AgentScope,
    messageId: string,
    reply: Record<string, unknown>,
    now: number,
  ): Promise<Record<string, unknown>> {
    const params = [scope.owner, scope.tenant, messageId];
    const inserted = await this.query<{ reply: Record<string, unknown> }>(
      `INSERT INTO agent_direct_replies (owner, tenant, message_id, reply, created_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT DO NOTHING RETURNING reply`,
      [...params, JSON.stringify(reply), now],
    );
    // A conflict waited for the other insert to commit; this second statement sees it.
    return inserted[0]?.reply ?? (await this.getDirectReply(scope, messageId))!;
  }

  async getDirectReply(scope: AgentScope, messageId: string): Promise<Record<string, unknown> | undefined> {
    const sql = 'SELECT reply FROM agent_direct_replies WHERE owner = $1 AND tenant = $2 AND message_id = $3';
    return (
      await this.query<{ reply: Record<string, unknown> }>(sql, [scope.owner, scope.tenant, messageId])
    )[0]?.reply;
  }

  updateAgentTask(
    next: AgentTaskRecord,
    expectedVersion: number,
    events: NewAgentTaskEvent[],
    outbox: NewOutboxRow[],
    messageId?: string,
  ): Promise<{ duplicate: boolean; task: AgentTaskRecord; events: AgentTaskEvent[] }> {
    // As createAgentTask: text taken at the call, the result shares the caller's documents.
    const written: AgentTaskRecord = { ...next, version: expectedVersion + 1 };
    const columns = rows.agentTaskColumns(written).slice(2); // all but owner and tenant: the stored ones stay
    const rowEvents = events.map(rows.taskEventColumns);
    const rowOutbox = outbox.map(rows.outboxColumns);
    return this.tx(async (c, notices) => {
      const current = await this.readTask(c, next.id);
      if (!current) throw notFound(`agent task ${next.id}`);
      // Duplicate before version: a retried message must read as "already done", not as a conflict.
      if (messageId !== undefined && !(await this.recordMessage(c, current, messageId, next.id, false))) {
        return { duplicate: true, task: (await this.readTask(c, next.id))!, events: [] };
      }
      const stored = { ...written, owner: current.owner, tenant: current.tenant };
      // The row lock this UPDATE takes also orders this task's events: no two writers of one task can
      // interleave their event inserts, so per-task replay (listAgentTaskEvents) never skips a seq.
      const updated = await c.query(
        `UPDATE agent_tasks SET context_id = $1, state = $2, status_timestamp = $3, created_at = $4,
           updated_at = $5, version = $6, task = $7, executor_state = $8 WHERE id = $9 AND version = $10`,
        [...columns, next.id, expectedVersion],
      );
      if (updated.rowCount === 0) throw new VersionConflictError(`agent task ${next.id}`);
      const seqs = await insertTaskEvents(c, rowEvents);
      await insertOutbox(c, rowOutbox, stored.updatedAt);
      const appended = events.map((e, i) => ({
        taskId: e.taskId,
        at: e.at,
        payload: e.payload,
        seq: seqs[i]!,
      }));
      notices.push(...taskNotices(stored.id, appended));
      return { duplicate: false, task: stored, events: appended };
    });
  }

  async listAgentTasks(query: AgentTaskQuery): Promise<AgentTaskPage> {
    const pageSize = agentTaskPageSize(query.pageSize);
    const keyset = decodeCursor(query.cursor);
    const w = where('pg');
    w.add('owner = $?', query.owner);
    w.add('tenant = $?', query.tenant);
    if (query.contextId !== undefined) w.add('context_id = $?', query.contextId);
    if (query.state !== undefined) w.add('state = $?', query.state);
    if (query.statusTimestampAfter !== undefined) w.add('status_timestamp >= $?', query.statusTimestampAfter);
    const { total } = await countListed(
      query,
      listCountReads(
        'pg',
        query,
        async (sql, params) => (await this.query<Record<string, unknown>>(sql, params))[0],
      ),
    );
    if (keyset) w.add('(status_timestamp, id) < ($?, $?)', keyset.at, keyset.id);
    const sql = `SELECT * FROM agent_tasks ${w.sql()} ORDER BY status_timestamp DESC, id DESC LIMIT ${pageSize + 1}`;
    const found = (await this.query<rows.AgentTaskRow>(sql, w.params)).map(rows.toAgentTask);
    const tasks = found.slice(0, pageSize);
    const last = tasks[tasks.length - 1];
    const nextCursor =
      found.length > pageSize && last ? encodeCursor(last.statusTimestamp, last.id) : undefined;
    return { tasks, nextCursor, totalSize: total };
  }

  async listActiveAgentTasks(): Promise<AgentTaskRecord[]> {
    const sql = 'SELECT * FROM agent_tasks WHERE NOT (state = ANY($1::text[])) ORDER BY id';
    return (await this.query<rows.AgentTaskRow>(sql, [TERMINAL_AGENT_TASK_STATES])).map(rows.toAgentTask);
  }

  async listAgentTaskEvents(taskId: string, afterSeq: number, limit?: number): Promise<AgentTaskEvent[]> {
    const sql = `SELECT * FROM agent_task_events WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT ${eventLimit(limit)}`;
    return (await this.query<rows.TaskEventRow>(sql, [taskId, afterSeq])).map(rows.toTaskEvent);
  }

  // --- push configs ----------------------------------------------------------------------------

  async putPushConfig(c: PushConfigRecord): Promise<PushConfigRecord> {
    await this.run(
      `INSERT INTO push_configs (task_id, id, owner, tenant, url, token, authentication, created_at, protocol_version)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (task_id, id) DO UPDATE SET owner = excluded.owner, tenant = excluded.tenant, url = excluded.url,
         token = excluded.token, authentication = excluded.authentication, created_at = excluded.created_at,
         protocol_version = excluded.protocol_version`,
      [
        c.taskId,
        c.id,
        c.owner,
        c.tenant,
        c.url,
        c.token,
        rows.jsonOrNull(c.authentication),
        c.createdAt,
        c.protocolVersion ?? '1.0',
      ],
    );
    return snapshot(c);
  }

  async getPushConfig(taskId: string, id: string): Promise<PushConfigRecord | undefined> {
    const sql = 'SELECT * FROM push_configs WHERE task_id = $1 AND id = $2';
    const found = await this.query<rows.PushConfigRow>(sql, [taskId, id]);
    return found[0] && rows.toPushConfig(found[0]);
  }

  async listPushConfigs(taskId: string): Promise<PushConfigRecord[]> {
    const sql = 'SELECT * FROM push_configs WHERE task_id = $1 ORDER BY created_at, id';
    return (await this.query<rows.PushConfigRow>(sql, [taskId])).map(rows.toPushConfig);
  }

  async deletePushConfig(taskId: string, id: string): Promise<void> {
    await this.run('DELETE FROM push_configs WHERE task_id = $1 AND id = $2', [taskId, id]);
  }

  // --- push outbox -----------------------------------------------------------------------------

  async claimOutbox(owner: string, now: number, leaseMs: number, limit: number): Promise<OutboxRow[]> {
    const found = await this.query<rows.OutboxDbRow>(claimOutboxSql, [
      owner,
      now + leaseMs,
      now,
      Math.max(0, limit),
    ]);
    return found.map(rows.toOutbox).sort((a, b) => a.id - b.id);
  }

  async completeOutbox(id: number, owner: string, now: number): Promise<void> {
    await this.run(
      `UPDATE outbox SET status = 'delivered', delivered_at = $1, lease_owner = NULL, lease_expires_at = NULL
       WHERE id = $2 AND status = 'leased' AND lease_owner = $3`,
      [now, id, owner],
    );
  }

  async failOutbox(id: number, owner: string, error: string, nextAttemptAt: number | null): Promise<void> {
    await this.run(
      `UPDATE outbox SET status = $1, next_attempt_at = COALESCE($2, next_attempt_at), last_error = $3,
         lease_owner = NULL, lease_expires_at = NULL
       WHERE id = $4 AND status = 'leased' AND lease_owner = $5`,
      [nextAttemptAt === null ? 'dead' : 'pending', nextAttemptAt, error, id, owner],
    );
  }

  async requeueDeadOutbox(now: number, taskId?: string): Promise<number> {
    const result = await this.run(
      `UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = $1
       WHERE status = 'dead' AND ($2::text IS NULL OR task_id = $2)`,
      [now, taskId ?? null],
    );
    return result.rowCount ?? 0;
  }

  async listOutbox(query: { status?: OutboxStatus; taskId?: string; limit?: number }): Promise<OutboxRow[]> {
    const w = where('pg');
    if (query.status !== undefined) w.add('status = $?', query.status);
    if (query.taskId !== undefined) w.add('task_id = $?', query.taskId);
    const sql = `SELECT * FROM outbox ${w.sql()} ORDER BY id LIMIT ${outboxLimit(query.limit)}`;
    return (await this.query<rows.OutboxDbRow>(sql, w.params)).map(rows.toOutbox);
  }

  protected async readTask(c: pg.Pool | Client, id: string): Promise<AgentTaskRecord | undefined> {
    const found = await c.query<rows.AgentTaskRow>('SELECT * FROM agent_tasks WHERE id = $1', [id]);
    return found.rows[0] && rows.toAgentTask(found.rows[0]);
  }

  private async recordMessage(
    c: Client,
    scope: AgentScope,
    messageId: string,
    taskId: string,
    creating: boolean,
  ): Promise<boolean> {
    const result = await c.query(
      `INSERT INTO agent_task_messages (owner, tenant, message_id, task_id) VALUES ($1, $2, $3, $4)
       ${creating ? TAKE_OVER_ACKNOWLEDGED : 'ON CONFLICT DO NOTHING'}`,
      [scope.owner, scope.tenant, messageId, taskId],
    );
    return result.rowCount === 1;
  }
}

/**
 * A creating send's conflict clause: a pair whose task its owner has acknowledged (acknowledgeAgentTask)
 * is taken over, because that resend is a new message, not a retry. A follow-up's pair is never taken
 * over: its task is the one it addressed, acknowledged by then, and its retry must stay a duplicate.
 */
const TAKE_OVER_ACKNOWLEDGED = `ON CONFLICT (owner, tenant, message_id) DO UPDATE SET task_id = excluded.task_id
  WHERE agent_task_messages.task_id IN (SELECT task_id FROM agent_task_acks)`;
