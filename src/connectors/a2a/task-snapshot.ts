import type { ContentPart } from '../../core/envelope.ts';
import { unreadableAnswer } from '../../core/errors.ts';
import type { NormalizedState } from '../../core/states.ts';
import { decodeTaskState, normalizeKeys } from '../../protocols/a2a/decode.ts';
import type { Artifact, Part, Task, TaskState } from '../../protocols/a2a/types.ts';
import type { RemoteArtifact, RemoteSnapshot } from '../connector.ts';
import { isObj } from '../../core/json-object.ts';

/**
 * A2A Task ⇄ RemoteSnapshot. Normalized states (docs/a2a-notes.md, "Terms and normalized states"):
 * SUBMITTED→accepted, WORKING→running,
 * INPUT_REQUIRED and AUTH_REQUIRED→waiting_for_input (the native state is kept, so the signals can tell
 * them apart), COMPLETED→succeeded, FAILED and REJECTED→failed, CANCELED→cancelled. The remote version
 * is the status timestamp in ms: A2A 1.0 has no sequence numbers (A2A#1986).
 */
const STATE_MAP: Record<TaskState, NormalizedState> = {
  TASK_STATE_UNSPECIFIED: 'unknown',
  TASK_STATE_SUBMITTED: 'accepted',
  TASK_STATE_WORKING: 'running',
  TASK_STATE_INPUT_REQUIRED: 'waiting_for_input',
  TASK_STATE_AUTH_REQUIRED: 'waiting_for_input',
  TASK_STATE_COMPLETED: 'succeeded',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_REJECTED: 'failed',
  TASK_STATE_CANCELED: 'cancelled',
};

export function normalizeState(state: TaskState | undefined): NormalizedState {
  return STATE_MAP[state ?? 'TASK_STATE_UNSPECIFIED'];
}

/**
 * Lenient ProtoJSON → Task (snake_case, enum ints accepted); not a task is an unreadable answer
 * (core/errors.ts), never a verdict on the job.
 */
export function decodeTask(raw: unknown): Task {
  const o = normalizeKeys(raw);
  if (!isObj(o) || typeof o.id !== 'string' || !isObj(o.status)) {
    throw unreadableAnswer('response is not an A2A Task');
  }
  const status = o.status;
  let state: TaskState | undefined;
  try {
    state = decodeTaskState(status.state, 'status.state');
  } catch {
    state = undefined;
  }
  const task: Task = {
    id: o.id,
    contextId: typeof o.contextId === 'string' ? o.contextId : '',
    status: { state: state ?? 'TASK_STATE_UNSPECIFIED' },
  };
  if (typeof status.timestamp === 'string') task.status.timestamp = status.timestamp;
  if (isObj(status.message)) {
    const m = status.message;
    task.status.message = {
      messageId: typeof m.messageId === 'string' ? m.messageId : '',
      role: 'ROLE_AGENT',
      parts: Array.isArray(m.parts) ? (m.parts.filter(isObj) as Part[]) : [],
    };
    if (!task.status.message.messageId) delete (task.status.message as { messageId?: string }).messageId;
  }
  if (Array.isArray(o.artifacts))
    task.artifacts = o.artifacts.map(sanitizeArtifact).filter((a): a is Artifact => a !== null);
  return task;
}

/** A remote's artifact, kept only as far as it is well-formed: an id and object parts. */
export function sanitizeArtifact(raw: unknown): Artifact | null {
  if (!isObj(raw) || typeof raw.artifactId !== 'string') return null;
  const parts = Array.isArray(raw.parts) ? (raw.parts.filter(isObj) as Part[]) : [];
  const a: Artifact = { artifactId: raw.artifactId, parts };
  if (typeof raw.name === 'string') a.name = raw.name;
  return a;
}

function partsText(parts: Part[] | undefined): string {
  return (parts ?? []).flatMap((p) => (typeof p.text === 'string' ? [p.text] : [])).join('\n');
}

/** What the engine hashes and checks: one data part → the data; text only → the text; else the parts. */
export function artifactContent(parts: Part[]): unknown {
  if (parts.length === 1 && parts[0]!.data !== undefined) return parts[0]!.data;
  if (parts.length > 0 && parts.every((p) => typeof p.text === 'string')) return partsText(parts);
  return parts;
}

/** An A2A part as a protocol-neutral one: `raw` and `url` parts are files. */
export function contentPart(p: Part): ContentPart {
  const withType = <T extends ContentPart>(c: T): T =>
    typeof p.mediaType === 'string' ? { ...c, mediaType: p.mediaType } : c;
  if (typeof p.text === 'string') return withType({ kind: 'text', text: p.text });
  if (typeof p.raw === 'string' || typeof p.url === 'string') {
    const file: ContentPart = { kind: 'file' };
    if (typeof p.filename === 'string') file.name = p.filename;
    if (typeof p.raw === 'string') file.bytes = p.raw;
    else file.url = p.url as string;
    return withType(file);
  }
  return withType({ kind: 'data', data: p.data ?? null });
}

function toRemoteArtifact(a: Artifact): RemoteArtifact {
  const out: RemoteArtifact = {
    artifactId: a.artifactId,
    content: artifactContent(a.parts ?? []),
    parts: (a.parts ?? []).map(contentPart),
  };
  if (a.name !== undefined) out.name = a.name;
  const mediaType = a.parts?.find((p) => p.mediaType)?.mediaType;
  if (mediaType) out.mediaType = mediaType;
  return out;
}

