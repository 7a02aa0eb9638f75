import {
  isInterruptedTaskState,
  isTerminalTaskState,
  type Artifact,
  type Message,
  type Part,
  type StreamResponse,
  type Task,
  type TaskPushNotificationConfig,
  type TaskStatus,
} from '../types.ts';
import { pushConfigBodyToV03, pushConfigFromV03 } from './wire.ts';
import { type Obj, isObj } from '../../../core/json-object.ts';

/**
 * A2A 0.3 over HTTP+JSON: bodies are the ProtoJSON of the 0.3 proto (package `a2a.v1`), which is
 * neither the 0.3 JSON-RPC shape (no `kind`) nor 1.0: a message holds `content` (not `parts`), a file
 * part is `{file: {fileWithUri | fileWithBytes, mimeType, name}}`, a data part `{data: {data}}`, the
 * canceled state is spelled `TASK_STATE_CANCELLED`, and a push config is
 * `{name: "tasks/{id}/pushNotificationConfigs/{configId}", pushNotificationConfig}`. Answers are
 * `{task}` or `{message}` (send) and StreamResponse-like frames, as in 1.0.
 */

function partToProto(p: Part): Obj {
  if (typeof p.text === 'string') return { text: p.text };
  if (typeof p.raw === 'string' || typeof p.url === 'string') {
    const file: Obj = typeof p.raw === 'string' ? { fileWithBytes: p.raw } : { fileWithUri: p.url };
    if (p.mediaType) file.mimeType = p.mediaType;
    if (p.filename) file.name = p.filename;
    return { file };
  }
  // A 0.3 data part holds an object; any other JSON value travels as `{value}`.
  return { data: { data: isObj(p.data) ? p.data : { value: p.data ?? null } } };
}

export function messageToProto(m: Message): Obj {
  const out: Obj = { messageId: m.messageId, role: m.role, content: m.parts.map(partToProto) };
  if (m.contextId) out.contextId = m.contextId;
  if (m.taskId) out.taskId = m.taskId;
  if (m.metadata) out.metadata = m.metadata;
  return out;
}

/** The 1.0 SendMessageRequest the connector builds, as the 0.3 proto `SendMessageRequest`. */
export function sendRequestToProto(p: {
  message: Message;
  configuration?: {
    returnImmediately?: boolean;
    historyLength?: number;
    taskPushNotificationConfig?: TaskPushNotificationConfig;
  };
}): Obj {
  const out: Obj = { message: messageToProto(p.message) };
  const c = p.configuration;
  if (c) {
    const cfg: Obj = {};
    if (c.returnImmediately !== undefined) cfg.blocking = !c.returnImmediately;
    if (c.historyLength !== undefined) cfg.historyLength = c.historyLength;
    if (c.taskPushNotificationConfig)
      cfg.pushNotification = pushConfigBodyToV03(c.taskPushNotificationConfig);
    out.configuration = cfg;
  }
  return out;
}

export function pushConfigToProto(taskId: string, c: TaskPushNotificationConfig): Obj {
  return {
    name: `tasks/${taskId}/pushNotificationConfigs/${c.id ?? ''}`,
    pushNotificationConfig: pushConfigBodyToV03(c),
  };
}

/** A 0.3 proto push config as the flat 1.0 one (ids from its resource name). */
export function pushConfigFromProto(v: unknown): Obj {
  if (!isObj(v)) return {};
  const m =
    typeof v.name === 'string' ? /^tasks\/([^/]+)\/pushNotificationConfigs\/(.*)$/.exec(v.name) : null;
  const body = isObj(v.pushNotificationConfig) ? v.pushNotificationConfig : {};
  const out: Obj = { ...body };
  if (m) {
    out.taskId = m[1];
    if (m[2]) out.id = m[2];
  }
  return out;
}

function partFromProto(v: unknown): unknown {
  if (!isObj(v)) return v;
  if (typeof v.text === 'string') return { text: v.text };
  if (isObj(v.file)) {
    const f = v.file;
    const out: Obj = {};
    if (typeof f.fileWithUri === 'string') out.url = f.fileWithUri;
    else if (typeof f.fileWithBytes === 'string') out.raw = f.fileWithBytes;
    if (typeof f.mimeType === 'string' && f.mimeType) out.mediaType = f.mimeType;
    if (typeof f.name === 'string' && f.name) out.filename = f.name;
    return out;
  }
  if (isObj(v.data)) return { data: v.data.data ?? null };
  return v;
}

function messageFromProto(v: unknown): unknown {
  if (!isObj(v)) return v;
  const { content, ...rest } = v;
  return { ...rest, parts: Array.isArray(content) ? content.map(partFromProto) : [] };
}

