import { invalidParams, invalidResult } from './errors.ts';
import { type Fail, type Obj, int, jsonObj, obj, optInt, optJsonObj, optStr, own, str } from './fields.ts';
import { decodeImplementation } from './decode.ts';
import {
  META,
  TASK_STATUSES,
  type InitializeParams,
  type InitializeResult,
  type JsonObject,
  type LegacyCreateTaskResult,
  type LegacyListTasksParams,
  type LegacyListTasksResult,
  type LegacyTask,
  type LegacyTaskStatusParams,
  type LegacyTasksCapability,
  type Task,
  type TaskStatus,
} from './types.ts';

/**
 * The 2025-11-25 experimental tasks, as `@modelcontextprotocol/sdk` 1.x speaks them: `initialize`
 * with a `tasks` capability, `task` on `tools/call`, a nested `{task}` create result, `ttl` and
 * `pollInterval` (not the extension's `…Ms` names), `tasks/result`, paged `tasks/list`, and
 * `notifications/tasks/status`. Decoders and encoders together, since this generation is frozen.
 */

function legacyTask(v: unknown, path: string, fail: Fail): LegacyTask {
  const o = obj(v, path, fail);
  const status = str(o, 'status', path, fail);
  if (!(TASK_STATUSES as readonly string[]).includes(status)) {
    throw fail(`${path}.status`, `expected one of ${TASK_STATUSES.join(', ')}`);
  }
  const ttl = own(o, 'ttl');
  if (ttl === undefined) throw fail(`${path}.ttl`, 'required (null for unlimited)');
  const t: LegacyTask = {
    taskId: str(o, 'taskId', path, fail),
    status: status as TaskStatus,
    createdAt: str(o, 'createdAt', path, fail),
    lastUpdatedAt: str(o, 'lastUpdatedAt', path, fail),
    ttl: ttl === null ? null : int(ttl, `${path}.ttl`, 0, fail),
  };
  const msg = optStr(o, 'statusMessage', path, fail);
  if (msg !== undefined) t.statusMessage = msg;
  const poll = optInt(o, 'pollInterval', path, 0, fail);
  if (poll !== undefined) t.pollInterval = poll;
  return t;
}

function withMeta<T extends object>(t: T, o: Obj, path: string, fail: Fail): T & { _meta?: JsonObject } {
  const m = optJsonObj(o, '_meta', path, fail);
  return m === undefined ? t : { ...t, _meta: m };
}

export function decodeLegacyTask(v: unknown, path = 'result'): LegacyTask {
  return legacyTask(v, path, invalidResult);
}

export function decodeLegacyCreateTaskResult(v: unknown, path = 'result'): LegacyCreateTaskResult {
  const o = obj(v, path, invalidResult);
  return withMeta(
    { task: legacyTask(own(o, 'task'), `${path}.task`, invalidResult) },
    o,
    path,
    invalidResult,
  );
}

/** `tasks/get` and `tasks/cancel` both answer the bare `Task` in this era. */
export function decodeLegacyTaskResult(v: unknown, path = 'result'): LegacyTask & { _meta?: JsonObject } {
  const o = obj(v, path, invalidResult);
  return withMeta(legacyTask(o, path, invalidResult), o, path, invalidResult);
}

export function decodeLegacyListTasksParams(params: Obj | undefined): LegacyListTasksParams {
  if (params === undefined) return {};
  const cursor = optStr(obj(params, 'params'), 'cursor', 'params');
  return cursor === undefined ? {} : { cursor };
}

export function decodeLegacyListTasksResult(v: unknown, path = 'result'): LegacyListTasksResult {
  const o = obj(v, path, invalidResult);
  const tasks = own(o, 'tasks');
  if (!Array.isArray(tasks)) throw invalidResult(`${path}.tasks`, 'expected an array');
  const out: LegacyListTasksResult = withMeta(
    { tasks: tasks.map((t, i) => legacyTask(t, `${path}.tasks[${i}]`, invalidResult)) },
    o,
    path,
    invalidResult,
  );
  const next = optStr(o, 'nextCursor', path, invalidResult);
  if (next !== undefined) out.nextCursor = next;
  return out;
}

