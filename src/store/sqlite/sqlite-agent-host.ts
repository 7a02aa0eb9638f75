import type Database from 'better-sqlite3';
import { VersionConflictError, notFound } from '../../core/errors.ts';
import { snapshot } from '../snapshot.ts';
import * as rows from '../sql-rows.ts';
import { taskNotices } from '../change-hub.ts';
import type {
  AgentTaskEvent,
  AgentTaskPage,
  AgentTaskQuery,
  AgentTaskRecord,
  NewAgentTaskEvent,
  NewOutboxRow,
  OutboxRow,
  OutboxStatus,
  PushConfigRecord,
} from '../store.ts';
import {
  TERMINAL_AGENT_TASK_STATES,
  agentTaskPageSize,
  decodeCursor,
  encodeCursor,
  eventLimit,
  outboxLimit,
} from '../store-query.ts';
import { where } from '../sql-where.ts';
import type { WriteOp } from './write-batcher.ts';

const OPEN_STATES = `('pending', 'leased')`;

/**
 * The agent-host half of the SQLite Store (tasks, their events, push configs, the push outbox), split
 * from sqlite-store.ts to keep files readable. It needs only a statement cache and the write path.
 */
export abstract class SqliteAgentHost {
  /** A cached prepared statement. */
  protected abstract q(sql: string): Database.Statement;
  /** Runs `op` inside a (group-committed) BEGIN IMMEDIATE transaction. */
  protected abstract write<T>(op: WriteOp<T>): Promise<T>;
  /** A value just read, once every commit it may include is durable (write-batcher.ts). */
  protected abstract visible<T>(value: T): Promise<T>;

  // --- agent tasks -----------------------------------------------------------------------------

