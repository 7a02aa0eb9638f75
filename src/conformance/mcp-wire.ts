import type { RequestFacts, StateFact, UsageFact, WireDialect } from './wire-facts.ts';
import { type Obj, isObj } from '../core/json-object.ts';

/**
 * What the fault proxy reads off the MCP wire (Streamable HTTP, JSON-RPC; the 2026-07-28 tasks
 * extension and the 2025-11-25 experimental tasks): the method, the task it names, and the task states
 * in answers and in `notifications/tasks` frames. A job's `tools/call` is told apart by its `label`
 * argument, which the conformance run sets to the job's context id (the test contract). Lenient like
 * the A2A reader: what it cannot classify is `other`, still forwarded and counted.
 */
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

function mcpRequestFacts(_httpMethod: string, _path: string, body: string): RequestFacts {
  const none = { method: 'other', messageId: null, taskId: null, contextId: null, creates: false };
  const json = body ? parseJson(body) : undefined;
  if (!isObj(json) || typeof json.method !== 'string') return none;
  const params = isObj(json.params) ? json.params : {};
  const method = json.method;
  let taskId = str(params.taskId);
  if (method === 'subscriptions/listen') {
    const n = isObj(params.notifications) ? params.notifications : {};
    taskId = Array.isArray(n.taskIds) ? str(n.taskIds[0]) : null;
  }
  const args = isObj(params.arguments) ? params.arguments : {};
  const retry = params.inputResponses !== undefined || params.requestState !== undefined;
  return {
    method,
    // An answer's identity is the keys it answers (a resend answers the same keys).
    messageId:
      method === 'tasks/update' && isObj(params.inputResponses)
        ? `${taskId ?? ''}:${Object.keys(params.inputResponses).sort().join(',')}`
        : null,
    taskId,
    contextId: method === 'tools/call' ? str(args.label) : null,
    creates: method === 'tools/call' && !retry,
  };
}

function taskState(t: unknown): StateFact | null {
  if (!isObj(t)) return null;
  const id = str(t.taskId);
  const status = str(t.status);
  if (!id || !status) return null;
  const time = (v: unknown) => {
    const ms = str(v) ? Date.parse(v as string) : NaN;
    return Number.isFinite(ms) ? ms : null;
  };
  const ttl = t.ttlMs ?? t.ttl;
  return {
    taskId: id,
    contextId: null,
    state: status,
    timestampMs: time(t.lastUpdatedAt),
    ...(ttl === null || typeof ttl === 'number' ? { ttlMs: ttl } : {}),
    createdAtMs: time(t.createdAt),
  };
}

/** The task objects a JSON-RPC message carries: a result (task or create-task result) or a notification. */
function tasksIn(json: unknown): Obj[] {
  if (!isObj(json)) return [];
  const out: Obj[] = [];
  const body = isObj(json.result)
    ? json.result
    : typeof json.method === 'string' && json.method.startsWith('notifications/tasks') && isObj(json.params)
      ? json.params
      : null;
  if (!body) return [];
  if (isObj(body.task)) out.push(body.task);
  out.push(body);
  return out;
}

function mcpStates(text: string): StateFact[] {
  return tasksIn(parseJson(text))
    .map(taskState)
    .filter((s): s is StateFact => s !== null);
}

/** Usage in a completed task's tool result: `_meta.usage` (an object of numbers by unit). */
function mcpUsage(text: string): UsageFact[] {
  const out: UsageFact[] = [];
  for (const t of tasksIn(parseJson(text))) {
    const id = str(t.taskId);
    const result = isObj(t.result) ? t.result : null;
    const meta = result && isObj(result._meta) ? result._meta : null;
    if (!id || !meta || !isObj(meta.usage)) continue;
    const usage: Record<string, number> = {};
    for (const [unit, v] of Object.entries(meta.usage))
      if (typeof v === 'number' && Number.isFinite(v) && v >= 0) usage[unit] = v;
    if (Object.keys(usage).length) out.push({ taskId: id, usage });
  }
  return out;
}

export const MCP_WIRE: WireDialect = {
  requestFacts: mcpRequestFacts,
  states: mcpStates,
  usage: mcpUsage,
  isTerminal: (state) => TERMINAL.has(state),
  rank: (state) => (TERMINAL.has(state) ? 2 : 1),
  streaming: (method) => method === 'subscriptions/listen',
};
