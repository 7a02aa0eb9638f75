import type { Clock } from '../core/clock.ts';
import { newId } from '../core/ids.ts';
import type { Logger } from '../core/logger.ts';
import type { Random } from '../core/random.ts';
import type { AgentScope, AgentTaskRecord, AgentTaskStore } from '../store/store.ts';
import { isTerminalTaskState, type Message, type Task as A2ATask } from '../protocols/a2a/types.ts';
import type { Obj } from '../protocols/mcp/fields.ts';
import {
  decodeCallToolParams,
  decodeRequestMeta,
  decodeSubscriptionsListenParams,
  decodeTaskIdParams,
  decodeUpdateTaskEnvelope,
} from '../protocols/mcp/decode.ts';
import { decodeInputResponses } from '../protocols/mcp/input.ts';
import {
  ackResult,
  createTaskResult,
  discoverResult,
  getTaskResult,
  inputRequiredResult,
  subscriptionAcknowledged,
  taskNotification,
} from '../protocols/mcp/encode.ts';
import {
  checkTaskMethod,
  declaresTasks,
  negotiateInitializeVersion,
  type Era,
} from '../protocols/mcp/era.ts';
import {
  McpError,
  invalidParams,
  invalidRequest,
  legacyTaskRequired,
  methodNotFound,
  missingRequiredClientCapability,
  taskNotFound,
} from '../protocols/mcp/errors.ts';
import {
  decodeInitializeParams,
  decodeLegacyListTasksParams,
  legacyCreateTaskResult,
  legacyServerTasksCapability,
  legacyTaskPayload,
  legacyTaskStatusNotification,
} from '../protocols/mcp/legacy.ts';
import {
  META,
  type InputResponses,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcId,
  type RequestMeta,
} from '../protocols/mcp/types.ts';
import type { AgentDefinition } from './agent-api.ts';
import type { Executions } from './executions.ts';
import type { HostLiveness } from './host-liveness.ts';
import {
  detailedTaskOf,
  failedError,
  isExpired,
  legacyTaskOf,
  mcpStateOf,
  outstanding,
  taskFieldsOf,
} from './mcp-view.ts';
import type { TaskFeed } from './task-feed.ts';
import {
  type ExecutorState,
  type McpTaskState,
  type StoredEvent,
  executorStateOf,
  payloadState,
  setStatus,
  statusEvent,
  toIso,
  newTaskRecord,
} from './task-model.ts';
import type { TaskWriter } from './task-writer.ts';
import type { ToolDefinition } from './tool-api.ts';
import { type ToolCallInput, toolOf } from './tool-runner.ts';

export interface McpServiceOptions {
  store: AgentTaskStore;
  clock: Clock;
  random: Random;
  writer: TaskWriter;
  feed: TaskFeed;
  executions: Executions;
  liveness: HostLiveness;
  agent: AgentDefinition;
  logger: Logger;
  ttlMs: number;
  pollIntervalMs: number;
}

/** One MCP request as the HTTP layer hands it over: who asks, in which era. */
export interface McpCall {
  owner: string;
  tenant: string;
  era: Era;
  protocolVersion: string;
  /** Fires when the client goes away. */
  signal: AbortSignal;
  /** The request's JSON-RPC id (a stream that ends with the response carries it). */
  id: JsonRpcId;
  /** The client accepts an SSE answer (`Accept: text/event-stream`). */
  acceptsStream: boolean;
}

/** A JSON-RPC error the remote work itself produced (a synchronous tool call that failed). */
export class RpcFailure extends Error {
  constructor(readonly error: JsonRpcErrorObject) {
    super(error.message);
    this.name = 'RpcFailure';
  }
}

/** What a method answers: a result, or a stream of messages (subscriptions/listen, legacy SSE). */
export type McpAnswer = { result: object } | { stream: AsyncIterable<object> };

const TOOL_KIND = 'taskplane/mcp-tool';

/**
 * MCP over the host's durable machinery: a `tools/call` becomes an agent task (same store, writer,
 * executions, recovery, leases and input timeout as A2A; mcp-view.ts maps the states), answered as a
 * 2026-07-28 task, a 2025-11-25 task or synchronously. Every tasks/* call reads the task under the
 * caller's (owner, tenant) scope, and one that is not an MCP task, not the caller's, unknown or expired
 * gets the same -32602.
 */
export class McpService {
  constructor(private readonly o: McpServiceOptions) {}

