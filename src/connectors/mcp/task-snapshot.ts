import type { ContentPart } from '../../core/envelope.ts';
import type { NormalizedState } from '../../core/states.ts';
import type {
  CallToolResult,
  DetailedTask,
  InputRequests,
  JsonObject,
  JsonValue,
  LegacyTask,
  TaskStatus,
} from '../../protocols/mcp/types.ts';
import type { RemoteArtifact, RemoteInputRequest, RemoteSnapshot } from '../connector.ts';

/**
 * MCP answers → RemoteSnapshot. The task statuses map one to one, with two readings of our own, both
 * stated in docs/plane.md: a tool result with `isError: true` is the tool's own word that it failed
 * (`failed`, code `tool_error`, the native status `completed` kept beside it), and a task whose
 * `createdAt + ttlMs` has passed is `expired` (the spec lets the server drop it from then on).
 */

const STATE: Record<TaskStatus, NormalizedState> = {
  working: 'running',
  input_required: 'waiting_for_input',
  completed: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
};

/** Tool content blocks as neutral parts: text as text, images and audio as inline files, the rest as data. */
export function contentParts(result: CallToolResult | JsonObject): ContentPart[] {
  const parts: ContentPart[] = [];
  const content = Array.isArray(result.content) ? result.content : [];
  for (const c of content) {
    if (c && typeof c === 'object' && !Array.isArray(c)) {
      const o = c as JsonObject;
      if (o.type === 'text' && typeof o.text === 'string') {
        parts.push({ kind: 'text', text: o.text });
        continue;
      }
      if ((o.type === 'image' || o.type === 'audio') && typeof o.data === 'string') {
        parts.push({
          kind: 'file',
          bytes: o.data,
          ...(typeof o.mimeType === 'string' ? { mediaType: o.mimeType } : {}),
        });
        continue;
      }
    }
    parts.push({ kind: 'data', data: c });
  }
  const sc = result.structuredContent;
  if (sc && typeof sc === 'object') parts.push({ kind: 'data', data: sc, mediaType: 'application/json' });
  return parts;
}

function firstText(result: JsonObject): string {
  const content = Array.isArray(result.content) ? result.content : [];
  for (const c of content) {
    const o = c as JsonObject | null;
    if (o && typeof o === 'object' && o.type === 'text' && typeof o.text === 'string') return o.text;
  }
  return 'the tool reported an error';
}

/** What a finished tool call adds to a snapshot: its result as output, isError read as a failure. */
export function resultFields(
  result: JsonObject,
): Pick<RemoteSnapshot, 'result' | 'artifacts'> & { toolError?: { code: string; message: string } } {
  const artifact: RemoteArtifact = {
    artifactId: 'result',
    name: 'tool result',
    content: result,
    parts: contentParts(result),
  };
  const out: ReturnType<typeof resultFields> = { result, artifacts: [artifact] };
  if (result.isError === true)
    out.toolError = { code: 'tool_error', message: firstText(result).slice(0, 500) };
  return out;
}

/** The pending requests of an input_required task or an MRTR round, as the plane shows them. */
export function inputRequestsOf(requests: InputRequests): RemoteInputRequest[] {
  return Object.entries(requests).map(([key, r]) => {
    const p = r.params ?? {};
    const prompt = r.method === 'elicitation/create' && typeof p.message === 'string' ? p.message : r.method;
    const schema =
      r.method === 'elicitation/create' && p.requestedSchema && typeof p.requestedSchema === 'object'
        ? (p.requestedSchema as Record<string, unknown>)
        : undefined;
    return { requestId: key, prompt, method: r.method, ...(schema ? { schema } : {}) };
  });
}

function withInput(s: RemoteSnapshot, requests: RemoteInputRequest[]): RemoteSnapshot {
  const [first] = requests;
  if (!first) return s;
  return {
    ...s,
    inputRequests: requests,
    inputRequest: {
      requestId: first.requestId,
      prompt: first.prompt,
      ...(first.schema ? { schema: first.schema } : {}),
    },
  };
}

