import { A2AError, invalidParams } from './errors.ts';
import {
  ROLES,
  TASK_STATES,
  type AuthenticationInfo,
  type CancelTaskRequest,
  type DeleteTaskPushNotificationConfigRequest,
  type GetTaskPushNotificationConfigRequest,
  type GetTaskRequest,
  type JsonObject,
  type JsonValue,
  type ListTaskPushNotificationConfigsRequest,
  type ListTasksRequest,
  type Message,
  type Part,
  type Role,
  type SendMessageConfiguration,
  type SendMessageRequest,
  type SubscribeToTaskRequest,
  type TaskPushNotificationConfig,
  type TaskState,
} from './types.ts';
import { type Obj, isObj } from '../../core/json-object.ts';

/**
 * Lenient ProtoJSON decoders (docs/a2a-notes.md, "ProtoJSON input": accept snake_case
 * aliases and enum integers on input; unknown fields SHOULD be ignored; REQUIRED fields SHOULD be validated).
 * Each returns the strict
 * camelCase shape from types.ts or throws A2AError InvalidParamsError naming the field. They never
 * throw anything else, whatever the input (fuzzed in test/protocols).
 */

/** Keys whose values are free JSON (Struct/Value): copied as is, never re-cased. */
const OPAQUE_KEYS = new Set(['metadata', 'data', 'params', 'header']);

function camel(key: string): string {
  return key.includes('_') ? key.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase()) : key;
}

/**
 * snake_case → camelCase on every structural key; camelCase wins when both spellings are present.
 * Clients of 1.0 send camelCase, so the tree is first only scanned, and returned as it is (it is the
 * caller's fresh JSON.parse output) when no key needs a change: a copy of every object per request
 * cost more than the rest of decoding.
 */
export function normalizeKeys(value: unknown): unknown {
  return needsNormalizing(value, 0) ? normalizeTree(value, 0) : value;
}

function needsNormalizing(value: unknown, depth: number): boolean {
  if (depth > 64) throw invalidParams('params', 'nested too deeply');
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) {
    for (const v of value) if (needsNormalizing(v, depth + 1)) return true;
    return false;
  }
  for (const k in value) {
    if (!Object.prototype.hasOwnProperty.call(value, k)) continue;
    if (k.includes('_')) return true; // a snake_case key, or `__proto__` (dropped by the copy)
    if (!OPAQUE_KEYS.has(k) && needsNormalizing((value as Obj)[k], depth + 1)) return true;
  }
  return false;
}

function normalizeTree(value: unknown, depth: number): unknown {
  if (depth > 64) throw invalidParams('params', 'nested too deeply');
  if (Array.isArray(value)) return value.map((v) => normalizeTree(v, depth + 1));
  if (value === null || typeof value !== 'object') return value;
  const out: Obj = {};
  for (const [k, v] of Object.entries(value as Obj)) {
    const key = camel(k);
    if (key !== k && Object.prototype.hasOwnProperty.call(value, key)) continue;
    if (key === '__proto__') continue;
    out[key] = OPAQUE_KEYS.has(key) ? v : normalizeTree(v, depth + 1);
  }
  return out;
}

export function asObject(v: unknown, field: string): Obj {
  if (!isObj(v)) throw invalidParams(field, 'must be an object');
  return v;
}

function str(o: Obj, key: string, field: string, required: true): string;
function str(o: Obj, key: string, field: string, required?: false): string | undefined;
function str(o: Obj, key: string, field: string, required = false): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) {
    if (required) throw invalidParams(field, 'is required');
    return undefined;
  }
  if (typeof v !== 'string') throw invalidParams(field, 'must be a string');
  if (required && v === '') throw invalidParams(field, 'must not be empty');
  return v;
}

function bool(o: Obj, key: string, field: string): boolean | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'boolean') return v;
  // REST query parameters arrive as strings (A2A 1.0, ListTasks: booleans `true`/`false`).
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw invalidParams(field, 'must be a boolean');
}

/** int32 as number or numeric string (ProtoJSON). */
function int(o: Obj, key: string, field: string, min = 0, max = 2_147_483_647): number | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  const n = typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n)) throw invalidParams(field, 'must be an integer');
  if (n < min || n > max) throw invalidParams(field, `must be between ${min} and ${max}`);
  return n;
}

function stringArray(o: Obj, key: string, field: string): string[] | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string'))
    throw invalidParams(field, 'must be an array of strings');
  return v as string[];
}

