import type { AgentTaskRecord } from '../store/store.ts';
import type { Message } from '../protocols/a2a/types.ts';
import type {
  DetailedTask,
  InputRequests,
  JsonObject,
  JsonRpcErrorObject,
  LegacyTask,
  Task,
  TaskStatus,
} from '../protocols/mcp/types.ts';
import { executorStateOf, type McpTaskState, taskOf, toIso } from './task-model.ts';

/**
 * How an MCP tool task stored as an agent task looks on the wire. The A2A state is the one state
 * machine (task-model.ts); this maps it: SUBMITTED, WORKING and AUTH_REQUIRED are `working`,
 * INPUT_REQUIRED is `input_required` with the keys still unanswered, COMPLETED is `completed` with the
 * tool's result (a tool error included), FAILED and REJECTED are `failed` with a JSON-RPC error,
 * CANCELED is `cancelled`.
 */

export function mcpStateOf(record: AgentTaskRecord): McpTaskState | undefined {
  return executorStateOf(record)?.mcp;
}

function statusOf(state: string): TaskStatus {
  switch (state) {
    case 'TASK_STATE_INPUT_REQUIRED':
      return 'input_required';
    case 'TASK_STATE_COMPLETED':
      return 'completed';
    case 'TASK_STATE_FAILED':
    case 'TASK_STATE_REJECTED':
      return 'failed';
    case 'TASK_STATE_CANCELED':
      return 'cancelled';
    default:
      return 'working';
  }
}

function messageText(message: Message | undefined): string | undefined {
  if (!message) return undefined;
  const text = message.parts.flatMap((p) => (p.text !== undefined ? [p.text] : [])).join('\n');
  return text === '' ? undefined : text;
}

/** The input requests still waiting for an answer (a partial tasks/update removed the others). */
export function outstanding(mcp: McpTaskState): InputRequests {
  const out: InputRequests = {};
  const answered = mcp.answers ?? {};
  for (const [key, request] of Object.entries(mcp.requests ?? {})) {
    if (!(key in answered)) out[key] = request as InputRequests[string];
  }
  return out;
}

/** The common task fields. */
export function taskFieldsOf(record: AgentTaskRecord, mcp: McpTaskState): Task {
  const task = taskOf(record);
  const out: Task = {
    taskId: record.id,
    status: statusOf(record.state),
    createdAt: toIso(record.createdAt),
    lastUpdatedAt: task.status.timestamp ?? toIso(record.updatedAt),
    ttlMs: mcp.ttlMs,
    pollIntervalMs: mcp.pollIntervalMs,
  };
  const text = messageText(task.status.message);
  if (text !== undefined) out.statusMessage = text;
  return out;
}

function errorOf(mcp: McpTaskState, statusMessage: string | undefined): JsonRpcErrorObject {
  const e = mcp.error;
  if (e) return (e.data === undefined ? { code: e.code, message: e.message } : e) as JsonRpcErrorObject;
  return { code: -32603, message: statusMessage ?? 'Internal error' };
}

/** The 2026-07-28 DetailedTask (tasks/get, notifications/tasks). */
export function detailedTaskOf(record: AgentTaskRecord, mcp: McpTaskState): DetailedTask {
  const base = taskFieldsOf(record, mcp);
  switch (base.status) {
    case 'input_required':
      return { ...base, status: 'input_required', inputRequests: outstanding(mcp) };
    case 'completed':
      return { ...base, status: 'completed', result: (mcp.result ?? { content: [] }) as JsonObject };
    case 'failed':
      return { ...base, status: 'failed', error: errorOf(mcp, base.statusMessage) };
    case 'cancelled':
      return { ...base, status: 'cancelled' };
    case 'working':
      return { ...base, status: 'working' };
  }
}

/**
 * The 2025-11-25 task: `ttl`/`pollInterval`, and a tool that ran and returned `isError` is `failed`
 * there (that era has no embedded result; tasks/result gives it).
 */
export function legacyTaskOf(record: AgentTaskRecord, mcp: McpTaskState): LegacyTask {
  const t = taskFieldsOf(record, mcp);
  const status: TaskStatus = t.status === 'completed' && mcp.result?.isError === true ? 'failed' : t.status;
  const out: LegacyTask = {
    taskId: t.taskId,
    status,
    createdAt: t.createdAt,
    lastUpdatedAt: t.lastUpdatedAt,
    ttl: t.ttlMs,
  };
  if (t.statusMessage !== undefined) out.statusMessage = t.statusMessage;
  if (t.pollIntervalMs !== undefined) out.pollInterval = t.pollIntervalMs;
  return out;
}

/** `createdAt + ttlMs` has passed: the task is answered as expired from then on. */
export function isExpired(record: AgentTaskRecord, mcp: McpTaskState, now: number): boolean {
  return now >= record.createdAt + mcp.ttlMs;
}

export function failedError(record: AgentTaskRecord, mcp: McpTaskState): JsonRpcErrorObject {
  return errorOf(mcp, messageText(taskOf(record).status.message));
}
