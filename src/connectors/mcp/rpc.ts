import { TaskplaneError } from '../../core/errors.ts';
import { requestHeaders } from '../../protocols/mcp/headers.ts';
import type { JsonObject, JsonRpcErrorObject, JsonValue } from '../../protocols/mcp/types.ts';
import { readBoundedText } from '../remote-limits.ts';
import { readSseJson } from '../sse-reader.ts';
import { traceHeaders } from '../trace-headers.ts';
import { transportError } from '../transport-errors.ts';
import { isObj } from '../../core/json-object.ts';

/**
 * JSON-RPC over MCP Streamable HTTP, client side: one POST per request, answered with JSON or with an
 * SSE stream that carries the response (and, in the 2025 era, requests the server makes of us meanwhile).
 * Errors become TaskplaneError per the Connector contract (connectors/connector.ts): the peer's own
 * JSON-RPC error keeps its code in `details.rpcCode`; an answer that is not JSON-RPC at all (an HTML
 * page, a gateway's 404) is `unavailable` with `details.route = 'not_protocol'`, never an outcome.
 */

export interface RpcOptions {
  url: string;
  /** Sent on every call (authorization and the like). */
  headers: Record<string, string>;
  timeoutMs: number;
  fetch: typeof fetch;
}

/** A request the server sent us on a response stream (2025 era: elicitation for a task). */
export interface ServerRequest {
  id: string | number;
  method: string;
  params: JsonObject;
}

export interface CallOptions {
  /** `modern`: the 2026-07-28 routing headers; `legacy`: the version header and the session. */
  protocolVersion: string;
  modern: boolean;
  sessionId?: string | null;
  /** Called for each server→client request seen on an SSE answer; returning true ends the read early. */
  onServerRequest?: (req: ServerRequest) => boolean;
}

export interface CallResult {
  result: JsonValue | undefined;
  /** `Mcp-Session-Id` the server set (2025 era, at initialize). */
  sessionId: string | null;
  /** True when the read ended at a server request, before the response arrived. */
  interrupted: boolean;
}

/** The peer's own JSON-RPC error, mapped to our codes. */
export class McpRpcError extends TaskplaneError {
  constructor(
    readonly rpc: JsonRpcErrorObject,
    readonly httpStatus: number,
    code: TaskplaneError['code'],
  ) {
    super(code, `remote: ${rpc.code} ${rpc.message.slice(0, 200)}`, {
      details: { rpcCode: rpc.code, httpStatus },
      retryable: code === 'unavailable',
    });
  }
}

export function rpcErrorCode(rpcCode: number, method: string): TaskplaneError['code'] {
  // Unknown or expired task ids answer -32602 (the extension has no other code); on the tasks methods
  // that is the protocol's own "I do not know this task".
  if (rpcCode === -32602 && method.startsWith('tasks/')) return 'not_found';
  if (rpcCode === -32602 || rpcCode === -32600 || rpcCode === -32700) return 'invalid_argument';
  if (rpcCode === -32601 || rpcCode === -32021 || rpcCode === -32022) return 'unsupported';
  if (rpcCode === -32603) return 'unavailable';
  return 'remote_error';
}

function notProtocol(httpStatus: number, what: string): TaskplaneError {
  return new TaskplaneError(
    'unavailable',
    `remote: HTTP ${httpStatus} from a route that did not answer as MCP (${what})`,
    { details: { httpStatus, route: 'not_protocol' } },
  );
}

let counter = 0;

/** One JSON-RPC message out of a body: our response, or something else. */
function classify(
  msg: unknown,
  id: number,
): { kind: 'response'; value: Record<string, unknown> } | { kind: 'request'; req: ServerRequest } | null {
  if (!isObj(msg)) return null;
  if (msg.id === id && ('result' in msg || 'error' in msg)) return { kind: 'response', value: msg };
  // One request per POST: an error the server could not tie to our id (a refused session) is ours.
  if (msg.id === null && 'error' in msg) return { kind: 'response', value: msg };
  if (typeof msg.method === 'string' && (typeof msg.id === 'string' || typeof msg.id === 'number'))
    return {
      kind: 'request',
      req: { id: msg.id, method: msg.method, params: isObj(msg.params) ? (msg.params as JsonObject) : {} },
    };
  return null;
}

export async function rpcCall(
  o: RpcOptions,
  method: string,
  params: JsonObject,
  opts: CallOptions,
  signal: AbortSignal,
): Promise<CallResult> {
  const id = ++counter;
  const body = { jsonrpc: '2.0' as const, id, method, params };
  const protocol = opts.modern
    ? requestHeaders(body, opts.protocolVersion)
    : { 'MCP-Protocol-Version': opts.protocolVersion };
  const timeout = AbortSignal.timeout(o.timeoutMs);
  const both = AbortSignal.any([signal, timeout]);
  const response = await post(o, opts, protocol, body, both, signal, () => timeout.aborted);
  const sessionId = response.headers.get('mcp-session-id');
  const type = (response.headers.get('content-type') ?? '').toLowerCase();
  try {
    if (type.includes('text/event-stream') && response.body) {
      for await (const msg of readSseJson(response.body, both)) {
        const c = classify(msg, id);
        if (c?.kind === 'response') return { ...answer(c.value, response.status, method), sessionId };
        if (c?.kind === 'request' && opts.onServerRequest?.(c.req))
          return { result: undefined, sessionId, interrupted: true };
      }
      if (both.aborted) throw transportError(new Error('aborted'), signal, () => timeout.aborted);
      throw new TaskplaneError('unavailable', `remote: ${method} stream ended without a response`);
    }
    const text = await readBoundedText(response, `${method} answer`, (err) =>
      transportError(err, signal, () => timeout.aborted),
    );
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      if (response.status >= 500 || response.status === 429)
        throw new TaskplaneError('unavailable', `remote: HTTP ${response.status}`, {
          details: { httpStatus: response.status },
        });
      if (response.status === 401) throw new TaskplaneError('unauthenticated', 'remote: HTTP 401');
      if (response.status === 403) throw new TaskplaneError('permission_denied', 'remote: HTTP 403');
      throw notProtocol(response.status, 'body is not JSON');
    }
    const c = classify(msg, id);
    if (c?.kind !== 'response') throw notProtocol(response.status, 'not a JSON-RPC response');
    return { ...answer(c.value, response.status, method), sessionId };
  } finally {
    if (!response.bodyUsed) await response.body?.cancel().catch(() => {});
  }
}