/** `createdAt + ttlMs` has passed: the task may be gone at any moment; its outcome is not ours to guess. */
export function ttlPassed(createdAt: string, ttlMs: number | null, now: number): boolean {
  if (ttlMs === null) return false;
  const at = Date.parse(createdAt);
  return Number.isFinite(at) && at + ttlMs < now;
}

function base(
  t: { taskId: string; status: TaskStatus; lastUpdatedAt: string; statusMessage?: string },
  contextId: string | null,
): RemoteSnapshot {
  const ts = Date.parse(t.lastUpdatedAt);
  return {
    remoteId: t.taskId,
    contextId,
    state: STATE[t.status],
    nativeState: t.status,
    remoteVersion: Number.isFinite(ts) ? ts : null,
    stateTimestamp: Number.isFinite(ts) ? ts : null,
    ...(t.statusMessage !== undefined ? { statusMessage: t.statusMessage } : {}),
  };
}

function expiredIfLate(
  s: RemoteSnapshot,
  t: { createdAt: string; status: TaskStatus },
  ttlMs: number | null,
  now: number,
): RemoteSnapshot {
  if (!['working', 'input_required'].includes(t.status) || !ttlPassed(t.createdAt, ttlMs, now)) return s;
  return {
    ...s,
    state: 'expired',
    error: { code: 'ttl_expired', message: `the task's ttlMs (${ttlMs}) from createdAt has passed` },
  };
}

/** A 2026-07-28 task (CreateTaskResult, GetTaskResult or notifications/tasks). */
export function taskSnapshot(
  t: DetailedTask | (Omit<DetailedTask, 'status'> & { status: TaskStatus }),
  contextId: string | null,
  now: number,
): RemoteSnapshot {
  let s = base(t, contextId);
  const d = t as DetailedTask;
  if (d.status === 'input_required') s = withInput(s, inputRequestsOf(d.inputRequests));
  if (d.status === 'completed') {
    const { toolError, ...fields } = resultFields(d.result);
    s = { ...s, ...fields };
    if (toolError) s = { ...s, state: 'failed', error: toolError };
  }
  if (d.status === 'failed')
    s = { ...s, error: { code: `rpc_${d.error.code}`, message: d.error.message.slice(0, 500) } };
  return expiredIfLate(s, t, t.ttlMs, now);
}

/** A 2025-11-25 task; `payload` is what tasks/result gave for a terminal one. */
export function legacySnapshot(
  t: LegacyTask,
  contextId: string | null,
  now: number,
  payload?: { result?: JsonObject; error?: { code: number; message: string } },
  input?: RemoteInputRequest[],
): RemoteSnapshot {
  let s = base(t, contextId);
  if (t.status === 'input_required' && input) s = withInput(s, input);
  if (payload?.result) {
    const { toolError, ...fields } = resultFields(payload.result);
    s = { ...s, ...fields };
    if (toolError) s = { ...s, state: 'failed', error: toolError };
  }
  if (payload?.error)
    s = { ...s, error: { code: `rpc_${payload.error.code}`, message: payload.error.message.slice(0, 500) } };
  return expiredIfLate(s, t, t.ttl, now);
}

/** A tool call answered at once: the whole outcome, no task to follow. */
export function immediateSnapshot(
  remoteId: string,
  contextId: string | null,
  result: CallToolResult,
): RemoteSnapshot {
  const { toolError, ...fields } = resultFields(result as unknown as JsonObject);
  return {
    remoteId,
    contextId,
    state: toolError ? 'failed' : 'succeeded',
    nativeState: 'complete',
    remoteVersion: null,
    stateTimestamp: null,
    ...fields,
    ...(toolError ? { error: toolError } : {}),
  };
}

/** An MRTR round: nothing exists on the server yet; the plane holds the exchange and waits for answers. */
export function mrtrSnapshot(
  remoteId: string,
  contextId: string | null,
  round: number,
  requests: RemoteInputRequest[],
): RemoteSnapshot {
  return withInput(
    {
      remoteId,
      contextId,
      state: 'waiting_for_input',
      nativeState: 'input_required',
      remoteVersion: round,
      stateTimestamp: null,
    },
    requests,
  );
}

export function asJsonObject(v: unknown): JsonObject {
  return (v && typeof v === 'object' && !Array.isArray(v) ? v : {}) as JsonObject;
}

export type { JsonValue };