  get tools(): ToolDefinition[] {
    return this.o.agent.tools ?? [];
  }

  async handle(method: string, params: Obj | undefined, call: McpCall): Promise<McpAnswer> {
    return call.era === 'modern' ? this.modern(method, params, call) : this.legacy(method, params, call);
  }

  // ---------------------------------------------------------------- 2026-07-28

  private async modern(method: string, params: Obj | undefined, call: McpCall): Promise<McpAnswer> {
    checkTaskMethod(method, 'modern');
    switch (method) {
      case 'server/discover':
        decodeRequestMeta(params);
        return { result: this.discover() };
      case 'tools/list':
        decodeRequestMeta(params);
        return {
          result: { resultType: 'complete', tools: this.toolList('modern'), ttlMs: 0, cacheScope: 'public' },
        };
      case 'tools/call':
        return this.callTool(params, call);
      case 'tasks/get': {
        const p = decodeTaskIdParams(params, true);
        requireDeclared(p.meta!);
        const { record, mcp } = await this.own(p.taskId, call);
        return { result: getTaskResult(detailedTaskOf(record, mcp), serverMeta(this.serverInfo())) };
      }
      case 'tasks/update': {
        const p = decodeUpdateTaskEnvelope(params);
        requireDeclared(p.meta);
        const { mcp } = await this.own(p.taskId, call);
        // Only answers to outstanding keys are taken, and only those must be well-formed answers.
        const open = outstanding(mcp);
        const taken = Object.fromEntries(Object.entries(p.inputResponses).filter(([k]) => k in open));
        await this.answer(p.taskId, decodeInputResponses(taken, 'params.inputResponses'));
        return { result: ackResult() };
      }
      case 'tasks/cancel': {
        const p = decodeTaskIdParams(params, true);
        requireDeclared(p.meta!);
        await this.own(p.taskId, call);
        await this.cancel(p.taskId);
        return { result: ackResult() };
      }
      case 'subscriptions/listen':
        return this.listen(params, call);
      default:
        throw methodNotFound(method);
    }
  }

  private discover(): object {
    return discoverResult({
      serverInfo: this.serverInfo(),
      capabilities: { tools: {} },
      // Nothing in it depends on the caller; 0 = fetch again whenever needed.
      ttlMs: 0,
      cacheScope: 'public',
    });
  }

  private serverInfo(): { name: string; version: string } {
    return { name: this.o.agent.card.name, version: this.o.agent.card.version };
  }

  private toolList(era: Era): JsonObject[] {
    return this.tools.map((t) => {
      const out: JsonObject = { name: t.name, inputSchema: t.inputSchema ?? { type: 'object' } };
      if (t.title !== undefined) out.title = t.title;
      if (t.description !== undefined) out.description = t.description;
      if (t.outputSchema !== undefined) out.outputSchema = t.outputSchema;
      // 2025-11-25 says per tool whether it may run as a task; the extension has no such flag.
      if (era === 'legacy') out.execution = { taskSupport: t.task ?? 'optional' };
      return out;
    });
  }

  private async callTool(params: Obj | undefined, call: McpCall): Promise<McpAnswer> {
    const modern = call.era === 'modern';
    const p = decodeCallToolParams(params, modern);
    const tool = toolOf(this.o.agent, p.name);
    if (!tool) throw invalidParams('params.name', `unknown tool ${JSON.stringify(p.name)}`);
    const args = p.arguments ?? {};
    if (modern && tool.requiredCapabilities) {
      const declaredCaps = p.meta!.clientCapabilities;
      const missing = Object.keys(tool.requiredCapabilities).filter((k) => {
        const v = declaredCaps[k];
        return typeof v !== 'object' || v === null || Array.isArray(v);
      });
      if (missing.length > 0)
        throw missingRequiredClientCapability(
          Object.fromEntries(missing.map((k) => [k, tool.requiredCapabilities![k]!])) as JsonObject,
        );
    }
    const support = tool.task ?? 'optional';
    const declared = modern ? declaresTasks(p.meta!) : p.task !== undefined;
    if (support === 'required' && !declared)
      throw modern ? missingRequiredClientCapability() : legacyTaskRequired(tool.name);

    let gathered: InputResponses = {};
    if (tool.gather) {
      // MRTR: the rounds run before any task exists; what was collected rides in requestState (the
      // client's own answers, nothing else) and reaches the task only as the tool's `gathered` input.
      const answers: InputResponses = modern
        ? { ...decodeRequestState(p.requestState), ...(p.inputResponses ?? {}) }
        : {};
      const need = tool.gather(args, answers);
      if (need && Object.keys(need).length > 0) {
        if (!modern)
          throw invalidRequest(
            'params',
            `tool ${tool.name} needs input rounds, which need protocol 2026-07-28`,
          );
        return { result: inputRequiredResult(need, encodeRequestState(answers)) };
      }
      gathered = answers;
    }

    const asTask = declared && support !== 'forbidden';
    const record = await this.create(tool, args, gathered, call, asTask ? 'task' : 'sync');
    const mcp = mcpStateOf(record)!;
    if (asTask) {
      const fields = taskFieldsOf(record, mcp);
      return { result: modern ? createTaskResult(fields) : legacyCreateTaskResult(fields) };
    }
    return { result: await this.syncResult(record.id, modern, call.signal) };
  }