function answer(
  msg: Record<string, unknown>,
  httpStatus: number,
  method: string,
): { result: JsonValue | undefined; interrupted: false } {
  if ('error' in msg) {
    const e = msg.error;
    const rpc: JsonRpcErrorObject =
      isObj(e) && typeof e.code === 'number' && typeof e.message === 'string'
        ? { code: e.code, message: e.message, ...(e.data !== undefined ? { data: e.data as JsonValue } : {}) }
        : { code: -32603, message: 'malformed error object' };
    throw new McpRpcError(rpc, httpStatus, rpcErrorCode(rpc.code, method));
  }
  return { result: msg.result as JsonValue, interrupted: false };
}

/**
 * One POST of a JSON-RPC message with the Streamable HTTP headers (`protocol`: the version, and the
 * method and name headers where the era has them), the session, the trace context and the target's own
 * headers; a fetch that got no answer is a transport error.
 */
async function post(
  o: RpcOptions,
  opts: CallOptions,
  protocol: Record<string, string>,
  message: object,
  signal: AbortSignal,
  caller: AbortSignal,
  timedOut: () => boolean,
): Promise<Response> {
  try {
    return await o.fetch(o.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...protocol,
        ...(opts.sessionId ? { 'mcp-session-id': opts.sessionId } : {}),
        ...traceHeaders(),
        ...o.headers,
      },
      body: JSON.stringify(message),
      signal,
    });
  } catch (err) {
    throw transportError(err, caller, timedOut);
  }
}

/** POST of a JSON-RPC response or notification (no answer body expected; 2xx means it was taken). */
export async function rpcSend(
  o: RpcOptions,
  message: JsonObject,
  opts: CallOptions,
  signal: AbortSignal,
): Promise<void> {
  const timeout = AbortSignal.timeout(o.timeoutMs);
  const response = await post(
    o,
    opts,
    { 'MCP-Protocol-Version': opts.protocolVersion },
    message,
    AbortSignal.any([signal, timeout]),
    signal,
    () => timeout.aborted,
  );
  await response.body?.cancel().catch(() => {});
  if (!response.ok)
    throw new TaskplaneError(
      response.status >= 500 ? 'unavailable' : 'remote_error',
      `remote: HTTP ${response.status}`,
      {
        details: { httpStatus: response.status },
      },
    );
}

/**
 * A request whose answer is a long-lived SSE stream of notifications (`subscriptions/listen`): yields
 * each JSON-RPC notification as it arrives, until the server ends the stream (normal end) or it drops
 * (`unavailable`). A JSON answer is the server's refusal (thrown as McpRpcError). The per-call timeout
 * covers only the wait for the response headers.
 */
export async function* rpcListen(
  o: RpcOptions,
  method: string,
  params: JsonObject,
  opts: CallOptions,
  signal: AbortSignal,
): AsyncGenerator<{ method: string; params: JsonObject }> {
  const id = ++counter;
  const body = { jsonrpc: '2.0' as const, id, method, params };
  const headersTimeout = AbortSignal.timeout(o.timeoutMs);
  const connecting = new AbortController();
  const both = AbortSignal.any([signal, connecting.signal]);
  const onTimeout = () => connecting.abort();
  headersTimeout.addEventListener('abort', onTimeout, { once: true });
  let response: Response;
  try {
    const protocol = requestHeaders(body, opts.protocolVersion);
    response = await post(o, opts, protocol, body, both, signal, () => headersTimeout.aborted);
  } finally {
    headersTimeout.removeEventListener('abort', onTimeout);
  }
  const type = (response.headers.get('content-type') ?? '').toLowerCase();
  if (!type.includes('text/event-stream') || !response.body) {
    let msg: unknown;
    // The headers' timeout is over once they came: only an abort can cut this read.
    const text = await readBoundedText(response, `${method} answer`, (err) =>
      transportError(err, signal, () => false),
    );
    try {
      msg = JSON.parse(text);
    } catch {
      throw notProtocol(response.status, 'body is not JSON');
    }
    const c = classify(msg, id);
    if (c?.kind !== 'response') throw notProtocol(response.status, 'not a JSON-RPC response');
    answer(c.value, response.status, method);
    throw new TaskplaneError('unavailable', `remote: ${method} answered without a stream`);
  }
  for await (const msg of readSseJson(response.body, both)) {
    if (!isObj(msg)) continue;
    const c = classify(msg, id);
    if (c?.kind === 'response') {
      answer(c.value, response.status, method);
      return;
    }
    if (typeof msg.method === 'string' && !('id' in msg))
      yield { method: msg.method, params: isObj(msg.params) ? (msg.params as JsonObject) : {} };
  }
}
