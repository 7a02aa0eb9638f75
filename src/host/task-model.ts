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
 * Task first, then updates" stays gap- and duplicate-free (A2A 1.0, streaming) without the store exposing the seq of
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
  /**
   * The message that started the task, on tasks stored by earlier versions. Now it is not stored twice:
   * it is the task's first history message (see triggerOf).
   */
  trigger?: Message;
  /** The host process running (or responsible for) the task; see host-liveness.ts. */
  host?: string;
  /**
   * False while the task has never had a push config: its writes then skip listing configs for the
   * outbox (a query per write, and with SQLite a wait for the previous group commit's fsync). Set to
   * true in a task write before the first config is stored (a2a-service.ts), so a crash between the two
   * leaves a harmless true. Absent on tasks stored before this flag existed: listed as before.
   */
  pushConfigs?: boolean;
  /** Present exactly on tasks that are MCP tool calls (mcp-service.ts). */
  mcp?: McpTaskState;
  /** The journal of `ctx.step` by step name (steps.ts); replaced whole on every change. */
  steps?: Record<string, StepRecord>;
}

/**
 * One journaled step. `running`: an attempt started and no outcome is known (the host may have died in
 * it): a resumed execute runs it again under the same key. `succeeded`/`failed`: the outcome, replayed.
 */
export interface StepRecord {
  state: 'running' | 'succeeded' | 'failed';
  /** Attempts started over the task's life, across restarts. */
  attempts: number;
  /** When the first attempt started (ms). */
  startedAt: number;
  endedAt?: number;
  /** What the step's function returned (JSON), when it succeeded with a value. */
  result?: unknown;
  /** The last attempt's error text, when it failed (host-private: never shown to the client). */
  error?: string;
}

/**
 * The host's bookkeeping of an MCP tool call kept as an agent task: the A2A task beside it carries the
 * state machine (mcp-view.ts maps it to MCP statuses), this carries what only MCP has. Replaced whole
 * on every change (see draftOf: nested objects are shared with the stored record).
 */
export interface McpTaskState {
  tool: string;
  /** `task`: the client holds the task id; `sync`: one request waits for the result. */
  mode: 'task' | 'sync';
  /** The era that created it: the same task looks different to a 2025-11-25 client (ttl, isError). */
  era: 'modern' | 'legacy';
  ttlMs: number;
  pollIntervalMs: number;
  /** Every input request key issued so far: a key is never reused over the task's life. */
  usedKeys?: string[];
  /** The open ask's requests, by key (wire JSON: InputRequests). */
  requests?: Record<string, unknown>;
  /** Answers to the open ask received so far (a partial tasks/update), by key. */
  answers?: Record<string, unknown>;
  /** On `completed`: the CallToolResult (wire JSON). */
  result?: Record<string, unknown>;
  /** On `failed`: the JSON-RPC error. */
  error?: { code: number; message: string; data?: unknown };
}

export type StoredEvent = StreamResponse & { _v?: number };

/**
 * A new task's store row and its first event (the task as created), however it was asked for (A2A
 * SendMessage, MCP tools/call).
 */
export function newTaskRecord(o: {
  id: string;
  scope: { owner: string; tenant: string };
  contextId: string;
  task: Task;
  executor: ExecutorState;
  now: number;
}): { record: AgentTaskRecord; first: StoredEvent } {
  const record: AgentTaskRecord = {
    id: o.id,
    owner: o.scope.owner,
    tenant: o.scope.tenant,
    contextId: o.contextId,
    state: o.task.status.state,
    statusTimestamp: o.now,
    task: o.task as unknown as Record<string, unknown>,
    executorState: o.executor as unknown as Record<string, unknown>,
    createdAt: o.now,
    updatedAt: o.now,
    version: 1,
  };
  return { record, first: { task: wireTask(o.task), _v: 1 } };
}

export function toIso(ms: number): string {
  return new Date(ms).toISOString();
}

export function executorStateOf(record: AgentTaskRecord): ExecutorState {
  return record.executorState as unknown as ExecutorState;
}

/** The message that started the task: execute's input, also on a resume. */
export function triggerOf(exec: ExecutorState, task: Task): Message {
  return exec.trigger ?? task.history![0]!;
}

export function taskOf(record: AgentTaskRecord): Task {
  return record.task as unknown as Task;
}

/** A deep copy of JSON data (stored tasks are JSON): cheaper than structuredClone (docs/performance.md). */
export function jsonCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/**
 * A stored task's documents never change once written: records, the writer's cache and the payloads
 * handed to subscribers share their nested objects (messages, parts, statuses). A change is made on a
 * draft that copies only what a change may edit in place: the task and executor objects themselves, the
 * `history`, `artifacts` and `inputs` arrays and each artifact with its `parts` array. Everything else a
 * change replaces whole (`setStatus` builds a new status, `pendingInput` and `checkpoint` are assigned).
 * User code never holds stored objects: what execute reads and what it passes in is copied at the edge
 * (executions.ts). This copy costs a few object spreads where a JSON round trip of both documents cost
 * about a tenth of a send's CPU.
 */
export function draftOf(record: AgentTaskRecord): { task: Task; executor: ExecutorState } {
  const stored = taskOf(record);
  const task: Task = { ...stored };
  if (stored.history) task.history = stored.history.slice();
  if (stored.artifacts) task.artifacts = stored.artifacts.map((a) => ({ ...a, parts: a.parts.slice() }));
  const exec = executorStateOf(record);
  // Records stored before executor state existed may lack it (recovery reads `d.executor?.host`).
  const executor = exec && { ...exec, inputs: exec.inputs ? exec.inputs.slice() : exec.inputs };
  return { task, executor };
}

/** historyLength (A2A 1.0, execution mode): unset = all, 0 = omit the field, N = the N most recent messages. */
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

/**
 * Status timestamps are the only order A2A gives a client between a task's states, at millisecond
 * resolution: each new status gets a timestamp past the previous one (1 ms later when the clock has not
 * moved), so two changes within one millisecond are never seen as one being stale.
 */
export function setStatus(task: Task, state: TaskState, at: number, message?: Message): TaskStatus {
  const previous = Date.parse(task.status?.timestamp ?? '');
  const ms = Number.isFinite(previous) && at <= previous ? previous + 1 : at;
  task.status = { state, timestamp: toIso(ms), ...(message ? { message } : {}) };
  return task.status;
}

/**
 * Applies an artifact update to a draft the way a client would (append parts by artifactId). The update's
 * parts are stored as they are: the caller passes parts nobody else holds (executions.ts copies user input).
 */
export function applyArtifact(task: Task, update: TaskArtifactUpdateEvent): void {
  const artifacts = (task.artifacts ??= []);
  const existing = artifacts.find((a) => a.artifactId === update.artifact.artifactId);
  if (existing && update.append) {
    existing.parts.push(...update.artifact.parts); // `existing` and its parts array are the draft's own
    return;
  }
  const copy: Artifact = { ...update.artifact, parts: update.artifact.parts.slice() };
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
