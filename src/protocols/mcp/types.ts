/**
 * MCP wire types for the two protocol generations taskplane speaks.
 *
 * Terminology:
 * - **era**: `modern` is `2026-07-28` (stateless Streamable HTTP, `server/discover`, per-request
 *   `_meta`, `resultType` on every result, MRTR, tasks as the extension `io.modelcontextprotocol/tasks`);
 *   `legacy` is `2025-11-25` and older (`initialize` and stateful connections, experimental core tasks).
 * - **task**: a durable handle for a `tools/call` that outlives the HTTP request. The receiver (server)
 *   decides per request whether to create one in the modern era; the requester asks for one with the
 *   `task` param in the legacy era.
 * - **MRTR**: multi round-trip requests. A server answers `InputRequiredResult`; the client retries the
 *   original request with `inputResponses` under the same keys and the opaque `requestState`.
 * - **input request key**: the name of one outstanding server→client request, unique over the lifetime
 *   of the task (or the MRTR exchange) that issued it.
 *
 * Field names, method names and values are copied exactly from the spec schemas; the extension's
 * machine-readable schema is kept at test/protocols/mcp/ext-tasks.schema.json.
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export const MODERN_PROTOCOL_VERSION = '2026-07-28';
export const LEGACY_PROTOCOL_VERSION = '2025-11-25';
/** Every version this package can decode, newest first. */
export const SUPPORTED_PROTOCOL_VERSIONS = [
  MODERN_PROTOCOL_VERSION,
  LEGACY_PROTOCOL_VERSION,
  '2025-06-18',
  '2025-03-26',
  '2024-11-05',
] as const;

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** Keys of the per-request `_meta` object (2026-07-28). */
export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
  /** Legacy only: ties a message to its task. Must be absent from modern embedded results. */
  relatedTask: 'io.modelcontextprotocol/related-task',
} as const;

export type JsonRpcId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: JsonObject;
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: JsonObject;
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: JsonValue;
}

export interface Implementation {
  name: string;
  version: string;
  title?: string;
}

// ---------------------------------------------------------------- 2026-07-28 (modern)

export interface ClientCapabilities {
  extensions?: Record<string, JsonObject>;
  [key: string]: JsonValue | undefined;
}

export interface ServerCapabilities {
  extensions?: Record<string, JsonObject>;
  [key: string]: JsonValue | undefined;
}

/** The per-request `_meta` envelope every modern request carries. */
export interface RequestMeta {
  protocolVersion: string;
  clientCapabilities: ClientCapabilities;
  clientInfo?: Implementation;
  /** Every key of `_meta` as sent, including the ones above (progressToken and the like). */
  raw: JsonObject;
}

export type ResultType = 'complete' | 'input_required' | 'task' | (string & {});

export const TASK_STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const TERMINAL_TASK_STATUSES: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);

export const INPUT_METHODS = ['elicitation/create', 'sampling/createMessage', 'roots/list'] as const;
export type InputMethod = (typeof INPUT_METHODS)[number];

/** One outstanding server→client request, keyed in an `InputRequests` map. */
export interface InputRequest {
  method: InputMethod;
  params?: JsonObject;
}
export type InputRequests = Record<string, InputRequest>;

export interface ElicitResult {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, string | number | boolean | string[]>;
}
/** Answer to one input request: ElicitResult, CreateMessageResult or ListRootsResult. */
export type InputResponse = JsonObject;
export type InputResponses = Record<string, InputResponse>;

/** The common fields of every task (extension spelling: `ttlMs`, `pollIntervalMs`). */
export interface Task {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  /** ISO 8601. */
  createdAt: string;
  /** ISO 8601. */
  lastUpdatedAt: string;
  /** Lifetime from `createdAt`; `null` means unlimited. */
  ttlMs: number | null;
  pollIntervalMs?: number;
}

