import { McpError } from './errors.ts';
import {
  META,
  MODERN_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  TASKS_EXTENSION,
  type AckResult,
  type CallToolResult,
  type CreateTaskResult,
  type DetailedTask,
  type DiscoverResult,
  type GetTaskResult,
  type Implementation,
  type InputRequests,
  type InputRequiredResult,
  type JsonObject,
  type JsonRpcId,
  type JsonValue,
  type ServerCapabilities,
  type Task,
} from './types.ts';

/**
 * Encoders for what a 2026-07-28 server sends. Every result carries an explicit `resultType`: a
 * missing one is read as `"complete"` by clients, which turns a forgotten task into a fake empty
 * success. Output is checked against the extension's schema in test/protocols/mcp.
 */

export function resultResponse(
  id: JsonRpcId,
  result: object,
): { jsonrpc: '2.0'; id: JsonRpcId; result: object } {
  return { jsonrpc: '2.0', id, result };
}

/** Conformance requires positive integers for these; zero would mean "expire now" / "poll in a loop". */
function positive(v: number, field: string): number {
  if (!Number.isSafeInteger(v) || v <= 0) {
    throw new McpError('InternalError', 'Internal error', undefined, field);
  }
  return v;
}

function taskFields(t: Task): Task {
  const out: Task = {
    taskId: t.taskId,
    status: t.status,
    createdAt: t.createdAt,
    lastUpdatedAt: t.lastUpdatedAt,
    ttlMs: t.ttlMs === null ? null : positive(t.ttlMs, 'ttlMs'),
  };
  if (t.statusMessage !== undefined) out.statusMessage = t.statusMessage;
  if (t.pollIntervalMs !== undefined) out.pollIntervalMs = positive(t.pollIntervalMs, 'pollIntervalMs');
  return out;
}

/** Flat, and only the task's fields: never a result, error, input requests or MRTR state. */
export function createTaskResult(t: Task, meta?: JsonObject): CreateTaskResult {
  const out: CreateTaskResult = { ...taskFields(t), resultType: 'task' };
  if (meta !== undefined) out._meta = meta;
  return out;
}

/**
 * The result a completed task embeds: stamped `resultType: "complete"` (the official requester rejects
 * it otherwise) and without the legacy `related-task` meta, which this era removed.
 */
export function embeddedResult(result: JsonObject): JsonObject {
  const out: JsonObject = { ...result, resultType: 'complete' };
  const m = result._meta;
  if (m !== null && typeof m === 'object' && !Array.isArray(m) && META.relatedTask in m) {
    const rest: JsonObject = { ...m };
    delete rest[META.relatedTask];
    if (Object.keys(rest).length === 0) delete out._meta;
    else out._meta = rest;
  }
  return out;
}

/** The `DetailedTask` for `tasks/get` and `notifications/tasks`: only the fields its status allows. */
export function detailedTask(t: DetailedTask): DetailedTask {
  const base = taskFields(t);
  switch (t.status) {
    case 'input_required':
      return { ...base, status: 'input_required', inputRequests: t.inputRequests };
    case 'completed':
      return { ...base, status: 'completed', result: embeddedResult(t.result) };
    case 'failed':
      return { ...base, status: 'failed', error: t.error };
    case 'working':
      return { ...base, status: 'working' };
    case 'cancelled':
      return { ...base, status: 'cancelled' };
  }
}

export function getTaskResult(t: DetailedTask, meta?: JsonObject): GetTaskResult {
  const out: GetTaskResult = { ...detailedTask(t), resultType: 'complete' };
  if (meta !== undefined) out._meta = meta;
  return out;
}

/** `tasks/update` and `tasks/cancel`: an acknowledgement with no task fields. */
export function ackResult(): AckResult {
  return { resultType: 'complete' };
}

export function inputRequiredResult(
  inputRequests: InputRequests | undefined,
  requestState?: string,
): InputRequiredResult {
  const out: InputRequiredResult = { resultType: 'input_required' };
  if (inputRequests !== undefined) out.inputRequests = inputRequests;
  if (requestState !== undefined) out.requestState = requestState;
  return out;
}

export function callToolResult(
  content: JsonValue[],
  options: { isError?: boolean; structuredContent?: JsonObject } = {},
): CallToolResult {
  const out: CallToolResult = { resultType: 'complete', content };
  if (options.structuredContent !== undefined) out.structuredContent = options.structuredContent;
  if (options.isError !== undefined) out.isError = options.isError;
  return out;
}

/** Advertises exactly `{}` for the extension: the official requester treats any key in it as "no". */
export function discoverResult(options: {
  serverInfo: Implementation;
  capabilities?: ServerCapabilities;
  tasks?: boolean;
  instructions?: string;
  ttlMs?: number;
  /** Required with `ttlMs` by the 2026-07-28 schema (CacheableResult). */
  cacheScope?: 'public' | 'private';
}): DiscoverResult {
  const caps: ServerCapabilities = { ...(options.capabilities ?? {}) };
  if (options.tasks !== false) caps.extensions = { ...(caps.extensions ?? {}), [TASKS_EXTENSION]: {} };
  const out: DiscoverResult = {
    resultType: 'complete',
    supportedVersions: [...SUPPORTED_PROTOCOL_VERSIONS],
    capabilities: caps,
    serverInfo: options.serverInfo,
    _meta: { [META.serverInfo]: { ...options.serverInfo } },
  };
  if (options.instructions !== undefined) out.instructions = options.instructions;
  if (options.ttlMs !== undefined) out.ttlMs = options.ttlMs;
  if (options.cacheScope !== undefined) out.cacheScope = options.cacheScope;
  return out;
}

export interface Notification {
  jsonrpc: '2.0';
  method: string;
  params: JsonObject;
}

/** One `notifications/tasks` frame on a `subscriptions/listen` stream. */
export function taskNotification(t: DetailedTask, subscriptionId: string): Notification {
  return {
    jsonrpc: '2.0',
    method: 'notifications/tasks',
    params: {
      ...(detailedTask(t) as unknown as JsonObject),
      _meta: { [META.subscriptionId]: subscriptionId },
    },
  };
}

/** The first frame of a `subscriptions/listen` stream: the task ids the server accepted. */
export function subscriptionAcknowledged(subscriptionId: string, taskIds: string[]): Notification {
  return {
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { notifications: { taskIds }, _meta: { [META.subscriptionId]: subscriptionId } },
  };
}

/**
 * The `_meta` a modern request carries. `tasks` declares the extension for this request only; a
 * server must not carry it over to the next.
 */
export function requestMeta(options: {
  clientInfo?: Implementation;
  capabilities?: JsonObject;
  tasks?: boolean;
  protocolVersion?: string;
}): JsonObject {
  const caps: JsonObject = { ...(options.capabilities ?? {}) };
  if (options.tasks === true) {
    const ext = caps.extensions;
    const base = ext !== null && typeof ext === 'object' && !Array.isArray(ext) ? ext : {};
    caps.extensions = { ...base, [TASKS_EXTENSION]: {} };
  }
  const out: JsonObject = {
    [META.protocolVersion]: options.protocolVersion ?? MODERN_PROTOCOL_VERSION,
    [META.clientCapabilities]: caps,
  };
  if (options.clientInfo !== undefined) out[META.clientInfo] = { ...options.clientInfo };
  return out;
}