  createAgentTask(
    task: AgentTaskRecord,
    messageId: string,
    events: NewAgentTaskEvent[],
    outbox: NewOutboxRow[],
  ): Promise<{ created: boolean; task: AgentTaskRecord }> {
    // The JSON text is the copy taken at the call (what structuredClone gave before, at a fifth of the
    // cost: 11 µs vs 2 µs for a host task record here). The returned record shares the caller's
    // documents (Store contract): parsing them back cost two JSON.parse per write.
    const row = serializeTask(task, 1);
    const created: AgentTaskRecord = { ...task, version: 1 };
    const rowEvents = events.map(serializeEvent);
    const rowOutbox = outbox.map(serializeOutbox);
    return this.write((notices) => {
      // The (owner, messageId) row goes first: a duplicate is found by the insert itself, and the SELECT
      // runs only then (one statement fewer per new task).
      const claimed = this.q(
        'INSERT INTO agent_task_messages (owner, message_id, task_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
      ).run(row.owner, messageId, row.id);
      if (claimed.changes === 0) {
        return { created: false, task: this.readTask(this.taskIdForMessage(row.owner, messageId)!)! };
      }
      this.q(
        `INSERT INTO agent_tasks (owner, context_id, state, status_timestamp, created_at, updated_at, version, task,
           executor_state, id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(row.owner, ...taskColumns(row), row.id);
      notices.push(...taskNotices(row.id, this.appendTaskEvents(rowEvents)));
      this.appendOutbox(rowOutbox, row.updatedAt);
      return { created: true, task: created };
    });
  }

  async getAgentTask(id: string, owner?: string): Promise<AgentTaskRecord | undefined> {
    const task = this.readTask(id);
    return this.visible(task && (owner === undefined || task.owner === owner) ? task : undefined);
  }

  async findAgentTaskByMessageId(owner: string, messageId: string): Promise<string | undefined> {
    return this.visible(this.taskIdForMessage(owner, messageId));
  }

  updateAgentTask(
    next: AgentTaskRecord,
    expectedVersion: number,
    events: NewAgentTaskEvent[],
    outbox: NewOutboxRow[],
    messageId?: string,
  ): Promise<{ duplicate: boolean; task: AgentTaskRecord; events: AgentTaskEvent[] }> {
    const row = serializeTask(next, expectedVersion + 1);
    const written: AgentTaskRecord = { ...next, version: expectedVersion + 1 };
    const rowEvents = events.map(serializeEvent);
    const payloads = events.map((e) => e.payload);
    const rowOutbox = outbox.map(serializeOutbox);
    return this.write((notices) => {
      // Duplicate before version: a retried message must read as "already done", not as a conflict.
      if (messageId !== undefined) {
        const found = this.q('SELECT owner FROM agent_tasks WHERE id = ?').get(row.id) as
          { owner: string } | undefined;
        if (!found) throw notFound(`agent task ${row.id}`);
        if (this.taskIdForMessage(found.owner, messageId) !== undefined) {
          return { duplicate: true, task: this.readTask(row.id)!, events: [] };
        }
      }
      // The owner never changes: it is not SET, and RETURNING gives the stored one (no read of the whole
      // record first, which was a SELECT plus two JSON.parse per write).
      const updated = this.q(
        `UPDATE agent_tasks SET context_id = ?, state = ?, status_timestamp = ?, created_at = ?, updated_at = ?,
           version = ?, task = ?, executor_state = ? WHERE id = ? AND version = ? RETURNING owner`,
      ).get(...taskColumns(row), row.id, expectedVersion) as { owner: string } | undefined;
      if (!updated) {
        const exists = this.q('SELECT 1 FROM agent_tasks WHERE id = ?').get(row.id) !== undefined;
        throw exists ? new VersionConflictError(`agent task ${row.id}`) : notFound(`agent task ${row.id}`);
      }
      const { owner } = updated;
      if (messageId !== undefined) this.recordMessage(owner, messageId, row.id);
      const appended = this.appendTaskEvents(rowEvents);
      this.appendOutbox(rowOutbox, row.updatedAt);
      notices.push(...taskNotices(row.id, appended));
      // The caller's documents, not parsed back (Store contract); nothing captured is changed (WriteOp).
      return {
        duplicate: false,
        task: owner === written.owner ? written : { ...written, owner },
        events: appended.map((e, i) => ({ taskId: e.taskId, at: e.at, payload: payloads[i]!, seq: e.seq })),
      };
    });
  }

  async listAgentTasks(query: AgentTaskQuery): Promise<AgentTaskPage> {
    const pageSize = agentTaskPageSize(query.pageSize);
    const keyset = decodeCursor(query.cursor);
    const w = where('sqlite');
    w.add('owner = $?', query.owner);
    if (query.contextId !== undefined) w.add('context_id = $?', query.contextId);
    if (query.state !== undefined) w.add('state = $?', query.state);
    if (query.statusTimestampAfter !== undefined) w.add('status_timestamp >= $?', query.statusTimestampAfter);
    const total = (
      this.q(`SELECT COUNT(*) AS n FROM agent_tasks ${w.sql()}`).get(...w.params) as { n: number }
    ).n;
    if (keyset) w.add('(status_timestamp, id) < ($?, $?)', keyset.at, keyset.id);
    const sql = `SELECT * FROM agent_tasks ${w.sql()} ORDER BY status_timestamp DESC, id DESC LIMIT ?`;
    const found = (this.q(sql).all(...w.params, pageSize + 1) as rows.AgentTaskRow[]).map(rows.toAgentTask);
    const tasks = found.slice(0, pageSize);
    const last = tasks[tasks.length - 1];
    const nextCursor =
      found.length > pageSize && last ? encodeCursor(last.statusTimestamp, last.id) : undefined;
    return this.visible({ tasks, nextCursor, totalSize: total });
  }

  async listActiveAgentTasks(): Promise<AgentTaskRecord[]> {
    const terminal = TERMINAL_AGENT_TASK_STATES.map(() => '?').join(', ');
    const found = this.q(`SELECT * FROM agent_tasks WHERE state NOT IN (${terminal}) ORDER BY id`).all(
      ...TERMINAL_AGENT_TASK_STATES,
    ) as rows.AgentTaskRow[];
    return this.visible(found.map(rows.toAgentTask));
  }

  async listAgentTaskEvents(taskId: string, afterSeq: number, limit?: number): Promise<AgentTaskEvent[]> {
    const found = this.q(
      'SELECT * FROM agent_task_events WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?',
    ).all(taskId, afterSeq, eventLimit(limit)) as rows.TaskEventRow[];
    return this.visible(found.map(rows.toTaskEvent));
  }

  // --- push configs ----------------------------------------------------------------------------

  putPushConfig(c: PushConfigRecord): Promise<PushConfigRecord> {
    c = snapshot(c);
    return this.write(() => {
      this.q(
        `INSERT INTO push_configs (task_id, id, owner, url, token, authentication, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (task_id, id) DO UPDATE SET owner = excluded.owner, url = excluded.url, token = excluded.token,
           authentication = excluded.authentication, created_at = excluded.created_at`,
      ).run(c.taskId, c.id, c.owner, c.url, c.token, jsonOrNull(c.authentication), c.createdAt);
      return structuredClone(c);
    });
  }

  async getPushConfig(taskId: string, id: string): Promise<PushConfigRecord | undefined> {
    const row = this.q('SELECT * FROM push_configs WHERE task_id = ? AND id = ?').get(taskId, id);
    return this.visible(row === undefined ? undefined : rows.toPushConfig(row as rows.PushConfigRow));
  }

  async listPushConfigs(taskId: string): Promise<PushConfigRecord[]> {
    const found = this.q('SELECT * FROM push_configs WHERE task_id = ? ORDER BY created_at, id').all(taskId);
    return this.visible((found as rows.PushConfigRow[]).map(rows.toPushConfig));
  }

  deletePushConfig(taskId: string, id: string): Promise<void> {
    return this.write(
      () => void this.q('DELETE FROM push_configs WHERE task_id = ? AND id = ?').run(taskId, id),
    );
  }

  // --- push outbox -----------------------------------------------------------------------------

  claimOutbox(owner: string, now: number, leaseMs: number, limit: number): Promise<OutboxRow[]> {
    // Runs inside the batch's BEGIN IMMEDIATE, so no other writer can claim between SELECT and UPDATE.
    return this.write(() => {
      const claimed = this.q(
        `UPDATE outbox SET status = 'leased', lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1
         WHERE id IN (
           SELECT c.id FROM outbox c
           WHERE ((c.status = 'pending' AND c.next_attempt_at <= ?) OR (c.status = 'leased' AND c.lease_expires_at <= ?))
             AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.task_id = c.task_id AND p.config_id = c.config_id
                             AND p.status IN ${OPEN_STATES} AND p.id < c.id)
           ORDER BY c.id LIMIT ?)
         RETURNING *`,
      ).all(owner, now + leaseMs, now, now, Math.max(0, limit)) as rows.OutboxDbRow[];
      return claimed.map(rows.toOutbox).sort((a, b) => a.id - b.id);
    });
  }

  completeOutbox(id: number, owner: string, now: number): Promise<void> {
    return this.write(() => {
      this.q(
        `UPDATE outbox SET status = 'delivered', delivered_at = ?, lease_owner = NULL, lease_expires_at = NULL
         WHERE id = ? AND status = 'leased' AND lease_owner = ?`,
      ).run(now, id, owner);
    });
  }

  failOutbox(id: number, owner: string, error: string, nextAttemptAt: number | null): Promise<void> {
    return this.write(() => {
      this.q(
        `UPDATE outbox SET status = ?, next_attempt_at = COALESCE(?, next_attempt_at), last_error = ?,
           lease_owner = NULL, lease_expires_at = NULL
         WHERE id = ? AND status = 'leased' AND lease_owner = ?`,
      ).run(nextAttemptAt === null ? 'dead' : 'pending', nextAttemptAt, error, id, owner);
    });
  }

  requeueDeadOutbox(now: number, taskId?: string): Promise<number> {
    return this.write(
      () =>
        this.q(
          `UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = ?
           WHERE status = 'dead' AND (? IS NULL OR task_id = ?)`,
        ).run(now, taskId ?? null, taskId ?? null).changes,
    );
  }

  async listOutbox(query: { status?: OutboxStatus; taskId?: string; limit?: number }): Promise<OutboxRow[]> {
    const w = where('sqlite');
    if (query.status !== undefined) w.add('status = $?', query.status);
    if (query.taskId !== undefined) w.add('task_id = $?', query.taskId);
    const sql = `SELECT * FROM outbox ${w.sql()} ORDER BY id LIMIT ?`;
    return this.visible(
      (this.q(sql).all(...w.params, outboxLimit(query.limit)) as rows.OutboxDbRow[]).map(rows.toOutbox),
    );
  }

  protected readTask(id: string): AgentTaskRecord | undefined {
    const row = this.q('SELECT * FROM agent_tasks WHERE id = ?').get(id);
    return row === undefined ? undefined : rows.toAgentTask(row as rows.AgentTaskRow);
  }

  protected taskIdForMessage(owner: string, messageId: string): string | undefined {
    const row = this.q('SELECT task_id FROM agent_task_messages WHERE owner = ? AND message_id = ?').get(
      owner,
      messageId,
    );
    return (row as { task_id: string } | undefined)?.task_id;
  }

  private recordMessage(owner: string, messageId: string, taskId: string): void {
    this.q('INSERT INTO agent_task_messages (owner, message_id, task_id) VALUES (?, ?, ?)').run(
      owner,
      messageId,
      taskId,
    );
  }

  private appendTaskEvents(events: EventRow[]): StoredEventRow[] {
    const insert = this.q('INSERT INTO agent_task_events (task_id, at, payload) VALUES (?, ?, ?)');
    return events.map((e) => ({ ...e, seq: Number(insert.run(e.taskId, e.at, e.payload).lastInsertRowid) }));
  }

  private appendOutbox(outbox: OutboxInsert[], createdAt: number): void {
    const insert = this.q(
      `INSERT INTO outbox (task_id, config_id, delivery_id, payload, status, attempts, next_attempt_at, created_at)
       VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)`,
    );
    for (const r of outbox)
      insert.run(r.taskId, r.configId, r.deliveryId, r.payload, r.nextAttemptAt, createdAt);
  }
}

/** A task record as the row it is stored as: JSON documents as text, taken at the call. */
interface TaskRow {
  id: string;
  owner: string;
  contextId: string;
  state: string;
  statusTimestamp: number;
  createdAt: number;
  updatedAt: number;
  version: number;
  task: string;
  executorState: string | null;
}

interface EventRow {
  taskId: string;
  at: number;
  payload: string;
}

interface StoredEventRow extends EventRow {
  seq: number;
}

type OutboxInsert = Omit<NewOutboxRow, 'payload'> & { payload: string };

function serializeTask(t: AgentTaskRecord, version: number): TaskRow {
  return {
    id: t.id,
    owner: t.owner,
    contextId: t.contextId,
    state: t.state,
    statusTimestamp: t.statusTimestamp,
    createdAt: t.createdAt,
    updatedAt: t.updatedAt,
    version,
    task: JSON.stringify(t.task),
    executorState: jsonOrNull(t.executorState),
  };
}

function serializeEvent(e: NewAgentTaskEvent): EventRow {
  return { taskId: e.taskId, at: e.at, payload: JSON.stringify(e.payload) };
}

function serializeOutbox(r: NewOutboxRow): OutboxInsert {
  return { ...r, payload: JSON.stringify(r.payload) };
}

/** The columns after owner, in the order the INSERT and UPDATE name them. */
function taskColumns(t: TaskRow): unknown[] {
  return [
    t.contextId,
    t.state,
    t.statusTimestamp,
    t.createdAt,
    t.updatedAt,
    t.version,
    t.task,
    t.executorState,
  ];
}

function jsonOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}
