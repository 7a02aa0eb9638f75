import { invalidParams } from '../errors.ts';
import {
  isInterruptedTaskState,
  isTerminalTaskState,
  type Artifact,
  type JsonObject,
  type JsonValue,
  type Message,
  type Part,
  type StreamResponse,
  type Task,
  type TaskPushNotificationConfig,
  type TaskState,
  type TaskStatus,
} from '../types.ts';
import { type Obj, isObj } from '../../../core/json-object.ts';

/**
 * A2A 0.3 ⇄ 1.0 data model, both ways, for the 0.3 compatibility of the host (answering 0.3 clients)
 * and of the connector (talking to 0.3 agents). One internal model stays 1.0; 0.3 exists only at the
 * edge, translated here (A2A 1.0 spec digest, "What changed 0.3 → 1.0"):
 *
 * - objects carry a `kind` discriminator (`task`, `message`, `status-update`, `artifact-update`; parts
 *   `text`, `file`, `data`) where 1.0 names the oneof member;
 * - enums are kebab-case words (`input-required`, roles `user`/`agent`) where 1.0 has `TASK_STATE_*`;
 * - file parts nest `{file: {bytes|uri, mimeType, name}}`; data parts hold an object only, so other
 *   JSON values travel as `{value}` with the `data_part_compat` metadata flag, as `@a2a-js/sdk` does;
 * - a status update carries `final`; push configs nest under `pushNotificationConfig` and their
 *   authentication has `schemes[]`.
 *
 * Translators toward 1.0 produce plain 1.0 JSON that the 1.0 decoders then validate; they throw
 * A2AError InvalidParams naming the 0.3 field for what the decoders cannot see (an unknown `kind`).
 */

/** The version a request that names none speaks (A2A 1.0, versioning: a missing header means 0.3). */
export const A2A_V03_VERSION = '0.3';
/** The card's `protocolVersion` of a 0.3 agent we serve. */
export const A2A_V03_CARD_VERSION = '0.3.0';
/** 0.3 spells the extensions header with the `X-` prefix. */
export const V03_EXTENSIONS_HEADER = 'X-A2A-Extensions';
/** Marks a non-object 1.0 data value wrapped as `{value}` (the `@a2a-js/sdk` compat convention). */
export const DATA_PART_COMPAT_FLAG = 'data_part_compat';

const STATE_TO_V03: Record<TaskState, string> = {
  TASK_STATE_UNSPECIFIED: 'unknown',
  TASK_STATE_SUBMITTED: 'submitted',
  TASK_STATE_WORKING: 'working',
  TASK_STATE_COMPLETED: 'completed',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_CANCELED: 'canceled',
  TASK_STATE_INPUT_REQUIRED: 'input-required',
  TASK_STATE_REJECTED: 'rejected',
  TASK_STATE_AUTH_REQUIRED: 'auth-required',
};
const STATE_FROM_V03 = new Map<string, TaskState>(
  Object.entries(STATE_TO_V03).map(([v1, v03]) => [v03, v1 as TaskState]),
);

export function stateToV03(state: TaskState): string {
  return STATE_TO_V03[state];
}

/** A 0.3 state word as the 1.0 enum; anything unknown is UNSPECIFIED (never a guessed state). */
export function stateFromV03(state: unknown): TaskState {
  return (typeof state === 'string' && STATE_FROM_V03.get(state)) || 'TASK_STATE_UNSPECIFIED';
}

// --- 1.0 → 0.3 --------------------------------------------------------------------------------

export function partToV03(p: Part): Obj {
  const out: Obj = {};
  const metadata: JsonObject | undefined = p.metadata ? { ...p.metadata } : undefined;
  if (typeof p.text === 'string') Object.assign(out, { kind: 'text', text: p.text });
  else if (typeof p.raw === 'string' || typeof p.url === 'string') {
    const file: Obj = typeof p.raw === 'string' ? { bytes: p.raw } : { uri: p.url };
    if (p.mediaType) file.mimeType = p.mediaType;
    if (p.filename) file.name = p.filename;
    Object.assign(out, { kind: 'file', file });
  } else if (isObj(p.data)) Object.assign(out, { kind: 'data', data: p.data });
  else {
    out.kind = 'data';
    out.data = { value: p.data ?? null };
    out.metadata = { ...metadata, [DATA_PART_COMPAT_FLAG]: true };
    return out;
  }
  if (metadata) out.metadata = metadata;
  return out;
}

export function messageToV03(m: Message): Obj {
  const out: Obj = {
    kind: 'message',
    messageId: m.messageId,
    role: m.role === 'ROLE_USER' ? 'user' : 'agent',
    parts: m.parts.map(partToV03),
  };
  if (m.contextId) out.contextId = m.contextId;
  if (m.taskId) out.taskId = m.taskId;
  if (m.metadata) out.metadata = m.metadata;
  if (m.extensions?.length) out.extensions = m.extensions;
  if (m.referenceTaskIds?.length) out.referenceTaskIds = m.referenceTaskIds;
  return out;
}