  /**
   * Creates the task durably (the store call resolves once it is committed, so a tasks/get that follows
   * the answer finds it) and starts the tool.
   */
  private async create(
    tool: ToolDefinition,
    args: JsonObject,
    gathered: InputResponses,
    call: McpCall,
    mode: 'task' | 'sync',
  ): Promise<AgentTaskRecord> {
    const { clock, random, store, executions, writer } = this.o;
    const now = clock.now();
    const id = newId(clock, random, 'task_');
    const contextId = newId(clock, random, 'ctx_');
    const messageId = newId(clock, random, 'msg_');
    const input: ToolCallInput = { tool: tool.name, arguments: args, gathered };
    const trigger: Message = {
      messageId,
      role: 'ROLE_USER',
      parts: [{ data: input as unknown as JsonObject }],
      taskId: id,
      contextId,
    };
    const task: A2ATask = {
      id,
      contextId,
      status: { state: 'TASK_STATE_SUBMITTED', timestamp: toIso(now) },
      history: [trigger],
      artifacts: [],
      metadata: { [TOOL_KIND]: tool.name },
    };
    const mcp: McpTaskState = {
      tool: tool.name,
      mode,
      era: call.era,
      ttlMs: this.o.ttlMs,
      pollIntervalMs: this.o.pollIntervalMs,
    };
    const executor: ExecutorState = {
      inputs: [],
      runs: 0,
      host: this.o.liveness.hostId,
      pushConfigs: false,
      mcp,
    };
    const { record, first } = newTaskRecord({ id, scope: call, contextId, task, executor, now });
    const result = await store.createAgentTask(
      record,
      messageId,
      [{ taskId: id, at: now, payload: first }],
      [],
    );
    writer.prime(result.task);
    executions.start(result.task, false);
    return result.task;
  }

  /**
   * A call answered in its own request: waits for the task to stop. Input cannot be asked for here
   * (the client did not take a task, and the tool is past its MRTR rounds): the task is cancelled and
   * the call answered with a tool error saying so. A client that goes away cancels the work.
   */
  private async syncResult(taskId: string, modern: boolean, signal: AbortSignal): Promise<object> {
    let stopped = false;
    try {
      for await (const event of this.o.feed.events(taskId, 0, signal)) {
        const state = payloadState(event.payload as StoredEvent);
        if (state && (isTerminalTaskState(state) || state === 'TASK_STATE_INPUT_REQUIRED')) {
          stopped = true;
          break;
        }
      }
    } finally {
      if (!stopped) await this.cancel(taskId).catch(() => undefined);
    }
    const record = (await this.o.store.getAgentTask(taskId))!;
    const mcp = mcpStateOf(record)!;
    if (record.state === 'TASK_STATE_INPUT_REQUIRED') {
      await this.cancel(taskId);
      const text = 'This tool asks for input while it runs; call it with the tasks extension declared.';
      return toolAnswer({ content: [{ type: 'text', text }], isError: true }, modern);
    }
    if (record.state === 'TASK_STATE_COMPLETED') return toolAnswer(mcp.result ?? { content: [] }, modern);
    if (record.state === 'TASK_STATE_CANCELED')
      throw new RpcFailure({ code: -32603, message: 'The call was cancelled' });
    throw new RpcFailure(failedError(record, mcp));
  }

