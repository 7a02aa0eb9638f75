import { snapshot } from '../snapshot.ts';
import * as rows from '../sql-rows.ts';
import type {
  AgentScope,
  AgentTaskEvent,
  AgentTaskPage,
  AgentTaskPurge,
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
  countListed,
  decodeCursor,
  encodeCursor,
  eventLimit,
  inScope,
  outboxLimit,
} from '../store-query.ts';
import { listCountReads } from '../list-count-sql.ts';
import { where } from '../sql-where.ts';
import { directReplyText, readTask, taskIdForMessage } from './shared-reads.ts';
import type { SqlConn } from './statement-cache.ts';
import type { WriteArgs, WriteName, WriteResult } from './write-ops.ts';
import { serializeTask } from './write-rows.ts';

/**
 * The agent-host half of the SQLite Store (tasks, their events, push configs, the push outbox), split
 * from sqlite-store.ts to keep files readable. It needs only a statement cache and the write path.
 */
export abstract class SqliteAgentHost {
  /** The store's connection (statements cached): reads run on it, and on the event loop writes too. */
  protected abstract readonly conn: SqlConn;
  /** Runs write `name` (write-ops.ts) inside a (group-committed) BEGIN IMMEDIATE transaction. */
  protected abstract write<K extends WriteName>(name: K, ...args: WriteArgs<K>): Promise<WriteResult<K>>;
  /** A value just read, once every commit it may include is durable (write-batcher.ts). */
  protected abstract visible<T>(value: T): Promise<T>;

  // --- agent tasks -----------------------------------------------------------------------------

  createAgentTask(
    task: AgentTaskRecord,
    messageId: string,
    events: NewAgentTaskEvent[],
    outbox: NewOutboxRow[],
  ): Promise<{ created: boolean; task: AgentTaskRecord }> {
    // The JSON text is the copy taken at the call (what structuredClone gives, at a fraction of the
    // cost: docs/performance.md, "JSON copies instead of structuredClone"). The returned record shares the caller's
    // documents (Store contract): parsing them back cost two JSON.parse per write.
    const row = serializeTask(task, 1);
    const created: AgentTaskRecord = { ...task, version: 1 };
    const rowEvents = events.map(rows.taskEventColumns);
    const rowOutbox = outbox.map(rows.outboxColumns);
    return this.write('createAgentTask', row, messageId, rowEvents, rowOutbox).then((r) =>
      r.created ? { created: true, task: created } : r,
    );
  }

  async getAgentTask(id: string, scope?: AgentScope): Promise<AgentTaskRecord | undefined> {
    const task = readTask(this.conn, id);
    return this.visible(task && (scope === undefined || inScope(task, scope)) ? task : undefined);
  }

  async acknowledgeAgentTask(id: string, scope: AgentScope): Promise<void> {
    // A read first, a write only the first time: GetTask acknowledges on every call.
    const acked = this.conn.q('SELECT 1 FROM agent_task_acks WHERE task_id = ?').get(id) !== undefined;
    if (await this.visible(acked)) return;
    await this.write('acknowledgeAgentTask', id, scope.owner, scope.tenant);
  }

  async findAgentTaskByMessageId(scope: AgentScope, messageId: string): Promise<string | undefined> {
    return this.visible(taskIdForMessage(this.conn, scope, messageId));
  }

  putDirectReply(
    scope: AgentScope,
    messageId: string,
    reply: Record<string, unknown>,
    now: number,
  ): Promise<Record<string, unknown>> {
    const text = JSON.stringify(reply);
    return this.write('putDirectReply', scope.owner, scope.tenant, messageId, text, now).then(
      (stored) => JSON.parse(stored) as Record<string, unknown>,
    );
  }

  async getDirectReply(scope: AgentScope, messageId: string): Promise<Record<string, unknown> | undefined> {
    const text = await this.visible(directReplyText(this.conn, scope, messageId));
    return text === undefined ? undefined : (JSON.parse(text) as Record<string, unknown>);
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
    const rowEvents = events.map(rows.taskEventColumns);
    const rowOutbox = outbox.map(rows.outboxColumns);
    return this.write('updateAgentTask', row, expectedVersion, rowEvents, rowOutbox, messageId).then((r) =>
      r.duplicate
        ? { duplicate: true, task: r.task, events: [] }
        : {
            duplicate: false,
            // The caller's documents, not parsed back (Store contract).
            task: inScope(written, r.scope) ? written : { ...written, ...r.scope },
            events: r.seqs.map((seq, i) => ({
              taskId: next.id,
              at: events[i]!.at,
              payload: events[i]!.payload,
              seq,
            })),
          },
    );
  }