function statusToV03(s: TaskStatus): Obj {
  const out: Obj = { state: stateToV03(s.state) };
  if (s.message) out.message = messageToV03(s.message);
  if (s.timestamp) out.timestamp = s.timestamp;
  return out;
}

function artifactToV03(a: Artifact): Obj {
  const out: Obj = { artifactId: a.artifactId, parts: a.parts.map(partToV03) };
  if (a.name !== undefined) out.name = a.name;
  if (a.description !== undefined) out.description = a.description;
  if (a.metadata) out.metadata = a.metadata;
  if (a.extensions?.length) out.extensions = a.extensions;
  return out;
}

export function taskToV03(t: Task): Obj {
  const out: Obj = { kind: 'task', id: t.id, contextId: t.contextId, status: statusToV03(t.status) };
  if (t.artifacts) out.artifacts = t.artifacts.map(artifactToV03);
  if (t.history) out.history = t.history.map(messageToV03);
  if (t.metadata) out.metadata = t.metadata;
  return out;
}

/**
 * One 1.0 StreamResponse as the bare 0.3 event. `final` is derived from the state (0.3 closed a stream
 * after a terminal or interrupted status; 1.0 closes the transport instead).
 */
export function streamResponseToV03(r: StreamResponse): Obj {
  if ('task' in r) return taskToV03(r.task);
  if ('message' in r) return messageToV03(r.message);
  if ('statusUpdate' in r) {
    const u = r.statusUpdate;
    const state = u.status.state;
    const out: Obj = {
      kind: 'status-update',
      taskId: u.taskId,
      contextId: u.contextId,
      status: statusToV03(u.status),
      final: isTerminalTaskState(state) || isInterruptedTaskState(state),
    };
    if (u.metadata) out.metadata = u.metadata;
    return out;
  }
  const u = r.artifactUpdate;
  const out: Obj = {
    kind: 'artifact-update',
    taskId: u.taskId,
    contextId: u.contextId,
    artifact: artifactToV03(u.artifact),
  };
  if (u.append !== undefined) out.append = u.append;
  if (u.lastChunk !== undefined) out.lastChunk = u.lastChunk;
  if (u.metadata) out.metadata = u.metadata;
  return out;
}

/** The 0.3 `PushNotificationConfig` of a flat 1.0 config (`authentication.scheme` → `schemes[]`). */
export function pushConfigBodyToV03(c: TaskPushNotificationConfig): Obj {
  const out: Obj = { url: c.url };
  if (c.id) out.id = c.id;
  if (c.token) out.token = c.token;
  if (c.authentication) {
    const auth: Obj = { schemes: [c.authentication.scheme] };
    if (c.authentication.credentials !== undefined) auth.credentials = c.authentication.credentials;
    out.authentication = auth;
  }
  return out;
}

/** The 0.3 `TaskPushNotificationConfig`: `{taskId, pushNotificationConfig}`. */
export function pushConfigToV03(c: TaskPushNotificationConfig): Obj {
  return { taskId: c.taskId ?? '', pushNotificationConfig: pushConfigBodyToV03(c) };
}

// --- 0.3 → 1.0 --------------------------------------------------------------------------------

export function partFromV03(v: unknown, field: string): Obj {
  if (!isObj(v)) throw invalidParams(field, 'must be an object');
  const out: Obj = {};
  let metadata = isObj(v.metadata) ? { ...v.metadata } : undefined;
  switch (v.kind) {
    case 'text':
      out.text = v.text;
      break;
    case 'file': {
      if (!isObj(v.file)) throw invalidParams(`${field}.file`, 'must be an object with bytes or uri');
      const f = v.file;
      if (typeof f.bytes === 'string') out.raw = f.bytes;
      else if (typeof f.uri === 'string') out.url = f.uri;
      else throw invalidParams(`${field}.file`, 'must have bytes or uri');
      if (typeof f.mimeType === 'string' && f.mimeType) out.mediaType = f.mimeType;
      if (typeof f.name === 'string' && f.name) out.filename = f.name;
      break;
    }
    case 'data': {
      let data = v.data as JsonValue;
      if (metadata?.[DATA_PART_COMPAT_FLAG] === true) {
        if (isObj(data) && 'value' in data) data = data.value as JsonValue;
        delete metadata[DATA_PART_COMPAT_FLAG];
        if (Object.keys(metadata).length === 0) metadata = undefined;
      }
      out.data = data === undefined ? null : data;
      break;
    }
    default:
      throw invalidParams(`${field}.kind`, 'must be text, file or data');
  }
  if (metadata) out.metadata = metadata;
  return out;
}

function partsFromV03(v: unknown, field: string): unknown {
  return Array.isArray(v) ? v.map((p, i) => partFromV03(p, `${field}[${i}]`)) : v;
}

const ROLE_FROM_V03: Record<string, string> = { user: 'ROLE_USER', agent: 'ROLE_AGENT' };

export function messageFromV03(v: unknown, field: string): Obj {
  if (!isObj(v)) throw invalidParams(field, 'must be an object');
  const { kind: _kind, role, parts, ...rest } = v;
  return {
    ...rest,
    role: (typeof role === 'string' && ROLE_FROM_V03[role]) || role,
    parts: partsFromV03(parts, `${field}.parts`),
  };
}