  /** The caller's MCP task, or -32602 (unknown, foreign, not an MCP task, or expired: one answer). */
  private async own(taskId: string, call: McpCall): Promise<{ record: AgentTaskRecord; mcp: McpTaskState }> {
    const record = await this.o.store.getAgentTask(taskId, scopeOf(call));
    const mcp = record && mcpStateOf(record);
    if (!record || !mcp || mcp.mode !== 'task') throw taskNotFound();
    if (isExpired(record, mcp, this.o.clock.now())) throw taskNotFound(true);
    return { record, mcp };
  }

  /**
   * tasks/update: takes the answers to keys still outstanding (others are ignored, as the extension
   * says), written before the acknowledgement so the next tasks/get shows them (read-your-writes).
   * When the last key of the round is answered, the round's answers become the task's next input,
   * exactly as an A2A follow-up answers askInput (a2a-service.ts followUp).
   */
  private async answer(taskId: string, responses: InputResponses): Promise<void> {
    const { writer, liveness, executions, clock, random } = this.o;
    const current = await this.o.store.getAgentTask(taskId);
    if (!current) return;
    const me = liveness.hostId;
    const runner = executorStateOf(current).host;
    const takeOver = runner !== me && !(await liveness.isAlive(runner));
    let completed = false;
    const result = await writer.update(taskId, (d) => {
      const mcp = d.executor.mcp;
      const pending = d.executor.pendingInput;
      if (d.task.status.state !== 'TASK_STATE_INPUT_REQUIRED' || !pending || !mcp?.requests) return null;
      const open = outstanding(mcp);
      const taken = Object.keys(responses).filter((k) => k in open);
      if (taken.length === 0) return null;
      const answers = { ...(mcp.answers ?? {}) };
      for (const k of taken) answers[k] = responses[k];
      if (Object.keys(open).length > taken.length) {
        d.executor.mcp = { ...mcp, answers };
        return { events: [] };
      }
      const message: Message = {
        messageId: newId(clock, random, 'msg_'),
        role: 'ROLE_USER',
        parts: [{ data: answers as JsonObject }],
        taskId: d.task.id,
        contextId: d.task.contextId,
      };
      d.executor.inputs = d.executor.inputs.slice();
      d.executor.inputs[pending.index] = message;
      delete d.executor.pendingInput;
      const { requests: _r, answers: _a, ...rest } = mcp;
      d.executor.mcp = rest;
      if (takeOver && d.executor.host === runner) d.executor.host = me;
      setStatus(d.task, 'TASK_STATE_WORKING', clock.now());
      completed = true;
      return { events: [statusEvent(d.task)] };
    });
    if (completed && result.written && executorStateOf(result.record).host === me) {
      const exec = executorStateOf(result.record);
      executions.answered(result.record, exec.inputs[exec.inputs.length - 1]!);
    }
  }

  /** Cancel is cooperative and idempotent: a terminal task stays as it is. */
  private async cancel(taskId: string): Promise<boolean> {
    const result = await this.o.writer.update(taskId, (d) => {
      if (isTerminalTaskState(d.task.status.state)) return null;
      delete d.executor.pendingInput;
      if (d.executor.mcp) {
        const { requests: _r, answers: _a, ...rest } = d.executor.mcp;
        d.executor.mcp = rest;
      }
      setStatus(d.task, 'TASK_STATE_CANCELED', this.o.clock.now());
      return { events: [statusEvent(d.task)] };
    });
    if (result.written) this.o.executions.abort(taskId, 'canceled');
    return result.written;
  }

  /**
   * subscriptions/listen: the acknowledgement first, naming the task ids accepted (the caller's live
   * MCP tasks; others are left out, not refused, so the answer reveals nothing), then each accepted
   * task's current DetailedTask and one `notifications/tasks` per change, until the client goes away.
   */
  private async listen(params: Obj | undefined, call: McpCall): Promise<McpAnswer> {
    const p = decodeSubscriptionsListenParams(params);
    const wanted = p.notifications.taskIds;
    if (wanted !== undefined) requireDeclared(p.meta!);
    const accepted: string[] = [];
    for (const id of new Set(wanted ?? [])) {
      try {
        await this.own(id, call);
        accepted.push(id);
      } catch (err) {
        if (!(err instanceof McpError)) throw err;
      }
    }
    const subscriptionId = newId(this.o.clock, this.o.random, 'sub_');
    const ack = subscriptionAcknowledged(subscriptionId, accepted);
    if (wanted === undefined) (ack.params as { notifications: JsonObject }).notifications = {};
    return { stream: this.notifications(ack, accepted, subscriptionId, call) };
  }

