import { createHash } from 'node:crypto';
import { canonicalJson } from '../core/canonical-json.ts';
import type { Logger } from '../core/logger.ts';
import type { Clock } from '../core/clock.ts';
import { TaskplaneError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import type { Random } from '../core/random.ts';
import type { AgentScope, AgentTaskRecord, AgentTaskStore } from '../store/store.ts';
import { A2AError, invalidParams, taskNotFound } from '../protocols/a2a/errors.ts';
import type { A2ARequestHandler, CallContext, StreamItem } from '../protocols/a2a/handler.ts';
import {
  isTerminalTaskState,
  type AgentCard,
  type ListTasksRequest,
  type ListTasksResponse,
  type Message,
  type SendMessageRequest,
  type SendMessageResponse,
  type Task,
} from '../protocols/a2a/types.ts';
import type { AgentDefinition } from './agent-api.ts';
import type { Executions } from './executions.ts';
import type { HostLiveness } from './host-liveness.ts';
import { PushConfigs } from './push-configs.ts';
import { answerData, answerText } from './task-context.ts';
import type { TaskStreams } from './task-streams.ts';
import {
  type ExecutorState,
  type StoredEvent,
  payloadState,
  setStatus,
  statusEvent,
  taskOf,
  toIso,
  newTaskRecord,
  wireTask,
} from './task-model.ts';
import type { TaskFeed } from './task-feed.ts';
import type { TaskWriter } from './task-writer.ts';

export interface A2AServiceOptions {
  store: AgentTaskStore;
  clock: Clock;
  random: Random;
  writer: TaskWriter;
  feed: TaskFeed;
  streams: TaskStreams;
  executions: Executions;
  liveness: HostLiveness;
  card: () => AgentCard;
  /** The agent, for its direct replies (`reply`); execute runs through `executions`. */
  agent?: Pick<AgentDefinition, 'reply' | 'extendedCard'>;
  logger: Logger;
}

/**
 * Tenant scoping: a `/{tenant}` or `tenant` request is a separate space of the same caller. Owner and
 * tenant stay two values all the way into the store; no name can spell another caller's scope.
 */
function scope(ctx: CallContext): AgentScope {
  return { owner: ctx.owner, tenant: ctx.tenant ?? '' };
}

/**
 * The A2A 1.0 operations over the Store: the behaviour behind both bindings. "A2A 1.0, <topic>" names the
 * part of the specification a rule comes from.
 */
export class A2AService implements A2ARequestHandler {
  private readonly push: PushConfigs;
  /** Tasks acknowledged through this host (see `acknowledge`), bounded by ACKNOWLEDGED_KEPT. */
  private readonly acknowledged = new Set<string>();

  constructor(private readonly o: A2AServiceOptions) {
    this.push = new PushConfigs(o.store, o.clock, o.random);
  }

  agentCard(): AgentCard {
    return this.o.card();
  }

  async sendMessage(req: SendMessageRequest, ctx: CallContext): Promise<SendMessageResponse> {
    const message = await this.directReply(req, ctx);
    if (message) return { message };
    const { record } = await this.accept(req, ctx);
    const historyLength = req.configuration?.historyLength;
    // A2A 1.0, execution mode: blocking is the default; wait for a terminal or interrupted state.
    if (req.configuration?.returnImmediately || isStopped(record.state)) {
      return { task: wireTask(taskOf(record), historyLength) };
    }
    await this.waitForStop(record.id, record.version, ctx.signal);
    const latest = (await this.o.store.getAgentTask(record.id)) ?? record;
    return { task: wireTask(taskOf(latest), historyLength) };
  }

  async sendStreamingMessage(
    req: SendMessageRequest,
    ctx: CallContext,
  ): Promise<AsyncIterable<StreamItem[]>> {
    const message = await this.directReply(req, ctx);
    // A2A 1.0, SendStreamingMessage: a stream may be one Message, then it ends.
    if (message) return single([{ id: '0', payload: { message } }]);
    const { record, created } = await this.accept(req, ctx);
    if (created) return this.o.streams.fromCreation(record.id, ctx.signal);
    // A follow-up (or a retried send): the current task first, then what follows.
    const view = (t: Task) => wireTask(t, req.configuration?.historyLength);
    if (isTerminalTaskState(record.state))
      return single([{ id: '0', payload: { task: view(taskOf(record)) } }]);
    return this.o.streams.snapshotThenLive(record.id, record, ctx.signal, view);
  }

  async getTask(req: { id: string; historyLength?: number }, ctx: CallContext): Promise<Task> {
    return this.onOwnTask(req.id, ctx, async (record) => wireTask(taskOf(record), req.historyLength));
  }

  async listTasks(req: ListTasksRequest, ctx: CallContext): Promise<ListTasksResponse> {
    const pageSize = req.pageSize ?? 50;
    let page;
    try {
      page = await this.o.store.listAgentTasks({
        ...scope(ctx),
        ...(req.contextId ? { contextId: req.contextId } : {}),
        ...(req.status ? { state: req.status } : {}),
        ...(req.statusTimestampAfter ? { statusTimestampAfter: Date.parse(req.statusTimestampAfter) } : {}),
        ...(req.pageToken ? { cursor: req.pageToken } : {}),
        pageSize,
      });
    } catch (err) {
      if (err instanceof TaskplaneError && err.code === 'invalid_argument')
        throw invalidParams('pageToken', 'is not a token this server issued');
      throw err;
    }
    return {
      // A2A 1.0, ListTasks: the `artifacts` key is absent unless includeArtifacts, present (maybe []) when it is.
      tasks: page.tasks.map((r) => wireTask(taskOf(r), req.historyLength, req.includeArtifacts === true)),
      nextPageToken: page.nextCursor ?? '',
      pageSize,
      totalSize: page.totalSize,
    };
  }

  async cancelTask(req: { id: string }, ctx: CallContext): Promise<Task> {
    return this.onOwnTask(req.id, ctx, (record) => this.cancelOwn(record));
  }

  private async cancelOwn(record: AgentTaskRecord): Promise<Task> {
    // A2A 1.0, task states: cancel of a canceled task is idempotent; other terminal states are not cancelable.
    const result = await this.o.writer.update(record.id, (d) => {
      const state = d.task.status.state;
      if (state === 'TASK_STATE_CANCELED') return null;
      if (isTerminalTaskState(state)) throw new A2AError('TaskNotCancelableError', `Task is ${state}`);
      delete d.executor.pendingInput;
      setStatus(d.task, 'TASK_STATE_CANCELED', this.o.clock.now());
      return { events: [statusEvent(d.task)] };
    });
    if (result.written) this.o.executions.abort(record.id, 'canceled');
    return wireTask(taskOf(result.record));
  }

  async subscribeToTask(req: { id: string }, ctx: CallContext): Promise<AsyncIterable<StreamItem[]>> {
    return this.onOwnTask(req.id, ctx, (record) => this.subscribeOwn(record, ctx));
  }

  private async subscribeOwn(
    record: AgentTaskRecord,
    ctx: CallContext,
  ): Promise<AsyncIterable<StreamItem[]>> {
    if (ctx.lastEventId !== undefined) {
      return this.o.streams.afterEventId(
        record.id,
        ctx.lastEventId,
        isTerminalTaskState(record.state),
        ctx.signal,
      );
    }
    // A2A 1.0, task states: SubscribeToTask on a terminal task → UnsupportedOperationError.
    if (isTerminalTaskState(record.state))
      throw new A2AError('UnsupportedOperationError', `Task is ${record.state}; use GetTask`);
    return this.o.streams.snapshotThenLive(record.id, record, ctx.signal, (t) => wireTask(t));
  }

  createTaskPushNotificationConfig: A2ARequestHandler['createTaskPushNotificationConfig'] = async (
    req,
    ctx,
  ) => {
    // The flag before the config (see ExecutorState.pushConfigs): every write after it lists the configs.
    const flag = async () => {
      await this.o.writer.update(req.taskId, (d) => {
        if (d.executor.pushConfigs !== false || isTerminalTaskState(d.task.status.state)) return null;
        d.executor.pushConfigs = true;
        return { events: [] };
      });
    };
    return this.onOwnTask(req.taskId, ctx, () =>
      this.push.create(req.taskId, scope(ctx), req, flag, ctx.protocolVersion),
    );
  };

  getTaskPushNotificationConfig: A2ARequestHandler['getTaskPushNotificationConfig'] = async (req, ctx) => {
    return this.onOwnTask(req.taskId, ctx, () => this.push.get(req.taskId, req.id, scope(ctx)));
  };

  listTaskPushNotificationConfigs: A2ARequestHandler['listTaskPushNotificationConfigs'] = async (
    req,
    ctx,
  ) => {
    return this.onOwnTask(req.taskId, ctx, () =>
      this.push.list(req.taskId, scope(ctx), req.pageSize, req.pageToken),
    );
  };

  deleteTaskPushNotificationConfig: A2ARequestHandler['deleteTaskPushNotificationConfig'] = async (
    req,
    ctx,
  ) => {
    await this.onOwnTask(req.taskId, ctx, () => this.push.delete(req.taskId, req.id, scope(ctx)));
  };

  async getExtendedAgentCard(_req: { tenant?: string }, ctx: CallContext): Promise<AgentCard> {
    const agent = this.o.agent;
    const extended = agent?.extendedCard;
    // A2A 1.0 §3.3.4: capabilities.extendedAgentCard is false on our card → UnsupportedOperationError.
    if (extended === undefined)
      throw new A2AError('UnsupportedOperationError', 'This agent has no extended agent card');
    // The bindings authenticated the caller before this runs (every operation is authenticated).
    const info = typeof extended === 'function' ? await extended.call(agent, { ...scope(ctx) }) : extended;
    const card: Record<string, unknown> = { ...this.o.card() };
    for (const field of EXTENDED_FIELDS) {
      const value = (info as Record<string, unknown> | undefined)?.[field];
      if (value !== undefined) card[field] = structuredClone(value);
    }
    return card as unknown as AgentCard;
  }

  // --- internals ---------------------------------------------------------------------------------

  /**
   * Runs `op` on the caller's task `taskId` (TaskNotFoundError otherwise), then acknowledges the task:
   * the caller addressed it by its id, so the send that created it was answered, and a resend of that
   * message is a new message from now on (docs/host.md, "Idempotent sends"). Only after `op`
   * succeeded: a refused request writes nothing.
   */
  private async onOwnTask<T>(
    taskId: string,
    ctx: CallContext,
    op: (record: AgentTaskRecord) => Promise<T>,
  ): Promise<T> {
    const caller = scope(ctx);
    const record = await this.o.store.getAgentTask(taskId, caller);
    if (!record) throw taskNotFound(taskId);
    const result = await op(record);
    if (!this.acknowledged.has(record.id)) await this.acknowledge(record.id, caller);
    return result;
  }

  /**
   * Store.acknowledgeAgentTask once per task as far as this host knows: the mark is never removed, so
   * a remembered id is never stale, and a client polling GetTask costs a Set lookup, not a store call.
   */
  private async acknowledge(taskId: string, caller: AgentScope): Promise<void> {
    if (this.acknowledged.has(taskId)) return;
    await this.o.store.acknowledgeAgentTask(taskId, caller);
    if (this.acknowledged.size >= ACKNOWLEDGED_KEPT)
      this.acknowledged.delete(this.acknowledged.values().next().value!);
    this.acknowledged.add(taskId);
  }

  /**
   * The agent's direct reply to a new message (agent-api.ts `reply`), or undefined when the message
   * goes to a task: it continues one, the agent has no `reply`, its send already created a task, or
   * `reply` declined. A reply is stored before it is returned, under the key a task would take, so a
   * retry gets the stored Message and `reply` runs once per message.
   */
  private async directReply(req: SendMessageRequest, ctx: CallContext): Promise<Message | undefined> {
    const reply = this.o.agent?.reply;
    const message = req.message;
    if (!reply || message.taskId) return undefined;
    const caller = scope(ctx);
    const key = messageKey(message);
    const earlier = await this.o.store.getDirectReply(caller, key);
    if (earlier) return earlier as unknown as Message;
    if ((await this.o.store.findAgentTaskByMessageId(caller, key)) !== undefined) return undefined;
    const { clock, random } = this.o;
    const contextId = message.contextId ?? newId(clock, random, 'ctx_');
    const own = structuredClone(message);
    const parts = await reply.call(this.o.agent, {
      message: own,
      text: answerText(own),
      data: answerData(own),
      contextId,
      signal: ctx.signal,
      logger: this.o.logger.child({ messageId: message.messageId.slice(0, 100) }),
    });
    if (parts === undefined || parts === null) return undefined;
    // A2A 1.0, data model: a Message has at least one part.
    if (typeof parts !== 'string' && (!Array.isArray(parts) || parts.length === 0))
      throw new Error('reply resolved to neither a string, a non-empty Part[] nor undefined');
    const answer: Message = {
      messageId: newId(clock, random, 'msg_'),
      role: 'ROLE_AGENT',
      parts: typeof parts === 'string' ? [{ text: parts }] : parts,
      contextId,
    };
    const stored = await this.o.store.putDirectReply(
      caller,
      key,
      answer as unknown as Record<string, unknown>,
      clock.now(),
    );
    return stored as unknown as Message;
  }

  /** Creates the task or applies a follow-up; idempotent on (caller, messageId, content). */
  private async accept(
    req: SendMessageRequest,
    ctx: CallContext,
  ): Promise<{ record: AgentTaskRecord; created: boolean }> {
    const caller = scope(ctx);
    const message = req.message;
    const key = messageKey(message);
    if (message.taskId) return { record: await this.followUp(message, caller, key), created: false };

    // Idempotency on (caller, messageId, content) is decided by createAgentTask itself (one store call).
    const { clock, random } = this.o;
    const now = clock.now();
    const id = newId(clock, random, 'task_');
    const contextId = message.contextId ?? newId(clock, random, 'ctx_');
    const stored: Message = { ...message, taskId: id, contextId };
    const task: Task = {
      id,
      contextId,
      status: { state: 'TASK_STATE_SUBMITTED', timestamp: toIso(now) },
      history: [stored],
      artifacts: [],
    };
    if (req.metadata) task.metadata = req.metadata;
    const pushConfig = req.configuration?.taskPushNotificationConfig;
    let configId: string | undefined;
    if (pushConfig)
      configId = (
        await this.push.create(id, caller, { ...pushConfig, taskId: id }, undefined, ctx.protocolVersion)
      ).id;
    const executor: ExecutorState = {
      inputs: [],
      runs: 0,
      host: this.o.liveness.hostId,
      pushConfigs: configId !== undefined,
    };
    const { record, first } = newTaskRecord({ id, scope: caller, contextId, task, executor, now });
    const outbox = configId ? await this.o.writer.outboxRows(id, [first], now) : [];
    const result = await this.o.store.createAgentTask(
      record,
      key,
      [{ taskId: id, at: now, payload: first }],
      outbox,
    );
    if (!result.created) {
      if (configId) await this.o.store.deletePushConfig(id, configId);
      return { record: result.task, created: false };
    }
    this.o.writer.prime(result.task);
    if (outbox.length > 0) this.o.writer.onOutboxRows();
    this.o.executions.start(result.task, false);
    return { record: result.task, created: true };
  }

  /**
   * A message with a taskId (A2A 1.0, data model): the task must exist for this caller, contextIds must match, a
   * terminal task refuses it (UnsupportedOperationError), an INPUT_REQUIRED task takes it as the answer.
   */
  private async followUp(message: Message, caller: AgentScope, key: string): Promise<AgentTaskRecord> {
    const taskId = message.taskId!;
    const current = await this.o.store.getAgentTask(taskId, caller);
    // An MCP tool task takes its input through MCP (tasks/update, keyed), never as a message.
    if (!current || (current.executorState as unknown as ExecutorState | null)?.mcp)
      throw taskNotFound(taskId);
    // A retry of the follow-up that ended the task: its answer, not UnsupportedOperationError.
    if (
      isTerminalTaskState(current.state) &&
      (await this.o.store.findAgentTaskByMessageId(caller, key)) === taskId
    )
      return current;
    if (message.contextId && message.contextId !== current.contextId) {
      throw invalidParams('message.contextId', 'does not match the task’s contextId');
    }
    // The answer goes to the execute waiting for it: here, on the live host that runs the task (it
    // watches the store), or, when that host is gone, here after taking the task over in this write.
    const me = this.o.liveness.hostId;
    const runner = (current.executorState as unknown as ExecutorState | null)?.host;
    const takeOver = runner !== me && !(await this.o.liveness.isAlive(runner));
    let answered = false;
    const result = await this.o.writer.update(
      taskId,
      (d) => {
        const state = d.task.status.state;
        if (isTerminalTaskState(state)) {
          throw new A2AError(
            'UnsupportedOperationError',
            `Task is ${state}; start a new task in the same context`,
          );
        }
        const stored: Message = { ...message, taskId, contextId: d.task.contextId };
        (d.task.history ??= []).push(stored);
        const pending = d.executor.pendingInput;
        if (state === 'TASK_STATE_INPUT_REQUIRED' && pending) {
          d.executor.inputs[pending.index] = stored;
          delete d.executor.pendingInput;
          if (takeOver && d.executor.host === runner) d.executor.host = me;
          setStatus(d.task, 'TASK_STATE_WORKING', this.o.clock.now());
          answered = true;
          return { events: [statusEvent(d.task)] };
        }
        return { events: [] };
      },
      key,
    );
    if (answered && result.written && (result.record.executorState as unknown as ExecutorState).host === me) {
      this.o.executions.answered(result.record, executorAnswer(result.record));
    }
    // Taken: the caller knew the task's id (acknowledged only now, so a refused follow-up writes nothing).
    await this.acknowledge(taskId, caller);
    return result.record;
  }

  /** Waits for a stop written after version `afterVersion` (so an earlier INPUT_REQUIRED does not count). */
  private async waitForStop(taskId: string, afterVersion: number, signal: AbortSignal): Promise<void> {
    for await (const event of this.o.feed.events(taskId, 0, signal)) {
      const stored = event.payload as StoredEvent;
      if ((stored._v ?? 0) <= afterVersion) continue;
      if (isStopped(payloadState(stored))) return;
    }
  }
}

/**
 * The key a send is deduplicated on, per caller (the store's `messageId` argument): the message's
 * content hash and its `messageId`. The same message sent again (a retry, on either binding, in any
 * spelling the decoder accepts) has the same key and gets the task it created; a different message
 * that reuses a `messageId` has another key and is processed as a new message. "Content" is the decoded
 * message minus `messageId`: role, parts, contextId, taskId, referenceTaskIds, extensions and metadata,
 * as canonical JSON (RFC 8785). The request around it (configuration, request metadata) is not content:
 * a retry may change `returnImmediately` or its push config and is still the same message
 * (docs/host.md, "Idempotent sends"). The hash is fixed-length and goes first, so no two pairs spell
 * one key.
 */
export function messageKey(message: Message): string {
  const { messageId, ...content } = message;
  const hash = createHash('sha256').update(canonicalJson(content)).digest('base64url');
  return `${hash}:${messageId}`;
}

/** Task ids a host remembers as acknowledged (A2AService.acknowledge); the oldest goes first. */
const ACKNOWLEDGED_KEPT = 10_000;

/** What an extended card may replace of the public one (agent-api.ts AgentCardInfo). */
const EXTENDED_FIELDS = [
  'name',
  'description',
  'version',
  'skills',
  'documentationUrl',
  'provider',
  'defaultInputModes',
  'defaultOutputModes',
] as const;

function isStopped(state: string | undefined): boolean {
  return (
    state !== undefined &&
    (isTerminalTaskState(state) ||
      state === 'TASK_STATE_INPUT_REQUIRED' ||
      state === 'TASK_STATE_AUTH_REQUIRED')
  );
}

function executorAnswer(record: AgentTaskRecord): Message {
  const exec = record.executorState as unknown as ExecutorState;
  return exec.inputs[exec.inputs.length - 1]!;
}

async function* single(items: StreamItem[]): AsyncGenerator<StreamItem[]> {
  yield items;
}