function statusFromV03(v: unknown, field: string): Obj {
  if (!isObj(v)) throw invalidParams(field, 'must be an object');
  const out: Obj = { state: stateFromV03(v.state) };
  if (isObj(v.message)) out.message = messageFromV03(v.message, `${field}.message`);
  if (typeof v.timestamp === 'string') out.timestamp = v.timestamp;
  return out;
}

function artifactFromV03(v: unknown, field: string): unknown {
  if (!isObj(v)) return v;
  return { ...v, parts: partsFromV03(v.parts, `${field}.parts`) };
}

export function taskFromV03(v: unknown, field = 'task'): Obj {
  if (!isObj(v)) throw invalidParams(field, 'must be an object');
  const { kind: _kind, status, artifacts, history, ...rest } = v;
  const out: Obj = { ...rest, status: statusFromV03(status, `${field}.status`) };
  if (Array.isArray(artifacts))
    out.artifacts = artifacts.map((a, i) => artifactFromV03(a, `${field}.artifacts[${i}]`));
  if (Array.isArray(history))
    out.history = history.map((m, i) => messageFromV03(m, `${field}.history[${i}]`));
  return out;
}

/**
 * A bare 0.3 event (a `message/send` result, a stream frame's `result`, a 0.3 push body) as the 1.0
 * StreamResponse it stands for; null when `kind` names none of the four.
 */
export function eventFromV03(v: unknown): Obj | null {
  if (!isObj(v)) return null;
  switch (v.kind) {
    case 'task':
      return { task: taskFromV03(v) };
    case 'message':
      return { message: messageFromV03(v, 'message') };
    case 'status-update': {
      const { kind: _kind, final: _final, status, ...rest } = v;
      return { statusUpdate: { ...rest, status: statusFromV03(status, 'status') } };
    }
    case 'artifact-update': {
      const { kind: _kind, artifact, ...rest } = v;
      return { artifactUpdate: { ...rest, artifact: artifactFromV03(artifact, 'artifact') } };
    }
    default:
      return null;
  }
}

/** A 0.3 `PushNotificationConfig` (plus its task id) as the flat 1.0 config. */
export function pushConfigFromV03(v: unknown, taskId: unknown, field: string): Obj {
  if (!isObj(v)) throw invalidParams(field, 'must be an object');
  const out: Obj = { ...v };
  if (taskId !== undefined) out.taskId = taskId;
  const auth = v.authentication;
  if (isObj(auth)) {
    const schemes = auth.schemes;
    out.authentication = {
      scheme: Array.isArray(schemes) && typeof schemes[0] === 'string' ? schemes[0] : auth.scheme,
      ...(auth.credentials !== undefined ? { credentials: auth.credentials } : {}),
    };
  }
  return out;
}

/**
 * 0.3 `MessageSendParams` as a 1.0 SendMessageRequest: `blocking` (0.3 default true) becomes
 * `returnImmediately`, `pushNotificationConfig` becomes `taskPushNotificationConfig`.
 */
export function sendParamsFromV03(v: unknown): Obj {
  if (!isObj(v)) throw invalidParams('params', 'must be an object');
  const out: Obj = { message: messageFromV03(v.message, 'params.message') };
  if (isObj(v.metadata)) out.metadata = v.metadata;
  const c = v.configuration;
  if (isObj(c)) {
    const cfg: Obj = {};
    if (c.acceptedOutputModes !== undefined) cfg.acceptedOutputModes = c.acceptedOutputModes;
    if (c.historyLength !== undefined) cfg.historyLength = c.historyLength;
    if (typeof c.blocking === 'boolean') cfg.returnImmediately = !c.blocking;
    if (c.pushNotificationConfig !== undefined && c.pushNotificationConfig !== null)
      cfg.taskPushNotificationConfig = pushConfigFromV03(
        c.pushNotificationConfig,
        undefined,
        'params.configuration.pushNotificationConfig',
      );
    out.configuration = cfg;
  }
  return out;
}

/** A 1.0 SendMessageRequest (as the connector builds it) as 0.3 `MessageSendParams`. */
export function sendParamsToV03(p: {
  message: Message;
  configuration?: {
    returnImmediately?: boolean;
    historyLength?: number;
    taskPushNotificationConfig?: TaskPushNotificationConfig;
  };
  metadata?: JsonObject;
}): Obj {
  const out: Obj = { message: messageToV03(p.message) };
  if (p.metadata) out.metadata = p.metadata;
  const c = p.configuration;
  if (c) {
    const cfg: Obj = {};
    if (c.returnImmediately !== undefined) cfg.blocking = !c.returnImmediately;
    if (c.historyLength !== undefined) cfg.historyLength = c.historyLength;
    if (c.taskPushNotificationConfig)
      cfg.pushNotificationConfig = pushConfigBodyToV03(c.taskPushNotificationConfig);
    out.configuration = cfg;
  }
  return out;
}