export function decodeLegacyTaskStatusParams(v: unknown, path = 'params'): LegacyTaskStatusParams {
  const o = obj(v, path, invalidResult);
  return withMeta(legacyTask(o, path, invalidResult), o, path, invalidResult);
}

function tasksCapability(v: unknown, path: string, fail: Fail): LegacyTasksCapability | undefined {
  if (v === undefined) return undefined;
  return jsonObj(v, path, fail) as LegacyTasksCapability;
}

export function decodeInitializeParams(params: Obj | undefined): InitializeParams {
  const p = obj(params, 'params');
  const capabilities = jsonObj(own(p, 'capabilities'), 'params.capabilities');
  tasksCapability(own(capabilities, 'tasks'), 'params.capabilities.tasks', invalidParams);
  return {
    protocolVersion: str(p, 'protocolVersion', 'params'),
    capabilities,
    clientInfo: decodeImplementation(own(p, 'clientInfo'), 'params.clientInfo'),
  };
}

export function decodeInitializeResult(v: unknown, path = 'result'): InitializeResult {
  const o = obj(v, path, invalidResult);
  const capabilities = jsonObj(own(o, 'capabilities'), `${path}.capabilities`, invalidResult);
  tasksCapability(own(capabilities, 'tasks'), `${path}.capabilities.tasks`, invalidResult);
  const out: InitializeResult = withMeta(
    {
      protocolVersion: str(o, 'protocolVersion', path, invalidResult),
      capabilities,
      serverInfo: decodeImplementation(own(o, 'serverInfo'), `${path}.serverInfo`, invalidResult),
    },
    o,
    path,
    invalidResult,
  );
  const instructions = optStr(o, 'instructions', path, invalidResult);
  if (instructions !== undefined) out.instructions = instructions;
  return out;
}

/** Whether a legacy server said it accepts `task` on `tools/call` (`capabilities.tasks.requests.tools.call`). */
export function legacyServerSupportsToolTasks(capabilities: JsonObject): boolean {
  const tasks = capabilities.tasks;
  if (tasks === null || typeof tasks !== 'object' || Array.isArray(tasks)) return false;
  const call = (tasks as LegacyTasksCapability).requests?.tools?.call;
  return call !== undefined && call !== null && typeof call === 'object';
}

// ---------------------------------------------------------------- encoders

/** The same task in the legacy spelling: `ttl`, `pollInterval`. */
export function toLegacyTask(t: Task): LegacyTask {
  const out: LegacyTask = {
    taskId: t.taskId,
    status: t.status,
    createdAt: t.createdAt,
    lastUpdatedAt: t.lastUpdatedAt,
    ttl: t.ttlMs,
  };
  if (t.statusMessage !== undefined) out.statusMessage = t.statusMessage;
  if (t.pollIntervalMs !== undefined) out.pollInterval = t.pollIntervalMs;
  return out;
}

export function legacyCreateTaskResult(t: Task): LegacyCreateTaskResult {
  return { task: toLegacyTask(t) };
}

/**
 * The `tasks/result` answer: the original result, tagged with the task it belongs to, which this
 * era requires on every task-related message other than `tasks/get|list|cancel`.
 */
export function legacyTaskPayload(taskId: string, result: JsonObject): JsonObject {
  const m = result._meta;
  const meta = m !== null && typeof m === 'object' && !Array.isArray(m) ? m : {};
  return { ...result, _meta: { ...meta, [META.relatedTask]: { taskId } } };
}

export function legacyTaskStatusNotification(t: Task): {
  jsonrpc: '2.0';
  method: 'notifications/tasks/status';
  params: LegacyTask;
} {
  return { jsonrpc: '2.0', method: 'notifications/tasks/status', params: toLegacyTask(t) };
}

/** The capabilities a legacy server advertises at `initialize` when it serves task-augmented tool calls. */
export function legacyServerTasksCapability(): LegacyTasksCapability {
  return { list: {}, cancel: {}, requests: { tools: { call: {} } } };
}
