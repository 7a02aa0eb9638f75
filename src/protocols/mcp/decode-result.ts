import { invalidResult } from './errors.ts';
import {
  type Fail,
  type Obj,
  int,
  json,
  jsonObj,
  obj,
  optInt,
  optJsonObj,
  optStr,
  own,
  str,
  strArray,
} from './fields.ts';
import { decodeInputRequests } from './input.ts';
import { decodeImplementation } from './decode.ts';
import {
  TASK_STATUSES,
  type AckResult,
  type CallToolResult,
  type CreateTaskResult,
  type DetailedTask,
  type DiscoverResult,
  type GetTaskResult,
  type InputRequiredResult,
  type JsonObject,
  type JsonRpcErrorObject,
  type ServerCapabilities,
  type Task,
  type TaskStatus,
} from './types.ts';

/**
 * Decoders for what a 2026-07-28 server answers: the task shapes of the tasks extension, the three
 * possible answers to `tools/call`, `server/discover`, and `notifications/tasks`. Errors are
 * InvalidResult naming the field (`result.ttlMs`). Where servers in the field are known to
 * leave `resultType` out (plain results and embedded task results), a missing one means `"complete"`;
 * the `tasks/*` methods exist only in this era, so their results must carry it.
 */

const fail: Fail = invalidResult;

function resultType(o: Obj, path: string, required: boolean): string {
  const v = own(o, 'resultType');
  if (v === undefined && !required) return 'complete';
  return str(o, 'resultType', path, fail);
}

function meta(o: Obj, path: string): { _meta?: JsonObject } {
  const m = optJsonObj(o, '_meta', path, fail);
  return m === undefined ? {} : { _meta: m };
}

/** The common task fields, extension spelling. `ttl`/`pollInterval` (legacy names) are refused. */
export function decodeTask(v: unknown, path = 'result'): Task {
  const o = obj(v, path, fail);
  for (const legacy of ['ttl', 'pollInterval']) {
    if (own(o, legacy) !== undefined)
      throw fail(`${path}.${legacy}`, 'legacy field; expected ttlMs/pollIntervalMs');
  }
  const status = str(o, 'status', path, fail);
  if (!(TASK_STATUSES as readonly string[]).includes(status)) {
    throw fail(`${path}.status`, `expected one of ${TASK_STATUSES.join(', ')}`);
  }
  const ttl = own(o, 'ttlMs');
  if (ttl === undefined) throw fail(`${path}.ttlMs`, 'required (null for unlimited)');
  const task: Task = {
    taskId: str(o, 'taskId', path, fail),
    status: status as TaskStatus,
    createdAt: str(o, 'createdAt', path, fail),
    lastUpdatedAt: str(o, 'lastUpdatedAt', path, fail),
    ttlMs: ttl === null ? null : int(ttl, `${path}.ttlMs`, 0, fail),
  };
  const msg = optStr(o, 'statusMessage', path, fail);
  if (msg !== undefined) task.statusMessage = msg;
  const poll = optInt(o, 'pollIntervalMs', path, 0, fail);
  if (poll !== undefined) task.pollIntervalMs = poll;
  return task;
}

export function decodeRpcError(v: unknown, path: string, f: Fail = fail): JsonRpcErrorObject {
  const o = obj(v, path, f);
  const out: JsonRpcErrorObject = {
    code: int(own(o, 'code'), `${path}.code`, Number.MIN_SAFE_INTEGER, f),
    message: str(o, 'message', path, f),
  };
  if (own(o, 'data') !== undefined) out.data = json(o.data, `${path}.data`, f);
  return out;
}

/** A `DetailedTask`: the status decides which of `inputRequests`, `result`, `error` must be present. */
export function decodeDetailedTask(v: unknown, path = 'result'): DetailedTask {
  const task = decodeTask(v, path);
  const o = v as Obj;
  switch (task.status) {
    case 'input_required':
      return {
        ...task,
        status: 'input_required',
        inputRequests: decodeInputRequests(own(o, 'inputRequests'), `${path}.inputRequests`, fail),
      };
    case 'completed':
      return { ...task, status: 'completed', result: jsonObj(own(o, 'result'), `${path}.result`, fail) };
    case 'failed':
      return { ...task, status: 'failed', error: decodeRpcError(own(o, 'error'), `${path}.error`) };
    case 'working':
      return { ...task, status: 'working' };
    case 'cancelled':
      return { ...task, status: 'cancelled' };
  }
}

/** Flat `Result & Task` with `resultType: "task"`; none of the fields that belong to later states. */
export function decodeCreateTaskResult(v: unknown, path = 'result'): CreateTaskResult {
  const o = obj(v, path, fail);
  if (resultType(o, path, true) !== 'task') throw fail(`${path}.resultType`, 'expected "task"');
  for (const k of ['result', 'error', 'inputRequests', 'requestState']) {
    if (own(o, k) !== undefined) throw fail(`${path}.${k}`, 'must not appear on CreateTaskResult');
  }
  return { ...decodeTask(o, path), resultType: 'task', ...meta(o, path) };
}

export function decodeGetTaskResult(v: unknown, path = 'result'): GetTaskResult {
  const o = obj(v, path, fail);
  if (resultType(o, path, true) !== 'complete') throw fail(`${path}.resultType`, 'expected "complete"');
  return { ...decodeDetailedTask(o, path), resultType: 'complete', ...meta(o, path) };
}