  async listAgentTasks(query: AgentTaskQuery): Promise<AgentTaskPage> {
    const pageSize = agentTaskPageSize(query.pageSize);
    const keyset = decodeCursor(query.cursor);
    const w = where('sqlite');
    w.add('owner = $?', query.owner);
    w.add('tenant = $?', query.tenant);
    if (query.contextId !== undefined) w.add('context_id = $?', query.contextId);
    if (query.state !== undefined) w.add('state = $?', query.state);
    if (query.statusTimestampAfter !== undefined) w.add('status_timestamp >= $?', query.statusTimestampAfter);
    // SQLite reads are synchronous: the promises only fit the shared count logic.
    const { total } = await countListed(
      query,
      listCountReads('sqlite', query, (sql, params) =>
        Promise.resolve(this.conn.q(sql).get(...params) as Record<string, unknown> | undefined),
      ),
    );
    if (keyset) w.add('(status_timestamp, id) < ($?, $?)', keyset.at, keyset.id);
    const sql = `SELECT * FROM agent_tasks ${w.sql()} ORDER BY status_timestamp DESC, id DESC LIMIT ?`;
    const found = (this.conn.q(sql).all(...w.params, pageSize + 1) as rows.AgentTaskRow[]).map(
      rows.toAgentTask,
    );
    const tasks = found.slice(0, pageSize);
    const last = tasks[tasks.length - 1];
    const nextCursor =
      found.length > pageSize && last ? encodeCursor(last.statusTimestamp, last.id) : undefined;
    return this.visible({ tasks, nextCursor, totalSize: total });
  }

  purgeAgentTasks(finishedBefore: number, limit: number): Promise<AgentTaskPurge> {
    return this.write('purgeAgentTasks', finishedBefore, limit);
  }

  async listActiveAgentTasks(): Promise<AgentTaskRecord[]> {
    const terminal = TERMINAL_AGENT_TASK_STATES.map(() => '?').join(', ');
    const found = this.conn
      .q(`SELECT * FROM agent_tasks WHERE state NOT IN (${terminal}) ORDER BY id`)
      .all(...TERMINAL_AGENT_TASK_STATES) as rows.AgentTaskRow[];
    return this.visible(found.map(rows.toAgentTask));
  }

  async listAgentTaskEvents(taskId: string, afterSeq: number, limit?: number): Promise<AgentTaskEvent[]> {
    const found = this.conn
      .q('SELECT * FROM agent_task_events WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?')
      .all(taskId, afterSeq, eventLimit(limit)) as rows.TaskEventRow[];
    return this.visible(found.map(rows.toTaskEvent));
  }

  // --- push configs ----------------------------------------------------------------------------

  putPushConfig(c: PushConfigRecord): Promise<PushConfigRecord> {
    c = snapshot(c);
    return this.write('putPushConfig', c, rows.jsonOrNull(c.authentication)).then(() => c);
  }

  async getPushConfig(taskId: string, id: string): Promise<PushConfigRecord | undefined> {
    const row = this.conn.q('SELECT * FROM push_configs WHERE task_id = ? AND id = ?').get(taskId, id);
    return this.visible(row === undefined ? undefined : rows.toPushConfig(row as rows.PushConfigRow));
  }

  async listPushConfigs(taskId: string): Promise<PushConfigRecord[]> {
    const found = this.conn
      .q('SELECT * FROM push_configs WHERE task_id = ? ORDER BY created_at, id')
      .all(taskId);
    return this.visible((found as rows.PushConfigRow[]).map(rows.toPushConfig));
  }

  deletePushConfig(taskId: string, id: string): Promise<void> {
    return this.write('deletePushConfig', taskId, id);
  }

  // --- push outbox -----------------------------------------------------------------------------

  claimOutbox(owner: string, now: number, leaseMs: number, limit: number): Promise<OutboxRow[]> {
    return this.write('claimOutbox', owner, now, leaseMs, limit);
  }

  completeOutbox(id: number, owner: string, now: number): Promise<void> {
    return this.write('completeOutbox', id, owner, now);
  }

  failOutbox(id: number, owner: string, error: string, nextAttemptAt: number | null): Promise<void> {
    return this.write('failOutbox', id, owner, error, nextAttemptAt);
  }

  requeueDeadOutbox(now: number, taskId?: string): Promise<number> {
    return this.write('requeueDeadOutbox', now, taskId ?? null);
  }

  async listOutbox(query: { status?: OutboxStatus; taskId?: string; limit?: number }): Promise<OutboxRow[]> {
    const w = where('sqlite');
    if (query.status !== undefined) w.add('status = $?', query.status);
    if (query.taskId !== undefined) w.add('task_id = $?', query.taskId);
    const sql = `SELECT * FROM outbox ${w.sql()} ORDER BY id LIMIT ?`;
    return this.visible(
      (this.conn.q(sql).all(...w.params, outboxLimit(query.limit)) as rows.OutboxDbRow[]).map(rows.toOutbox),
    );
  }
}
