import type { AgentTaskRecord } from '../store/store.ts';
import type {
  Artifact,
  Message,
  Part,
  StreamResponse,
  Task,
  TaskArtifactUpdateEvent,
  TaskState,
  TaskStatus,
} from '../protocols/a2a/types.ts';

/**
 * How the host keeps an A2A task in the Store. The record's `task` is the full 1.0 wire Task (history and
 * artifacts included); `executorState` is the host's bookkeeping that must survive a restart.
 *
 * Every stored event is a StreamResponse plus `_v`, the task version the write produced. A subscriber
 * that sent a snapshot of version V skips events with `_v <= V`: that is how SubscribeToTask's "current
 * Task first, then updates" stays gap- and duplicate-free (§1.8) without the store exposing the seq of
 * the write that produced a record.
 */
export interface ExecutorState {
  /** Answers given to ctx.askInput, in order: a resumed execute replays them (Temporal-style). */
  inputs: Message[];
  /** The open ctx.askInput request, when the task waits for input. */
  pendingInput?: { index: number; prompt: string; askedAt: number; deadlineAt: number };
  /** What the executor saved with ctx.save(): its resume point. */
  checkpoint?: Record<string, unknown>;
  /** How many times execute has been started for this task. */
  runs: number;
  /** The message that started the task (execute's input on a resume). */
  trigger: Message;
  /** The host process running (or responsible for) the task; see host-liveness.ts. */
  host?: string;
  /**
   * False while the task has never had a push config: its writes then skip listing configs for the
   * outbox (a query per write, and with SQLite a wait for the previous group commit's fsync). Set to
   * true in a task write before the first config is stored (a2a-service.ts), so a crash between the two
   * leaves a harmless true. Absent on tasks stored before this flag existed: listed as before.
   */
  pushConfigs?: boolean;
}

export type StoredEvent = StreamResponse & { _v?: number };

export function toIso(ms: number): string {
  return new Date(ms).toISOString();
}

export function executorStateOf(record: AgentTaskRecord): ExecutorState {
  return record.executorState as unknown as ExecutorState;
}

export function taskOf(record: AgentTaskRecord): Task {
  return record.task as unknown as Task;
}

/** A deep copy of JSON data (stored tasks are JSON): about 5× cheaper than structuredClone here. */
export function jsonCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** §1.6 historyLength: unset = all, 0 = omit the field, N = the N most recent messages. */
export function withHistoryLength(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined) return task;
  const { history, ...rest } = task;
  if (historyLength === 0 || !history || history.length === 0) return rest;
  return { ...rest, history: history.slice(-historyLength) };
}

/** The wire view of a stored task: proto3 empty repeated fields are simply left out. */
export function wireTask(task: Task, historyLength?: number, includeArtifacts = true): Task {
  let t = withHistoryLength(task, historyLength);
  if (!includeArtifacts) {
    const { artifacts: _a, ...rest } = t;
    t = rest;
  } else if (!t.artifacts) t = { ...t, artifacts: [] };
  if (t.history && t.history.length === 0) {
    const { history: _h, ...rest } = t;
    t = rest;
  }
  return t;
}

export function agentMessage(task: Task, messageId: string, parts: Part[]): Message {
  return { messageId, role: 'ROLE_AGENT', parts, taskId: task.id, contextId: task.contextId };
}

export function statusEvent(task: Task): StreamResponse {
  return { statusUpdate: { taskId: task.id, contextId: task.contextId, status: task.status } };
}

export function setStatus(task: Task, state: TaskState, at: number, message?: Message): TaskStatus {
  task.status = { state, timestamp: toIso(at), ...(message ? { message } : {}) };
  return task.status;
}

/** Applies an artifact update to the stored task the way a client would (append parts by artifactId). */
export function applyArtifact(task: Task, update: TaskArtifactUpdateEvent): void {
  const artifacts = (task.artifacts ??= []);
  const existing = artifacts.find((a) => a.artifactId === update.artifact.artifactId);
  if (existing && update.append) {
    existing.parts.push(...update.artifact.parts);
    return;
  }
  const copy: Artifact = structuredClone(update.artifact);
  if (existing) artifacts[artifacts.indexOf(existing)] = copy;
  else artifacts.push(copy);
}

/** The state a StreamResponse moves its task to, if it carries one. */
export function payloadState(payload: StreamResponse): TaskState | undefined {
  if ('statusUpdate' in payload) return payload.statusUpdate.status.state;
  if ('task' in payload) return payload.task.status.state;
  return undefined;
}

const wireCache = new WeakMap<object, StreamResponse>();

/**
 * Strips the host-private `_v` before an event goes on the wire. Memoized per stored event object, so
 * every subscriber of a fanned-out event gets the same payload object (serialized once, wire-json.ts).
 */
export function wirePayload(event: StoredEvent): StreamResponse {
  let wire = wireCache.get(event);
  if (!wire) {
    const { _v, ...rest } = event;
    wire = rest as StreamResponse;
    wireCache.set(event, wire);
  }
  return wire;
}
