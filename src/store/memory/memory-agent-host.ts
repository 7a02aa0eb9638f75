import { TaskplaneError, VersionConflictError, notFound } from '../../core/errors.ts';
import { snapshot } from '../snapshot.ts';
import { type ChangeHub, taskNotices } from '../change-hub.ts';
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
  afterKeyset,
  agentTaskPageSize,
  decodeCursor,
  encodeCursor,
  eventLimit,
  inScope,
  isTerminalAgentTaskState,
  outboxLimit,
} from '../store-query.ts';

/**
 * The agent-host half of the memory Store (tasks, their events, push configs, the push outbox), split from
 * memory-store.ts to keep files readable. Same rules: no node: imports, deep copies in and out.
 */
export abstract class MemoryAgentHost {
  protected abstract readonly hub: ChangeHub;
  protected abstract assertOpen(): void;

  protected readonly agentTasks = new Map<string, AgentTaskRecord>();
  /** messageKey(scope, messageId) → task id. */
  protected readonly messageIds = new Map<string, string>();
  /** messageKey(scope, messageId) → the direct reply, as JSON text (a copy). */
  protected readonly directReplies = new Map<string, string>();
  /** messageKey(scope, messageId) → when its direct reply was stored (the purge's clock). */
  protected readonly directReplyTimes = new Map<string, number>();
  /** Ids of tasks their owner has addressed by id (acknowledgeAgentTask). */
  protected readonly acknowledged = new Set<string>();
  protected readonly taskEvents = new Map<string, AgentTaskEvent[]>();
  protected taskEventSeq = 0;
  /** taskId → configId → config. */
  protected readonly pushConfigs = new Map<string, Map<string, PushConfigRecord>>();
  protected readonly outbox = new Map<number, OutboxRow>();
  protected outboxSeq = 0;

  // --- agent tasks -----------------------------------------------------------------------------

  async createAgentTask(
    task: AgentTaskRecord,
    messageId: string,
    events: NewAgentTaskEvent[],
    outbox: NewOutboxRow[],
  ): Promise<{ created: boolean; task: AgentTaskRecord }> {
    this.assertOpen();
    const existingId = this.messageIds.get(messageKey(task, messageId));
    // A pair whose task its owner has acknowledged is taken over: that resend is a new message.
    if (existingId !== undefined && !this.acknowledged.has(existingId))
      return { created: false, task: clone(this.agentTasks.get(existingId)!) };
    if (this.agentTasks.has(task.id))
      throw new TaskplaneError('conflict', `agent task ${task.id} already exists`);
    const stored = { ...clone(task), version: 1 };
    this.agentTasks.set(stored.id, stored);
    this.messageIds.set(messageKey(stored, messageId), stored.id);
    const appended = this.appendTaskEvents(events);
    this.appendOutbox(outbox, stored.updatedAt);
    this.hub.emit(taskNotices(stored.id, appended));
    return { created: true, task: clone(stored) };
  }

  async purgeAgentTasks(finishedBefore: number, limit: number): Promise<AgentTaskPurge> {
    this.assertOpen();
    const doomed = [...this.agentTasks.values()]
      .filter((t) => isTerminalAgentTaskState(t.state) && t.updatedAt < finishedBefore)
      .sort((a, b) => a.updatedAt - b.updatedAt || compare(a.id, b.id))
      .slice(0, Math.max(0, limit))
      .map((t) => t.id);
    const gone = new Set(doomed);
    for (const id of doomed) {
      this.agentTasks.delete(id);
      this.taskEvents.delete(id);
      this.pushConfigs.delete(id);
      this.acknowledged.delete(id);
    }
    for (const [key, taskId] of this.messageIds) if (gone.has(taskId)) this.messageIds.delete(key);
    for (const [id, row] of this.outbox) if (gone.has(row.taskId)) this.outbox.delete(id);
    let directReplies = 0;
    for (const [key, at] of this.directReplyTimes) {
      if (directReplies >= limit) break;
      if (at >= finishedBefore) continue;
      this.directReplyTimes.delete(key);
      this.directReplies.delete(key);
      directReplies++;
    }
    return { tasks: doomed, directReplies };
  }

  async putDirectReply(
    scope: AgentScope,
    messageId: string,
    reply: Record<string, unknown>,
    now: number,
  ): Promise<Record<string, unknown>> {
    this.assertOpen();
    const key = messageKey(scope, messageId);
    const stored = this.directReplies.get(key) ?? JSON.stringify(reply);
    if (!this.directReplies.has(key)) this.directReplyTimes.set(key, now);
    this.directReplies.set(key, stored);
    return JSON.parse(stored) as Record<string, unknown>;
  }