function jsonObject(o: Obj, key: string, field: string): JsonObject | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) throw invalidParams(field, 'must be an object');
  return v as JsonObject;
}

function enumValue<T extends string>(values: readonly T[], v: unknown, field: string): T | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < values.length) return values[v];
  if (typeof v === 'string') {
    if ((values as readonly string[]).includes(v)) return v as T;
    if (/^\d+$/.test(v) && Number(v) < values.length) return values[Number(v)];
  }
  throw invalidParams(field, `must be one of ${values.join(', ')}`);
}

export function decodeTaskState(v: unknown, field = 'status'): TaskState | undefined {
  const s = enumValue(TASK_STATES, v, field);
  return s === 'TASK_STATE_UNSPECIFIED' ? undefined : s;
}

function decodeRole(v: unknown, field: string): Role {
  const r = enumValue(ROLES, v, field);
  if (r === undefined || r === 'ROLE_UNSPECIFIED')
    throw invalidParams(field, 'must be ROLE_USER or ROLE_AGENT');
  return r;
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

export function decodePart(v: unknown, field: string): Part {
  const o = asObject(v, field);
  // `data` is a google.protobuf.Value: JSON null is a valid value there (NullValue), so its presence counts.
  const members = (['text', 'raw', 'url', 'data'] as const).filter((k) =>
    k === 'data'
      ? Object.prototype.hasOwnProperty.call(o, 'data') && o.data !== undefined
      : o[k] !== undefined && o[k] !== null,
  );
  if (members.length !== 1) throw invalidParams(field, 'must have exactly one of text, raw, url, data');
  const part: Part = {};
  const kind = members[0]!;
  if (kind === 'data') part.data = o.data as JsonValue;
  else {
    const s = str(o, kind, `${field}.${kind}`)!;
    if (kind === 'raw' && !BASE64.test(s)) throw invalidParams(`${field}.raw`, 'must be base64');
    part[kind] = s;
  }
  const metadata = jsonObject(o, 'metadata', `${field}.metadata`);
  if (metadata) part.metadata = metadata;
  const filename = str(o, 'filename', `${field}.filename`);
  if (filename !== undefined) part.filename = filename;
  const mediaType = str(o, 'mediaType', `${field}.mediaType`);
  if (mediaType !== undefined) part.mediaType = mediaType;
  return part;
}

export function decodeMessage(v: unknown, field = 'message'): Message {
  const o = asObject(v, field);
  const partsRaw = o.parts;
  if (!Array.isArray(partsRaw) || partsRaw.length === 0)
    throw invalidParams(`${field}.parts`, 'must be a non-empty array');
  const msg: Message = {
    messageId: str(o, 'messageId', `${field}.messageId`, true),
    role: decodeRole(o.role, `${field}.role`),
    parts: partsRaw.map((p, i) => decodePart(p, `${field}.parts[${i}]`)),
  };
  const contextId = str(o, 'contextId', `${field}.contextId`);
  if (contextId) msg.contextId = contextId;
  const taskId = str(o, 'taskId', `${field}.taskId`);
  if (taskId) msg.taskId = taskId;
  const metadata = jsonObject(o, 'metadata', `${field}.metadata`);
  if (metadata) msg.metadata = metadata;
  const extensions = stringArray(o, 'extensions', `${field}.extensions`);
  if (extensions?.length) msg.extensions = extensions;
  const refs = stringArray(o, 'referenceTaskIds', `${field}.referenceTaskIds`);
  if (refs?.length) msg.referenceTaskIds = refs;
  return msg;
}

/** RFC 9110 §11.1 auth-scheme: a `token`. */
const AUTH_SCHEME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * A header value that reaches the receiver unchanged: visible ASCII with inner spaces or tabs only.
 * CR/LF would split the request (Node refuses to send it at all), and leading or trailing whitespace
 * or non-ASCII octets are stripped or re-encoded on the way, so the receiver would compare another value.
 */
const HEADER_VALUE = /^[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?$/;
const HEADER_VALUE_RULE = 'must be one HTTP header value: visible ASCII, spaces only inside, no CR or LF';

/**
 * The push config fields the host sends as HTTP headers (`token` as X-A2A-Notification-Token,
 * `authentication` as `Authorization: <scheme> <credentials>`) must be sendable. Refused when the
 * config is created, never found out at delivery time. Exported for the host's own check on create.
 */
export function checkPushHeaderFields(cfg: TaskPushNotificationConfig, prefix = ''): void {
  const field = prefix ? `${prefix}.` : '';
  if (cfg.token !== undefined && cfg.token !== '' && !HEADER_VALUE.test(cfg.token))
    throw invalidParams(`${field}token`, HEADER_VALUE_RULE);
  const auth = cfg.authentication;
  if (!auth) return;
  if (!AUTH_SCHEME.test(auth.scheme))
    throw invalidParams(`${field}authentication.scheme`, 'must be an HTTP auth scheme token (RFC 9110)');
  if (auth.credentials !== undefined && auth.credentials !== '' && !HEADER_VALUE.test(auth.credentials))
    throw invalidParams(`${field}authentication.credentials`, HEADER_VALUE_RULE);
}

function decodeAuthentication(v: unknown, field: string): AuthenticationInfo | undefined {
  if (v === undefined || v === null) return undefined;
  const o = asObject(v, field);
  // 0.3 had `schemes[]`; take the first, as the JS SDK's compat layer does (`@a2a-js/sdk`).
  let scheme = str(o, 'scheme', `${field}.scheme`);
  if (scheme === undefined && Array.isArray(o.schemes) && typeof o.schemes[0] === 'string')
    scheme = o.schemes[0];
  if (!scheme) throw invalidParams(`${field}.scheme`, 'is required');
  const auth: AuthenticationInfo = { scheme };
  const credentials = str(o, 'credentials', `${field}.credentials`);
  if (credentials !== undefined) auth.credentials = credentials;
  return auth;
}

export function decodePushConfig(v: unknown, field = 'config'): TaskPushNotificationConfig {
  const o = asObject(v, field);
  const cfg: TaskPushNotificationConfig = { url: str(o, 'url', `${field}.url`, true) };
  const id = str(o, 'id', `${field}.id`);
  if (id) cfg.id = id;
  const taskId = str(o, 'taskId', `${field}.taskId`);
  if (taskId) cfg.taskId = taskId;
  const tenant = str(o, 'tenant', `${field}.tenant`);
  if (tenant) cfg.tenant = tenant;
  const token = str(o, 'token', `${field}.token`);
  if (token) cfg.token = token;
  const auth = decodeAuthentication(o.authentication, `${field}.authentication`);
  if (auth) cfg.authentication = auth;
  checkPushHeaderFields(cfg, field);
  return cfg;
}

function decodeConfiguration(v: unknown, field: string): SendMessageConfiguration | undefined {
  if (v === undefined || v === null) return undefined;
  const o = asObject(v, field);
  const cfg: SendMessageConfiguration = {};
  const modes = stringArray(o, 'acceptedOutputModes', `${field}.acceptedOutputModes`);
  if (modes?.length) cfg.acceptedOutputModes = modes;
  // RC spelling `pushNotificationConfig` accepted as an alias (A2A 1.0, data model).
  const push = o.taskPushNotificationConfig ?? o.pushNotificationConfig;
  if (push !== undefined && push !== null)
    cfg.taskPushNotificationConfig = decodePushConfig(push, `${field}.taskPushNotificationConfig`);
  const historyLength = int(o, 'historyLength', `${field}.historyLength`);
  if (historyLength !== undefined) cfg.historyLength = historyLength;
  const ri = bool(o, 'returnImmediately', `${field}.returnImmediately`);
  if (ri !== undefined) cfg.returnImmediately = ri;
  else {
    // RC `blocking` has inverse polarity.
    const blocking = bool(o, 'blocking', `${field}.blocking`);
    if (blocking !== undefined) cfg.returnImmediately = !blocking;
  }
  return cfg;
}

function tenantOf(o: Obj, req: { tenant?: string }): void {
  const tenant = str(o, 'tenant', 'tenant');
  if (tenant) req.tenant = tenant;
}

/** Normalizes then validates; wraps anything unexpected as InvalidParams so callers see one error type. */
function decoder<T>(fn: (o: Obj) => T): (params: unknown) => T {
  return (params) => {
    try {
      return fn(asObject(normalizeKeys(params), 'params'));
    } catch (err) {
      if (err instanceof A2AError) throw err;
      throw invalidParams('params', 'could not be decoded');
    }
  };
}

export const decodeSendMessageRequest = decoder<SendMessageRequest>((o) => {
  const req: SendMessageRequest = { message: decodeMessage(o.message, 'message') };
  tenantOf(o, req);
  const configuration = decodeConfiguration(o.configuration, 'configuration');
  if (configuration) req.configuration = configuration;
  const metadata = jsonObject(o, 'metadata', 'metadata');
  if (metadata) req.metadata = metadata;
  return req;
});

export const decodeGetTaskRequest = decoder<GetTaskRequest>((o) => {
  const req: GetTaskRequest = { id: str(o, 'id', 'id', true) };
  tenantOf(o, req);
  const historyLength = int(o, 'historyLength', 'historyLength');
  if (historyLength !== undefined) req.historyLength = historyLength;
  return req;
});

export const decodeCancelTaskRequest = decoder<CancelTaskRequest>((o) => {
  const req: CancelTaskRequest = { id: str(o, 'id', 'id', true) };
  tenantOf(o, req);
  const metadata = jsonObject(o, 'metadata', 'metadata');
  if (metadata) req.metadata = metadata;
  return req;
});

export const decodeSubscribeToTaskRequest = decoder<SubscribeToTaskRequest>((o) => {
  const req: SubscribeToTaskRequest = { id: str(o, 'id', 'id', true) };
  tenantOf(o, req);
  return req;
});

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

export const decodeListTasksRequest = decoder<ListTasksRequest>((o) => {
  const req: ListTasksRequest = {};
  tenantOf(o, req);
  const contextId = str(o, 'contextId', 'contextId');
  if (contextId) req.contextId = contextId;
  const status = decodeTaskState(o.status, 'status');
  if (status) req.status = status;
  // pageSize 0 = unset (proto3 default), accepted leniently (clients send it); max 100 (A2A 1.0, ListTasks).
  const pageSize = int(o, 'pageSize', 'pageSize', 0, 100);
  if (pageSize) req.pageSize = pageSize;
  const pageToken = str(o, 'pageToken', 'pageToken');
  if (pageToken) req.pageToken = pageToken;
  const historyLength = int(o, 'historyLength', 'historyLength');
  if (historyLength !== undefined) req.historyLength = historyLength;
  const after = str(o, 'statusTimestampAfter', 'statusTimestampAfter');
  if (after) {
    if (!RFC3339.test(after) || Number.isNaN(Date.parse(after))) {
      throw invalidParams('statusTimestampAfter', 'must be an RFC 3339 timestamp');
    }
    req.statusTimestampAfter = after;
  }
  const includeArtifacts = bool(o, 'includeArtifacts', 'includeArtifacts');
  if (includeArtifacts !== undefined) req.includeArtifacts = includeArtifacts;
  return req;
});

/** CreateTaskPushNotificationConfig: the request IS a TaskPushNotificationConfig with `taskId` set. */
export const decodeCreatePushConfigRequest = decoder<TaskPushNotificationConfig & { taskId: string }>((o) => {
  const cfg = decodePushConfig(o, 'params');
  if (!cfg.taskId) throw invalidParams('taskId', 'is required');
  return cfg as TaskPushNotificationConfig & { taskId: string };
});

export const decodeGetPushConfigRequest = decoder<GetTaskPushNotificationConfigRequest>((o) => {
  const req: GetTaskPushNotificationConfigRequest = {
    taskId: str(o, 'taskId', 'taskId', true),
    id: str(o, 'id', 'id', true),
  };
  tenantOf(o, req);
  return req;
});

export const decodeDeletePushConfigRequest = decoder<DeleteTaskPushNotificationConfigRequest>((o) => {
  const req: DeleteTaskPushNotificationConfigRequest = {
    taskId: str(o, 'taskId', 'taskId', true),
    id: str(o, 'id', 'id', true),
  };
  tenantOf(o, req);
  return req;
});

export const decodeListPushConfigsRequest = decoder<ListTaskPushNotificationConfigsRequest>((o) => {
  const req: ListTaskPushNotificationConfigsRequest = { taskId: str(o, 'taskId', 'taskId', true) };
  tenantOf(o, req);
  const pageSize = int(o, 'pageSize', 'pageSize', 0, 1000);
  if (pageSize) req.pageSize = pageSize;
  const pageToken = str(o, 'pageToken', 'pageToken');
  if (pageToken) req.pageToken = pageToken;
  return req;
});

export const decodeGetExtendedAgentCardRequest = decoder<{ tenant?: string }>((o) => {
  const req: { tenant?: string } = {};
  tenantOf(o, req);
  return req;
});
