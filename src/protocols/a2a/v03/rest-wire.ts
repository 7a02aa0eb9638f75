import type { Message, Part, TaskPushNotificationConfig } from '../types.ts';
import { pushConfigBodyToV03 } from './wire.ts';

/**
 * A2A 0.3 over HTTP+JSON: bodies are the ProtoJSON of the 0.3 proto (package `a2a.v1`), which is
 * neither the 0.3 JSON-RPC shape (no `kind`) nor 1.0: a message holds `content` (not `parts`), a file
 * part is `{file: {fileWithUri | fileWithBytes, mimeType, name}}`, a data part `{data: {data}}`, the
 * canceled state is spelled `TASK_STATE_CANCELLED`, and a push config is
 * `{name: "tasks/{id}/pushNotificationConfigs/{configId}", pushNotificationConfig}`. Answers are
 * `{task}` or `{message}` (send) and StreamResponse-like frames, as in 1.0.
 */

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

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