  private async *notifications(
    ack: object,
    taskIds: string[],
    subscriptionId: string,
    call: McpCall,
  ): AsyncGenerator<object> {
    yield ack;
    if (taskIds.length === 0) {
      await new Promise<void>((resolve) => {
        if (call.signal.aborted) resolve();
        call.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      return;
    }
    // One merged queue of "task X changed" wake-ups; each is answered with the task as tasks/get sees it.
    const changed: string[] = [...taskIds];
    let wake: (() => void) | undefined;
    const watchers = taskIds.map(async (id) => {
      for await (const _event of this.o.feed.events(id, 0, call.signal)) {
        changed.push(id);
        wake?.();
      }
    });
    const done = Promise.allSettled(watchers);
    const last = new Map<string, string>();
    while (!call.signal.aborted) {
      while (changed.length > 0) {
        const id = changed.shift()!;
        const record = await this.o.store.getAgentTask(id);
        const mcp = record && mcpStateOf(record);
        if (!record || !mcp) continue;
        const frame = taskNotification(detailedTaskOf(record, mcp), subscriptionId);
        const text = JSON.stringify(frame.params);
        if (last.get(id) === text) continue;
        last.set(id, text);
        yield frame;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (call.signal.aborted) resolve();
        call.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      wake = undefined;
    }
    await done;
  }

  // ---------------------------------------------------------------- 2025-11-25 and older

  private async legacy(method: string, params: Obj | undefined, call: McpCall): Promise<McpAnswer> {
    checkTaskMethod(method, 'legacy');
    switch (method) {
      case 'initialize': {
        const p = decodeInitializeParams(params);
        return {
          result: {
            protocolVersion: negotiateInitializeVersion(p.protocolVersion),
            capabilities: { tools: {}, tasks: legacyServerTasksCapability() },
            serverInfo: this.serverInfo(),
          },
        };
      }
      case 'ping':
        return { result: {} };
      case 'tools/list':
        return { result: { tools: this.toolList('legacy') } };
      case 'tools/call':
        return this.callTool(params, call);
      case 'tasks/get': {
        const { record, mcp } = await this.own(decodeTaskIdParams(params, false).taskId, call);
        return { result: legacyTaskOf(record, mcp) };
      }
      case 'tasks/result': {
        const taskId = decodeTaskIdParams(params, false).taskId;
        const { record } = await this.own(taskId, call);
        if (call.acceptsStream && !isTerminalTaskState(record.state))
          return { stream: this.legacyResultStream(taskId, call) };
        return { result: await this.legacyResult(taskId, call) };
      }
      case 'tasks/list':
        return { result: await this.legacyList(params, call) };
      case 'tasks/cancel': {
        const taskId = decodeTaskIdParams(params, false).taskId;
        const { record } = await this.own(taskId, call);
        // 2025-11-25: cancelling a terminal task is -32602, and the answer is the cancelled task.
        if (isTerminalTaskState(record.state))
          throw invalidParams(
            'params.taskId',
            `Cannot cancel task in terminal status: ${legacyTaskOf(record, mcpStateOf(record)!).status}`,
          );
        await this.cancel(taskId);
        const { record: after, mcp } = await this.own(taskId, call);
        return { result: legacyTaskOf(after, mcp) };
      }
      default:
        throw methodNotFound(method);
    }
  }

  /** tasks/result blocks until the task is terminal, then answers what tools/call would have. */
  private async legacyResult(taskId: string, call: McpCall): Promise<object> {
    let { record, mcp } = await this.own(taskId, call);
    if (!isTerminalTaskState(record.state)) {
      for await (const event of this.o.feed.events(taskId, 0, call.signal)) {
        const state = payloadState(event.payload as StoredEvent);
        if (state && isTerminalTaskState(state)) break;
      }
      ({ record, mcp } = await this.own(taskId, call));
    }
    if (record.state === 'TASK_STATE_COMPLETED')
      return legacyTaskPayload(taskId, (mcp.result ?? { content: [] }) as JsonObject);
    if (record.state === 'TASK_STATE_CANCELED')
      throw new RpcFailure({ code: -32603, message: `Task ${taskId} was cancelled` });
    if (!isTerminalTaskState(record.state))
      throw new RpcFailure({ code: -32603, message: 'The request was aborted' });
    throw new RpcFailure(failedError(record, mcp));
  }

  /**
   * tasks/result on an SSE answer: `notifications/tasks/status` for each status the task takes while
   * the client waits (2025-11-25 sends them where it can; a stateless server can only on a response
   * stream), then the response itself.
   */
  private async *legacyResultStream(taskId: string, call: McpCall): AsyncGenerator<object> {
    let last = '';
    const status = async (): Promise<AgentTaskRecord | undefined> => {
      const record = await this.o.store.getAgentTask(taskId);
      const frame = record && this.statusNotification(record);
      const text = JSON.stringify(frame);
      if (frame && text !== last) {
        last = text;
        pending.push(frame);
      }
      return record;
    };
    const pending: object[] = [];
    await status();
    yield* pending.splice(0);
    for await (const event of this.o.feed.events(taskId, 0, call.signal)) {
      const state = payloadState(event.payload as StoredEvent);
      if (!state) continue;
      await status();
      yield* pending.splice(0);
      if (isTerminalTaskState(state)) break;
    }
    if (call.signal.aborted) return;
    try {
      yield { jsonrpc: '2.0', id: call.id, result: await this.legacyResult(taskId, call) };
    } catch (err) {
      if (err instanceof RpcFailure) yield { jsonrpc: '2.0', id: call.id, error: err.error };
      else if (err instanceof McpError) yield { jsonrpc: '2.0', id: call.id, error: err.toJsonRpc() };
      else throw err;
    }
  }

  /** tasks/list: the caller's MCP tasks, newest first, paged with the store's cursor. */
  private async legacyList(params: Obj | undefined, call: McpCall): Promise<object> {
    const p = decodeLegacyListTasksParams(params);
    const page = await this.o.store
      .listAgentTasks({
        ...scopeOf(call),
        pageSize: 50,
        ...(p.cursor !== undefined ? { cursor: p.cursor } : {}),
      })
      .catch((err: unknown) => {
        if ((err as { code?: string }).code === 'invalid_argument')
          throw invalidParams('params.cursor', 'is not a cursor this server issued');
        throw err;
      });
    const tasks = page.tasks.flatMap((r) => {
      const mcp = mcpStateOf(r);
      return mcp && mcp.mode === 'task' && !isExpired(r, mcp, this.o.clock.now())
        ? [legacyTaskOf(r, mcp)]
        : [];
    });
    return page.nextCursor ? { tasks, nextCursor: page.nextCursor } : { tasks };
  }

  /** The legacy status notification for a task (sent on a tasks/result SSE stream). */
  statusNotification(record: AgentTaskRecord): object | undefined {
    const mcp = mcpStateOf(record);
    return mcp ? legacyTaskStatusNotification(taskFieldsOf(record, mcp)) : undefined;
  }
}

function scopeOf(call: McpCall): AgentScope {
  return { owner: call.owner, tenant: call.tenant };
}

function requireDeclared(meta: RequestMeta): void {
  if (!declaresTasks(meta)) throw missingRequiredClientCapability();
}

function serverMeta(info: { name: string; version: string }): JsonObject {
  return { [META.serverInfo]: { ...info } };
}

function toolAnswer(result: Record<string, unknown>, modern: boolean): object {
  return modern ? { ...result, resultType: 'complete' } : result;
}

/**
 * MRTR requestState: the answers collected in earlier rounds, base64url JSON. It holds only what this
 * client itself sent, so a client that edits it can claim nothing it could not have answered anyway.
 */
function encodeRequestState(answers: InputResponses): string {
  return Buffer.from(JSON.stringify(answers), 'utf8').toString('base64url');
}

/**
 * The answers of the rounds before, as encodeRequestState wrote them: the client's own answers and
 * nothing the server vouches for, so a state the client made itself is as good as one echoed back (it
 * could send the same answers as inputResponses). What does not decode to an answers object is refused.
 */
function decodeRequestState(state: string | undefined): InputResponses {
  if (state === undefined || state === '') return {};
  try {
    const v = JSON.parse(Buffer.from(state, 'base64url').toString('utf8')) as unknown;
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as InputResponses;
  } catch {
    // falls through to the refusal
  }
  throw invalidParams(
    'params.requestState',
    "is not a request state: send back the previous round's requestState unchanged, or leave it out to start over",
  );
}