export type WorkingTask = Task & { status: 'working' };
export type InputRequiredTask = Task & { status: 'input_required'; inputRequests: InputRequests };
/** `result` is exactly what the original request would have returned (tool `isError` included). */
export type CompletedTask = Task & { status: 'completed'; result: JsonObject };
/** Only for protocol errors; a tool that ran and failed is `completed`. */
export type FailedTask = Task & { status: 'failed'; error: JsonRpcErrorObject };
export type CancelledTask = Task & { status: 'cancelled' };
export type DetailedTask = WorkingTask | InputRequiredTask | CompletedTask | FailedTask | CancelledTask;

export interface ResultBase {
  resultType: ResultType;
  _meta?: JsonObject;
}

/** Flat: the task's fields at the top level, never `result`, `error`, `inputRequests`, `requestState`. */
export type CreateTaskResult = Task & { resultType: 'task'; _meta?: JsonObject };
export type GetTaskResult = DetailedTask & { resultType: 'complete'; _meta?: JsonObject };
/** The acknowledgement of `tasks/update` and `tasks/cancel`: no task fields. */
export interface AckResult {
  resultType: 'complete';
  _meta?: JsonObject;
}

export interface InputRequiredResult {
  resultType: 'input_required';
  inputRequests?: InputRequests;
  requestState?: string;
  _meta?: JsonObject;
}

export interface CallToolResult {
  resultType: 'complete';
  content: JsonValue[];
  structuredContent?: JsonObject;
  isError?: boolean;
  _meta?: JsonObject;
}

export interface CallToolParams {
  name: string;
  arguments?: JsonObject;
  /** MRTR retry: answers keyed like the `inputRequests` of the previous round. */
  inputResponses?: InputResponses;
  requestState?: string;
  /** Legacy task augmentation; never set when decoded for the modern era. */
  task?: LegacyTaskMetadata;
  meta?: RequestMeta;
}

export interface TaskIdParams {
  taskId: string;
  meta?: RequestMeta;
}

export interface UpdateTaskParams extends TaskIdParams {
  inputResponses: InputResponses;
}

export interface SubscriptionsListenParams {
  notifications: { taskIds?: string[] };
  meta?: RequestMeta;
}

export interface DiscoverResult {
  resultType: 'complete';
  supportedVersions: string[];
  capabilities: ServerCapabilities;
  serverInfo?: Implementation;
  instructions?: string;
  ttlMs?: number;
  cacheScope?: string;
  _meta?: JsonObject;
}

// ---------------------------------------------------------------- 2025-11-25 (legacy)

export type LegacyTaskSupport = 'forbidden' | 'optional' | 'required';

/** The `task` param a legacy client adds to `tools/call` to ask for a task. */
export interface LegacyTaskMetadata {
  ttl?: number;
}

/** 2025-11-25 `Task`: `ttl` and `pollInterval`, no embedded result. */
export interface LegacyTask {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttl: number | null;
  pollInterval?: number;
}

/** Nested, unlike the modern flat `CreateTaskResult`. */
export interface LegacyCreateTaskResult {
  task: LegacyTask;
  _meta?: JsonObject;
}

export type LegacyGetTaskResult = LegacyTask & { _meta?: JsonObject };
export type LegacyCancelTaskResult = LegacyTask & { _meta?: JsonObject };

export interface LegacyListTasksResult {
  tasks: LegacyTask[];
  nextCursor?: string;
  _meta?: JsonObject;
}

export interface LegacyListTasksParams {
  cursor?: string;
}

export interface LegacyTasksCapability {
  list?: JsonObject;
  cancel?: JsonObject;
  requests?: {
    tools?: { call?: JsonObject };
    sampling?: { createMessage?: JsonObject };
    elicitation?: { create?: JsonObject };
  };
}

export interface InitializeParams {
  protocolVersion: string;
  capabilities: JsonObject & { tasks?: LegacyTasksCapability };
  clientInfo: Implementation;
}

export interface InitializeResult {
  protocolVersion: string;
  capabilities: JsonObject & { tasks?: LegacyTasksCapability };
  serverInfo: Implementation;
  instructions?: string;
  _meta?: JsonObject;
}

/** `notifications/tasks/status` params: the legacy `Task`, no result. */
export type LegacyTaskStatusParams = LegacyTask & { _meta?: JsonObject };