export function timestampMs(ts: string | undefined): number | null {
  if (!ts) return null;
  const ms = Date.parse(ts);
  return Number.isFinite(ms) ? ms : null;
}

/**
 * A2A orders a task's states only by their status timestamps, in milliseconds, and an agent may change
 * state twice within one (WORKING then INPUT_REQUIRED). Within one stream the frames' order is the
 * agent's own order, so a frame whose timestamp does not move past the previous frame's still comes
 * after it: its version is nudged a fraction of a millisecond past the previous one. Without this the
 * forward-only rule would drop the second state as stale, and a task waiting for input would stay
 * `running`. A later GetTask of the same status carries the plain timestamp, which compares as older
 * and changes nothing.
 */
export function inStreamOrder(previous: RemoteSnapshot | null, snap: RemoteSnapshot): RemoteSnapshot {
  const before = previous?.remoteVersion ?? null;
  if (before === null || snap.remoteVersion === null || snap.remoteVersion > before) return snap;
  if (previous!.state === snap.state && previous!.nativeState === snap.nativeState) return snap;
  return { ...snap, remoteVersion: before + STREAM_ORDER_STEP };
}

/** A thousandth of a millisecond: far below the timestamps' own resolution. */
const STREAM_ORDER_STEP = 0.001;

export function taskToSnapshot(task: Task): RemoteSnapshot {
  const native = task.status.state;
  const state = normalizeState(native);
  const ts = timestampMs(task.status.timestamp);
  const snap: RemoteSnapshot = {
    remoteId: task.id,
    contextId: task.contextId || null,
    state,
    nativeState: native,
    remoteVersion: ts,
    stateTimestamp: ts,
  };
  if (task.artifacts) snap.artifacts = task.artifacts.map(toRemoteArtifact);
  const message = task.status.message;
  snap.statusMessage = partsText(message?.parts) || null;
  if (state === 'waiting_for_input') {
    // A2A has no input request id: the status message id (or the status time) names this request.
    snap.inputRequest = {
      requestId: message?.messageId ?? `${task.id}@${task.status.timestamp ?? ''}`,
      prompt:
        partsText(message?.parts) ||
        (native === 'TASK_STATE_AUTH_REQUIRED' ? 'authorization required' : 'input required'),
    };
  } else {
    snap.inputRequest = null;
  }
  if (state === 'failed')
    snap.error = {
      code: native === 'TASK_STATE_REJECTED' ? 'rejected' : 'failed',
      message: partsText(message?.parts).slice(0, 500) || native,
    };
  return snap;
}

/**
 * Applies one StreamResponse frame to the task a stream is following (the first frame is the Task,
 * A2A 1.0, streaming). Returns the updated task, or null for frames that change nothing we track (messages).
 * `current` is never changed: the result is a new task sharing what the frame left as it was (a stream
 * applies a frame per event; copying the whole task each time cost more than the rest of the frame).
 *
 * A frame about another task changes nothing: the official SDK server passes on whatever its executor
 * publishes, so an agent that reports a sub-task's progress on its own bus would otherwise have the
 * sub-task's end recorded as this task's.
 */
export function applyFrame(current: Task | null, rawFrame: unknown): Task | null {
  const frame = normalizeKeys(rawFrame);
  if (!isObj(frame)) return null;
  if (isObj(frame.task)) {
    const task = decodeTask(frame.task);
    return current && task.id !== current.id ? null : task;
  }
  if (!current) return null;
  if (isObj(frame.statusUpdate)) {
    const su = frame.statusUpdate;
    if (!isObj(su.status) || aboutAnother(su, current)) return null;
    const decoded = decodeTask({ id: current.id, contextId: current.contextId, status: su.status });
    return { ...current, status: decoded.status };
  }
  if (isObj(frame.artifactUpdate)) {
    const au = frame.artifactUpdate;
    if (aboutAnother(au, current)) return null;
    const artifact = sanitizeArtifact(au.artifact);
    if (!artifact) return null;
    const list = [...(current.artifacts ?? [])];
    const at = list.findIndex((a) => a.artifactId === artifact.artifactId);
    const existing = at < 0 ? undefined : list[at]!;
    if (existing && au.append === true)
      list[at] = { ...existing, parts: [...(existing.parts ?? []), ...(artifact.parts ?? [])] };
    else if (existing) list[at] = artifact;
    else list.push(artifact);
    return { ...current, artifacts: list };
  }
  return null;
}

/** An update that names a task, and not this one (one that names none is taken as this task's). */
function aboutAnother(update: Record<string, unknown>, current: Task): boolean {
  return typeof update.taskId === 'string' && update.taskId !== '' && update.taskId !== current.id;
}

/** The task id a StreamResponse (push body) is about. */
export function frameTaskId(rawFrame: unknown): string | null {
  const frame = normalizeKeys(rawFrame);
  if (!isObj(frame)) return null;
  if (isObj(frame.task) && typeof frame.task.id === 'string') return frame.task.id;
  for (const k of ['statusUpdate', 'artifactUpdate'] as const) {
    const v = frame[k];
    if (isObj(v) && typeof v.taskId === 'string') return v.taskId;
  }
  if (isObj(frame.message) && typeof frame.message.taskId === 'string') return frame.message.taskId;
  return null;
}