  async getDirectReply(scope: AgentScope, messageId: string): Promise<Record<string, unknown> | undefined> {
    const stored = this.directReplies.get(messageKey(scope, messageId));
    return stored === undefined ? undefined : (JSON.parse(stored) as Record<string, unknown>);
  }

  async getAgentTask(id: string, scope?: AgentScope): Promise<AgentTaskRecord | undefined> {
    const task = this.agentTasks.get(id);
    if (!task || (scope !== undefined && !inScope(task, scope))) return undefined;
    return clone(task);
  }

  async acknowledgeAgentTask(id: string, scope: AgentScope): Promise<void> {
    this.assertOpen();
    const task = this.agentTasks.get(id);
    if (task && inScope(task, scope)) this.acknowledged.add(id);
  }

  async findAgentTaskByMessageId(scope: AgentScope, messageId: string): Promise<string | undefined> {
    return this.messageIds.get(messageKey(scope, messageId));
  }

  async updateAgentTask(
    next: AgentTaskRecord,
    expectedVersion: number,
    events: NewAgentTaskEvent[],
    outbox: NewOutboxRow[],
    messageId?: string,
  ): Promise<{ duplicate: boolean; task: AgentTaskRecord; events: AgentTaskEvent[] }> {
    this.assertOpen();
    const current = this.agentTasks.get(next.id);
    if (!current) throw notFound(`agent task ${next.id}`);
    // Duplicate before version: a retried message must read as "already done", not as a conflict.
    if (messageId !== undefined && this.messageIds.has(messageKey(current, messageId))) {
      return { duplicate: true, task: clone(current), events: [] };
    }
    if (current.version !== expectedVersion) throw new VersionConflictError(`agent task ${next.id}`);
    const stored = {
      ...clone(next),
      owner: current.owner,
      tenant: current.tenant,
      version: expectedVersion + 1,
    };
    this.agentTasks.set(stored.id, stored);
    if (messageId !== undefined) this.messageIds.set(messageKey(current, messageId), stored.id);
    const appended = this.appendTaskEvents(events);
    this.appendOutbox(outbox, stored.updatedAt);
    this.hub.emit(taskNotices(stored.id, appended));
    return { duplicate: false, task: clone(stored), events: clone(appended) };
  }

  async listAgentTasks(query: AgentTaskQuery): Promise<AgentTaskPage> {
    const pageSize = agentTaskPageSize(query.pageSize);
    const keyset = decodeCursor(query.cursor);
    const matching = [...this.agentTasks.values()].filter(
      (t) =>
        inScope(t, query) &&
        (query.contextId === undefined || t.contextId === query.contextId) &&
        (query.state === undefined || t.state === query.state) &&
        (query.statusTimestampAfter === undefined || t.statusTimestamp >= query.statusTimestampAfter),
    );
    matching.sort((a, b) => b.statusTimestamp - a.statusTimestamp || compare(b.id, a.id));
    const after = keyset
      ? matching.filter((t) => afterKeyset(t.statusTimestamp, t.id, keyset, 'desc'))
      : matching;
    const tasks = after.slice(0, pageSize).map(clone);
    const last = tasks[tasks.length - 1];
    const nextCursor =
      after.length > pageSize && last ? encodeCursor(last.statusTimestamp, last.id) : undefined;
    return { tasks, nextCursor, totalSize: matching.length };
  }

  async listActiveAgentTasks(): Promise<AgentTaskRecord[]> {
    return [...this.agentTasks.values()].filter((t) => !isTerminalAgentTaskState(t.state)).map(clone);
  }

  async listAgentTaskEvents(taskId: string, afterSeq: number, limit?: number): Promise<AgentTaskEvent[]> {
    const max = eventLimit(limit);
    const events = this.taskEvents.get(taskId) ?? [];
    return events
      .filter((e) => e.seq > afterSeq)
      .slice(0, max)
      .map(clone);
  }

  // --- push configs ----------------------------------------------------------------------------

  async putPushConfig(config: PushConfigRecord): Promise<PushConfigRecord> {
    this.assertOpen();
    let configs = this.pushConfigs.get(config.taskId);
    if (!configs) this.pushConfigs.set(config.taskId, (configs = new Map()));
    configs.set(config.id, clone(config));
    return clone(config);
  }

  async getPushConfig(taskId: string, id: string): Promise<PushConfigRecord | undefined> {
    return cloneOrUndefined(this.pushConfigs.get(taskId)?.get(id));
  }

