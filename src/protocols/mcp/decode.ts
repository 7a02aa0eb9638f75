import { McpError, invalidParams, invalidRequest, parseError } from './errors.ts';
import {
  type Obj,
  isObj,
  json,
  jsonObj,
  keyPath,
  nonEmptyStr,
  obj,
  optInt,
  optJsonObj,
  optObj,
  optStr,
  own,
  str,
  strArray,
} from './fields.ts';
import { decodeInputResponses } from './input.ts';
import {
  META,
  type CallToolParams,
  type ClientCapabilities,
  type Implementation,
  type JsonRpcId,
  type LegacyTaskMetadata,
  type RequestMeta,
  type SubscriptionsListenParams,
  type TaskIdParams,
  type UpdateTaskParams,
} from './types.ts';

/**
 * Decoders for what a client sends an MCP server: the JSON-RPC envelope, the 2026-07-28 per-request
 * `_meta`, and the params of `tools/call`, `tasks/get|update|cancel` and `subscriptions/listen`.
 * Each returns the typed value or throws McpError naming the field; nothing else, whatever the input
 * (fuzzed in test/protocols/mcp). Unknown fields are ignored, as JSON-RPC peers expect.
 */

/** A request (has `id`) or a notification (has none). */
export type IncomingMessage =
  | { kind: 'request'; id: JsonRpcId; method: string; params: Obj | undefined }
  | { kind: 'notification'; method: string; params: Obj | undefined };

/** Raw body text → parsed JSON, or -32700. */
export function parseBody(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw parseError('body is not valid JSON');
  }
}

/**
 * The JSON-RPC 2.0 envelope. Batches are refused: neither era's Streamable HTTP allows them, and a
 * batch would carry several `Mcp-Method` values under one header.
 */
export function decodeMessage(body: unknown): IncomingMessage {
  if (Array.isArray(body)) throw invalidRequest('body', 'batches are not supported');
  if (!isObj(body)) throw invalidRequest('body', 'expected a JSON-RPC object');
  if (own(body, 'jsonrpc') !== '2.0') throw invalidRequest('jsonrpc', 'expected "2.0"');
  const method = own(body, 'method');
  if (typeof method !== 'string' || method.length === 0)
    throw invalidRequest('method', 'expected a non-empty string');
  const p = own(body, 'params');
  if (p !== undefined && !isObj(p)) throw invalidRequest('params', 'expected an object');
  const params = p === undefined ? undefined : (json(p, 'params', invalidRequest) as Obj);
  if (!Object.prototype.hasOwnProperty.call(body, 'id')) return { kind: 'notification', method, params };
  const id = body.id;
  if (!(typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)))) {
    throw invalidRequest('id', 'expected a string or an integer');
  }
  return { kind: 'request', id, method, params };
}

/** The request id when the body has a usable one, for error replies to bodies that failed to decode. */
export function peekId(body: unknown): JsonRpcId | null {
  if (!isObj(body)) return null;
  const id = own(body, 'id');
  return typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)) ? id : null;
}

/** `params._meta` when present and an object; the header rules need it before full decoding. */
export function peekMeta(params: unknown): Obj | undefined {
  if (!isObj(params)) return undefined;
  const m = own(params, '_meta');
  return isObj(m) ? m : undefined;
}

/**
 * The 2026-07-28 `_meta` envelope: `protocolVersion` and `clientCapabilities` are required on every
 * request (a server must not infer capabilities from earlier requests); `clientInfo` is optional.
 */
export function decodeRequestMeta(params: Obj | undefined, path = 'params'): RequestMeta {
  const p = params ?? {};
  const meta = obj(own(p, '_meta'), `${path}._meta`);
  const at = `${path}._meta`;
  const protocolVersion = nonEmptyStr(meta, META.protocolVersion, at);
  const caps = obj(own(meta, META.clientCapabilities), `${at}["${META.clientCapabilities}"]`);
  const clientCapabilities = decodeCapabilities(caps, `${at}["${META.clientCapabilities}"]`);
  const out: RequestMeta = { protocolVersion, clientCapabilities, raw: jsonObj(meta, at) };
  const info = own(meta, META.clientInfo);
  if (info !== undefined) out.clientInfo = decodeImplementation(info, `${at}["${META.clientInfo}"]`);
  return out;
}

export function decodeCapabilities(caps: Obj, path: string): ClientCapabilities {
  const out = jsonObj(caps, path) as ClientCapabilities;
  const ext = own(caps, 'extensions');
  if (ext !== undefined) {
    const e = obj(ext, `${path}.extensions`);
    for (const k of Object.keys(e)) obj(e[k], `${path}.extensions["${k}"]`);
  }
  return out;
}