function statusFromProto(v: unknown): unknown {
  if (!isObj(v)) return v;
  const out: Obj = { ...v };
  if (v.state === 'TASK_STATE_CANCELLED') out.state = 'TASK_STATE_CANCELED';
  if (v.message !== undefined) out.message = messageFromProto(v.message);
  return out;
}

function artifactFromProto(v: unknown): unknown {
  if (!isObj(v)) return v;
  return { ...v, parts: Array.isArray(v.parts) ? v.parts.map(partFromProto) : [] };
}

export function taskFromProto(v: unknown): unknown {
  if (!isObj(v)) return v;
  const out: Obj = { ...v, status: statusFromProto(v.status) };
  if (Array.isArray(v.artifacts)) out.artifacts = v.artifacts.map(artifactFromProto);
  if (Array.isArray(v.history)) out.history = v.history.map(messageFromProto);
  return out;
}

/** A 0.3 `SendMessageResponse` or `StreamResponse` as the 1.0 one. */
export function responseFromProto(v: unknown): unknown {
  if (!isObj(v)) return v;
  if (v.task !== undefined) return { task: taskFromProto(v.task) };
  if (v.message !== undefined || v.msg !== undefined)
    return { message: messageFromProto(v.message ?? v.msg) };
  if (isObj(v.statusUpdate)) {
    const { final: _final, ...rest } = v.statusUpdate;
    return { statusUpdate: { ...rest, status: statusFromProto(rest.status) } };
  }
  if (isObj(v.artifactUpdate))
    return {
      artifactUpdate: { ...v.artifactUpdate, artifact: artifactFromProto(v.artifactUpdate.artifact) },
    };
  return v;
}

// --- 1.0 → 0.3 ProtoJSON (the host's answers) ----------------------------------------------

function statusToProto(s: TaskStatus): Obj {
  const out: Obj = { state: s.state === 'TASK_STATE_CANCELED' ? 'TASK_STATE_CANCELLED' : s.state };
  if (s.message) out.message = messageToProto(s.message);
  if (s.timestamp) out.timestamp = s.timestamp;
  return out;
}

function artifactToProto(a: Artifact): Obj {
  const out: Obj = { artifactId: a.artifactId, parts: a.parts.map(partToProto) };
  if (a.name !== undefined) out.name = a.name;
  if (a.description !== undefined) out.description = a.description;
  if (a.metadata) out.metadata = a.metadata;
  return out;
}

export function taskToProto(t: Task): Obj {
  const out: Obj = { id: t.id, contextId: t.contextId, status: statusToProto(t.status) };
  if (t.artifacts?.length) out.artifacts = t.artifacts.map(artifactToProto);
  if (t.history?.length) out.history = t.history.map(messageToProto);
  if (t.metadata) out.metadata = t.metadata;
  return out;
}

/** A 1.0 StreamResponse (or SendMessage answer) as the 0.3 proto one; `final` from the state. */
export function streamResponseToProto(r: StreamResponse): Obj {
  if ('task' in r) return { task: taskToProto(r.task) };
  if ('message' in r) return { message: messageToProto(r.message) };
  if ('statusUpdate' in r) {
    const u = r.statusUpdate;
    const state = u.status.state;
    return {
      statusUpdate: {
        taskId: u.taskId,
        contextId: u.contextId,
        status: statusToProto(u.status),
        final: isTerminalTaskState(state) || isInterruptedTaskState(state),
        ...(u.metadata ? { metadata: u.metadata } : {}),
      },
    };
  }
  const u = r.artifactUpdate;
  return {
    artifactUpdate: {
      taskId: u.taskId,
      contextId: u.contextId,
      artifact: artifactToProto(u.artifact),
      ...(u.append !== undefined ? { append: u.append } : {}),
      ...(u.lastChunk !== undefined ? { lastChunk: u.lastChunk } : {}),
    },
  };
}

/** A 0.3 proto `SendMessageRequest` body as the 1.0 request JSON (the 1.0 decoder validates it). */
export function sendRequestFromProto(v: Obj): Obj {
  const out: Obj = { message: messageFromProto(v.message ?? v.request) };
  if (isObj(v.metadata)) out.metadata = v.metadata;
  const c = v.configuration;
  if (isObj(c)) {
    const cfg: Obj = {};
    if (c.acceptedOutputModes !== undefined) cfg.acceptedOutputModes = c.acceptedOutputModes;
    if (c.historyLength !== undefined) cfg.historyLength = c.historyLength;
    // proto3 omits a false `blocking`: in a configuration that is present, absent means false.
    cfg.returnImmediately = c.blocking !== true;
    if (isObj(c.pushNotification))
      cfg.taskPushNotificationConfig = pushConfigFromV03(
        c.pushNotification,
        undefined,
        'configuration.pushNotification',
      );
    out.configuration = cfg;
  }
  return out;
}