  async listPushConfigs(taskId: string): Promise<PushConfigRecord[]> {
    const configs = [...(this.pushConfigs.get(taskId)?.values() ?? [])];
    return configs.sort((a, b) => a.createdAt - b.createdAt || compare(a.id, b.id)).map(clone);
  }

  async deletePushConfig(taskId: string, id: string): Promise<void> {
    this.pushConfigs.get(taskId)?.delete(id);
  }

  // --- push outbox -----------------------------------------------------------------------------

  async claimOutbox(owner: string, now: number, leaseMs: number, limit: number): Promise<OutboxRow[]> {
    this.assertOpen();
    const heads = new Map<string, OutboxRow>();
    // Map iteration follows insertion order, which is id order: the first open row per pair is its head.
    for (const row of this.outbox.values()) {
      if (row.status !== 'pending' && row.status !== 'leased') continue;
      const key = pair(row.taskId, row.configId);
      if (!heads.has(key)) heads.set(key, row);
    }
    const claimed: OutboxRow[] = [];
    for (const row of heads.values()) {
      if (claimed.length >= limit) break;
      const due =
        (row.status === 'pending' && row.nextAttemptAt <= now) ||
        (row.status === 'leased' && (row.leaseExpiresAt ?? 0) <= now);
      if (!due) continue;
      row.status = 'leased';
      row.leaseOwner = owner;
      row.leaseExpiresAt = now + leaseMs;
      row.attempts += 1;
      claimed.push(clone(row));
    }
    return claimed;
  }

  async completeOutbox(id: number, owner: string, now: number): Promise<void> {
    const row = this.outbox.get(id);
    if (!row || row.status !== 'leased' || row.leaseOwner !== owner) return;
    Object.assign(row, { status: 'delivered', deliveredAt: now, leaseOwner: null, leaseExpiresAt: null });
  }

  async failOutbox(id: number, owner: string, error: string, nextAttemptAt: number | null): Promise<void> {
    const row = this.outbox.get(id);
    if (!row || row.status !== 'leased' || row.leaseOwner !== owner) return;
    row.status = nextAttemptAt === null ? 'dead' : 'pending';
    if (nextAttemptAt !== null) row.nextAttemptAt = nextAttemptAt;
    Object.assign(row, { lastError: error, leaseOwner: null, leaseExpiresAt: null });
  }

  async requeueDeadOutbox(now: number, taskId?: string): Promise<number> {
    let n = 0;
    for (const row of this.outbox.values()) {
      if (row.status !== 'dead' || (taskId !== undefined && row.taskId !== taskId)) continue;
      Object.assign(row, { status: 'pending', attempts: 0, nextAttemptAt: now });
      n++;
    }
    return n;
  }

  async listOutbox(query: { status?: OutboxStatus; taskId?: string; limit?: number }): Promise<OutboxRow[]> {
    const limit = outboxLimit(query.limit);
    const out: OutboxRow[] = [];
    for (const row of this.outbox.values()) {
      if (out.length >= limit) break;
      if (query.status !== undefined && row.status !== query.status) continue;
      if (query.taskId !== undefined && row.taskId !== query.taskId) continue;
      out.push(clone(row));
    }
    return out;
  }

  private appendTaskEvents(events: NewAgentTaskEvent[]): AgentTaskEvent[] {
    return events.map((event) => {
      const stored = { ...clone(event), seq: ++this.taskEventSeq };
      let list = this.taskEvents.get(stored.taskId);
      if (!list) this.taskEvents.set(stored.taskId, (list = []));
      list.push(stored);
      return stored;
    });
  }

  private appendOutbox(rows: NewOutboxRow[], createdAt: number): void {
    for (const row of rows) {
      const id = ++this.outboxSeq;
      this.outbox.set(id, {
        ...clone(row),
        id,
        status: 'pending',
        attempts: 0,
        leaseOwner: null,
        leaseExpiresAt: null,
        lastError: null,
        createdAt,
        deliveredAt: null,
      });
    }
  }
}

/**
 * The message-id dedup key: a length-prefixed owner and tenant, so no choice of names makes two scopes'
 * keys equal.
 */
function messageKey(scope: AgentScope, messageId: string): string {
  return `${scope.owner.length}:${scope.owner}${scope.tenant.length}:${scope.tenant}${messageId}`;
}

export function pair(a: string, b: string): string {
  return `${a}\u0000${b}`;
}

export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function clone<T>(value: T): T {
  return snapshot(value);
}

export function cloneOrUndefined<T>(value: T | undefined): T | undefined {
  return value === undefined ? undefined : snapshot(value);
}