export function decodeImplementation(v: unknown, path: string, fail = invalidParams): Implementation {
  const o = obj(v, path, fail);
  const out: Implementation = { name: str(o, 'name', path, fail), version: str(o, 'version', path, fail) };
  const title = optStr(o, 'title', path, fail);
  if (title !== undefined) out.title = title;
  return out;
}

function withMeta<T extends { meta?: RequestMeta }>(value: T, params: Obj, modern: boolean): T {
  if (modern) value.meta = decodeRequestMeta(params);
  return value;
}

/**
 * `tools/call` params for either era. `modern` requires the `_meta` envelope. The legacy `task` param
 * is read only for the legacy era: the extension says a modern server MUST ignore it, neither an
 * opt-in nor an error, so even a malformed one must not fail the call.
 */
export function decodeCallToolParams(params: Obj | undefined, modern: boolean): CallToolParams {
  const p = obj(params, 'params');
  const out: CallToolParams = { name: nonEmptyStr(p, 'name', 'params') };
  const args = optJsonObj(p, 'arguments', 'params');
  if (args !== undefined) out.arguments = args;
  const responses = own(p, 'inputResponses');
  if (responses !== undefined) out.inputResponses = decodeInputResponses(responses, 'params.inputResponses');
  const state = optStr(p, 'requestState', 'params');
  if (state !== undefined) out.requestState = state;
  if (!modern) {
    const task = optObj(p, 'task', 'params');
    if (task !== undefined) out.task = decodeLegacyTaskMetadata(task);
  }
  return withMeta(out, p, modern);
}

function decodeLegacyTaskMetadata(task: Obj): LegacyTaskMetadata {
  const ttl = optInt(task, 'ttl', 'params.task', 0);
  return ttl === undefined ? {} : { ttl };
}

/** `tasks/get` and `tasks/cancel` (both eras). */
export function decodeTaskIdParams(params: Obj | undefined, modern: boolean): TaskIdParams {
  const p = obj(params, 'params');
  const out: TaskIdParams = { taskId: nonEmptyStr(p, 'taskId', 'params') };
  return withMeta(out, p, modern);
}

/** `tasks/update` (modern only). */
export function decodeUpdateTaskParams(params: Obj | undefined): UpdateTaskParams {
  const p = obj(params, 'params');
  const out: UpdateTaskParams = {
    taskId: nonEmptyStr(p, 'taskId', 'params'),
    inputResponses: decodeInputResponses(own(p, 'inputResponses'), 'params.inputResponses'),
  };
  return withMeta(out, p, true);
}

/**
 * `tasks/update` as a server reads it: the envelope strictly, the answers only as a map of objects.
 * The extension says a server SHOULD ignore answers to keys that are not outstanding, so an answer
 * under such a key must not fail the request by its shape; the server decodes the answers it takes
 * with `decodeInputResponses`.
 */
export function decodeUpdateTaskEnvelope(params: Obj | undefined): {
  taskId: string;
  inputResponses: Record<string, Obj>;
  meta: RequestMeta;
} {
  const p = obj(params, 'params');
  const raw = obj(own(p, 'inputResponses'), 'params.inputResponses');
  const inputResponses = Object.fromEntries(
    Object.keys(raw).map((key) => [key, obj(raw[key], keyPath('params.inputResponses', key))]),
  );
  return { taskId: nonEmptyStr(p, 'taskId', 'params'), inputResponses, meta: decodeRequestMeta(p) };
}

/** `subscriptions/listen`; only the task part of `notifications` is read here. */
export function decodeSubscriptionsListenParams(params: Obj | undefined): SubscriptionsListenParams {
  const p = obj(params, 'params');
  const n = obj(own(p, 'notifications'), 'params.notifications');
  const ids = own(n, 'taskIds');
  const notifications: { taskIds?: string[] } = {};
  if (ids !== undefined) notifications.taskIds = strArray(ids, 'params.notifications.taskIds');
  const out: SubscriptionsListenParams = { notifications };
  return withMeta(out, p, true);
}

/** True when the decoders above raised this error: bad input rather than a fault of ours. */
export function isDecodeError(e: unknown): e is McpError {
  return (
    e instanceof McpError &&
    (e.code === 'InvalidParams' || e.code === 'InvalidRequest' || e.code === 'ParseError')
  );
}