/** The empty acknowledgement of `tasks/update` and `tasks/cancel`. */
export function decodeAckResult(v: unknown, path = 'result'): AckResult {
  const o = obj(v, path, fail);
  if (resultType(o, path, true) !== 'complete') throw fail(`${path}.resultType`, 'expected "complete"');
  return { resultType: 'complete', ...meta(o, path) };
}

export function decodeInputRequiredResult(v: unknown, path = 'result'): InputRequiredResult {
  const o = obj(v, path, fail);
  if (resultType(o, path, true) !== 'input_required')
    throw fail(`${path}.resultType`, 'expected "input_required"');
  const out: InputRequiredResult = { resultType: 'input_required', ...meta(o, path) };
  if (own(o, 'inputRequests') !== undefined)
    out.inputRequests = decodeInputRequests(o.inputRequests, `${path}.inputRequests`, fail);
  const state = optStr(o, 'requestState', path, fail);
  if (state !== undefined) out.requestState = state;
  if (out.inputRequests === undefined && out.requestState === undefined) {
    throw fail(`${path}.inputRequests`, 'an input_required result needs inputRequests or requestState');
  }
  return out;
}

export function decodeCallToolResult(v: unknown, path = 'result'): CallToolResult {
  const o = obj(v, path, fail);
  if (resultType(o, path, false) !== 'complete') throw fail(`${path}.resultType`, 'expected "complete"');
  const content = own(o, 'content');
  if (!Array.isArray(content)) throw fail(`${path}.content`, 'expected an array');
  const out: CallToolResult = {
    resultType: 'complete',
    content: content.map((c, i) => jsonObj(c, `${path}.content[${i}]`, fail)),
    ...meta(o, path),
  };
  const sc = optJsonObj(o, 'structuredContent', path, fail);
  if (sc !== undefined) out.structuredContent = sc;
  const isError = own(o, 'isError');
  if (isError !== undefined) {
    if (typeof isError !== 'boolean') throw fail(`${path}.isError`, 'expected a boolean');
    out.isError = isError;
  }
  return out;
}

/** Every answer a tasks-declaring client must accept from `tools/call`. */
export type ToolCallAnswer =
  | { kind: 'complete'; result: CallToolResult }
  | { kind: 'input_required'; result: InputRequiredResult }
  | { kind: 'task'; result: CreateTaskResult };

/**
 * `declaredTasks` is whether that request declared the extension: a task answered to a request that
 * did not is an invalid response, not a task to track.
 */
export function decodeToolCallAnswer(v: unknown, declaredTasks: boolean, path = 'result'): ToolCallAnswer {
  const o = obj(v, path, fail);
  const type = resultType(o, path, false);
  if (type === 'task') {
    if (!declaredTasks)
      throw fail(
        `${path}.resultType`,
        '"task" answered to a request that did not declare the tasks extension',
      );
    return { kind: 'task', result: decodeCreateTaskResult(o, path) };
  }
  if (type === 'input_required')
    return { kind: 'input_required', result: decodeInputRequiredResult(o, path) };
  if (type === 'complete') return { kind: 'complete', result: decodeCallToolResult(o, path) };
  throw fail(`${path}.resultType`, `unsupported result type ${JSON.stringify(type)}`);
}

export function decodeDiscoverResult(v: unknown, path = 'result'): DiscoverResult {
  const o = obj(v, path, fail);
  if (resultType(o, path, false) !== 'complete') throw fail(`${path}.resultType`, 'expected "complete"');
  const out: DiscoverResult = {
    resultType: 'complete',
    supportedVersions: strArray(own(o, 'supportedVersions'), `${path}.supportedVersions`, fail),
    capabilities: jsonObj(own(o, 'capabilities'), `${path}.capabilities`, fail) as ServerCapabilities,
    ...meta(o, path),
  };
  if (own(o, 'serverInfo') !== undefined)
    out.serverInfo = decodeImplementation(o.serverInfo, `${path}.serverInfo`, fail);
  const instructions = optStr(o, 'instructions', path, fail);
  if (instructions !== undefined) out.instructions = instructions;
  const ttl = optInt(o, 'ttlMs', path, 0, fail);
  if (ttl !== undefined) out.ttlMs = ttl;
  const scope = optStr(o, 'cacheScope', path, fail);
  if (scope !== undefined) out.cacheScope = scope;
  return out;
}

/** `notifications/tasks` params: the same `DetailedTask` `tasks/get` would return. */
export function decodeTaskNotificationParams(
  v: unknown,
  path = 'params',
): DetailedTask & { _meta?: JsonObject } {
  const o = obj(v, path, fail);
  return { ...decodeDetailedTask(o, path), ...meta(o, path) };
}

/** `notifications/subscriptions/acknowledged` params: the task ids the server accepted. */
export function decodeSubscriptionAcknowledged(v: unknown, path = 'params'): { taskIds: string[] } {
  const o = obj(v, path, fail);
  const n = optJsonObj(o, 'notifications', path, fail);
  const ids = n === undefined ? undefined : own(n, 'taskIds');
  return { taskIds: ids === undefined ? [] : strArray(ids, `${path}.notifications.taskIds`, fail) };
}
