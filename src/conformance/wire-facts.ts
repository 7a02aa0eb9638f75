import { AGENT_CARD_PATH, isTerminalTaskState } from '../protocols/a2a/types.ts';
import { type Obj, isObj } from '../core/json-object.ts';

/**
 * What the fault proxy reads off the A2A wire: which operation a request is, which message, task and
 * context it names, and which task states the agent's answers report. Both bindings (JSON-RPC and
 * HTTP+JSON), camelCase or snake_case keys. Reading is lenient and never throws: a request it cannot
 * classify is `other` and is still forwarded and counted.
 */
export interface RequestFacts {
  /** A2A operation (`SendMessage`, `GetTask`, …), `card`, or `other`. */
  method: string;
  messageId: string | null;
  /** The task a request names (follow-up message, get, cancel, subscribe). */
  taskId: string | null;
  contextId: string | null;
  /** A message that names no task: it asks the agent to create one. */
  creates: boolean;
}

/** A task state the agent reported in an answer or a stream frame. */
export interface StateFact {
  taskId: string;
  contextId: string | null;
  state: string;
  /** The status timestamp the agent gave (ms), when it gave one. */
  timestampMs: number | null;
  /** MCP: the task's lifetime from its creation (`ttlMs`, legacy `ttl`), when the answer gives one. */
  ttlMs?: number | null;
  /** MCP: when the task was created (ms), when the answer gives it. */
  createdAtMs?: number | null;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const field = (o: Obj, camel: string, snake: string): unknown => o[camel] ?? o[snake];

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** HTTP+JSON routes (A2A 1.0, operations), matched on the path's tail after any base and tenant prefix. */
function restMethod(httpMethod: string, path: string): { method: string; taskId: string | null } {
  const tail = path.split('?')[0] ?? '';
  if (tail.endsWith('/message:send')) return { method: 'SendMessage', taskId: null };
  if (tail.endsWith('/message:stream')) return { method: 'SendStreamingMessage', taskId: null };
  const task = /\/tasks\/([^/:]+)(:cancel|:subscribe)?(\/pushNotificationConfigs.*)?$/.exec(tail);
  if (task) {
    const taskId = decodeURIComponent(task[1]!);
    if (task[3]) return { method: 'PushNotificationConfig', taskId };
    if (task[2] === ':cancel') return { method: 'CancelTask', taskId };
    if (task[2] === ':subscribe') return { method: 'SubscribeToTask', taskId };
    if (httpMethod === 'GET') return { method: 'GetTask', taskId };
  }
  if (/\/tasks$/.test(tail) && httpMethod === 'GET') return { method: 'ListTasks', taskId: null };
  if (tail.endsWith('/extendedAgentCard')) return { method: 'GetExtendedAgentCard', taskId: null };
  return { method: 'other', taskId: null };
}

export function requestFacts(httpMethod: string, path: string, body: string): RequestFacts {
  if (path.split('?')[0] === AGENT_CARD_PATH)
    return { method: 'card', messageId: null, taskId: null, contextId: null, creates: false };
  const json = body ? parseJson(body) : undefined;
  let method = 'other';
  let taskId: string | null = null;
  let params: Obj = {};
  if (isObj(json) && json.jsonrpc === '2.0' && typeof json.method === 'string') {
    method = json.method;
    params = isObj(json.params) ? json.params : {};
    taskId = str(params.id);
  } else {
    const rest = restMethod(httpMethod, path);
    method = rest.method;
    taskId = rest.taskId;
    if (isObj(json)) params = json;
  }
  const message = isObj(params.message) ? params.message : null;
  const messageTask = message ? str(field(message, 'taskId', 'task_id')) : null;
  const isSend = method === 'SendMessage' || method === 'SendStreamingMessage';
  return {
    method,
    messageId: message ? str(field(message, 'messageId', 'message_id')) : null,
    taskId: messageTask ?? taskId,
    contextId: message ? str(field(message, 'contextId', 'context_id')) : null,
    creates: isSend && message !== null && messageTask === null,
  };
}

function stateOf(taskId: unknown, contextId: unknown, status: unknown): StateFact | null {
  const id = str(taskId);
  if (!id || !isObj(status)) return null;
  const state = status.state;
  if (typeof state !== 'string') return null;
  const ts = str(status.timestamp);
  const ms = ts ? Date.parse(ts) : NaN;
  return { taskId: id, contextId: str(contextId), state, timestampMs: Number.isFinite(ms) ? ms : null };
}

/** Task states in one JSON answer or stream frame (a Task, a SendMessage result, a status update, a list page). */
export function stateFacts(json: unknown): StateFact[] {
  if (!isObj(json)) return [];
  // JSON-RPC wraps every answer and frame in `result`.
  const body = json.jsonrpc === '2.0' ? json.result : json;
  if (!isObj(body)) return [];
  const out: StateFact[] = [];
  const fromTask = (t: unknown) => {
    if (!isObj(t)) return;
    const f = stateOf(t.id, field(t, 'contextId', 'context_id'), t.status);
    if (f) out.push(f);
  };
  if (isObj(body.task)) fromTask(body.task);
  const update = field(body, 'statusUpdate', 'status_update');
  if (isObj(update)) {
    const f = stateOf(
      field(update, 'taskId', 'task_id'),
      field(update, 'contextId', 'context_id'),
      update.status,
    );
    if (f) out.push(f);
  }
  if (Array.isArray(body.tasks)) for (const t of body.tasks) fromTask(t);
  if ('id' in body && 'status' in body) fromTask(body);
  return out;
}

/**
 * What a task cost, as the agent reported it: `metadata.usage` (an object of numbers by unit, e.g.
 * `{"tokens": 1234}`) on a task, on one of its artifacts, or on an artifact update. Each report is the
 * task's total so far (docs/conformance.md, "The test contract").
 */
export interface UsageFact {
  taskId: string;
  usage: Record<string, number>;
}

function usageOf(metadata: unknown): Record<string, number> | null {
  if (!isObj(metadata) || !isObj(metadata.usage)) return null;
  const out: Record<string, number> = {};
  for (const [unit, v] of Object.entries(metadata.usage))
    if (typeof v === 'number' && Number.isFinite(v) && v >= 0) out[unit] = v;
  return Object.keys(out).length ? out : null;
}

/** Usage reports in one JSON answer or stream frame (a task, a list page, an artifact update). */
export function usageFacts(json: unknown): UsageFact[] {
  if (!isObj(json)) return [];
  const body = json.jsonrpc === '2.0' ? json.result : json;
  if (!isObj(body)) return [];
  const out: UsageFact[] = [];
  const push = (taskId: unknown, metadata: unknown) => {
    const id = str(taskId);
    const usage = usageOf(metadata);
    if (id && usage) out.push({ taskId: id, usage });
  };
  const fromTask = (t: unknown) => {
    if (!isObj(t)) return;
    push(t.id, t.metadata);
    if (Array.isArray(t.artifacts)) for (const a of t.artifacts) if (isObj(a)) push(t.id, a.metadata);
  };
  if (isObj(body.task)) fromTask(body.task);
  if (Array.isArray(body.tasks)) for (const t of body.tasks) fromTask(t);
  if ('id' in body && 'status' in body) fromTask(body);
  const update = field(body, 'artifactUpdate', 'artifact_update');
  if (isObj(update) && isObj(update.artifact))
    push(field(update, 'taskId', 'task_id'), update.artifact.metadata);
  return out;
}

export function parseUsage(text: string): UsageFact[] {
  return usageFacts(parseJson(text));
}

/**
 * How the proxy and the rows read one protocol's wire: A2A (this file) or MCP (mcp-wire.ts). `states`
 * and `usage` read one JSON answer body or one stream frame's data.
 */
export interface WireDialect {
  requestFacts(httpMethod: string, path: string, body: string): RequestFacts;
  states(text: string): StateFact[];
  usage(text: string): UsageFact[];
  isTerminal(state: string): boolean;
  /** Coarse order for the "never backward" check: 0 before work, 1 working or interrupted, 2 final. */
  rank(state: string): number;
  /** Requests answered with an event stream of the task's states. */
  streaming(method: string): boolean;
}

export const A2A_WIRE: WireDialect = {
  requestFacts,
  states: (text) => parseBody(text),
  usage: (text) => parseUsage(text),
  isTerminal: (state) => isTerminalTaskState(state),
  rank: (state) => stateRank(state),
  streaming: (method) => method === 'SendStreamingMessage' || method === 'SubscribeToTask',
};

export function parseFrame(data: string): StateFact[] {
  return stateFacts(parseJson(data));
}

export function parseBody(text: string): StateFact[] {
  return stateFacts(parseJson(text));
}

export const isTerminalWireState = (state: string): boolean => isTerminalTaskState(state);

/** Coarse order of A2A states for the "never backward" check: interruptions and work are one level. */
export function stateRank(state: string): number {
  if (isTerminalTaskState(state)) return 2;
  if (state === 'TASK_STATE_SUBMITTED' || state === 'TASK_STATE_UNSPECIFIED') return 0;
  return 1;
}
