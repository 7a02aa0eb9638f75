import type { Clock } from '../../core/clock.ts';
import {
  decodeCancelTaskRequest,
  decodeCreatePushConfigRequest,
  decodeDeletePushConfigRequest,
  decodeGetExtendedAgentCardRequest,
  decodeGetPushConfigRequest,
  decodeGetTaskRequest,
  decodeListPushConfigsRequest,
  decodeListTasksRequest,
  decodeSendMessageRequest,
  decodeSubscribeToTaskRequest,
} from './decode.ts';
import { A2AError, jsonRpcError, jsonRpcErrorResponse, toA2AError } from './errors.ts';
import type { A2ARequestHandler, Authenticate, CallContext, StreamItem } from './handler.ts';
import {
  DEFAULT_MAX_BODY_BYTES,
  checkVersion,
  parseJson,
  readBodyLimited,
  requestExtensions,
} from './http-common.ts';
import { SSE_CONTENT_TYPE, sseReadableStream, type SseEvent } from './sse.ts';
import type { JsonRpcId } from './types.ts';
import { wireJson } from './wire-json.ts';

export interface BindingOptions {
  handler: A2ARequestHandler;
  authenticate: Authenticate;
  clock: Clock;
  /** @default 1048576 (1 MiB) */
  maxBodyBytes?: number;
  /** @default 15000 */
  keepAliveMs?: number;
  /** Reports errors that reach the edge as InternalError (the client sees no internal text). */
  onInternalError?: (err: unknown) => void;
}

type Call = (handler: A2ARequestHandler, params: unknown, ctx: CallContext) => Promise<unknown>;
type StreamCall = (
  handler: A2ARequestHandler,
  params: unknown,
  ctx: CallContext,
) => Promise<AsyncIterable<StreamItem[]>>;

/** JSON-RPC method table (§1.1). DeleteTaskPushNotificationConfig returns Empty → `result: null`. */
const UNARY: Record<string, Call> = {
  SendMessage: (h, p, c) => h.sendMessage(decodeSendMessageRequest(p), c),
  GetTask: (h, p, c) => h.getTask(decodeGetTaskRequest(p), c),
  ListTasks: (h, p, c) => h.listTasks(decodeListTasksRequest(p ?? {}), c),
  CancelTask: (h, p, c) => h.cancelTask(decodeCancelTaskRequest(p), c),
  CreateTaskPushNotificationConfig: (h, p, c) =>
    h.createTaskPushNotificationConfig(decodeCreatePushConfigRequest(p), c),
  GetTaskPushNotificationConfig: (h, p, c) =>
    h.getTaskPushNotificationConfig(decodeGetPushConfigRequest(p), c),
  ListTaskPushNotificationConfigs: (h, p, c) =>
    h.listTaskPushNotificationConfigs(decodeListPushConfigsRequest(p), c),
  DeleteTaskPushNotificationConfig: async (h, p, c) => {
    await h.deleteTaskPushNotificationConfig(decodeDeletePushConfigRequest(p), c);
    return null;
  },
  GetExtendedAgentCard: (h, p, c) => h.getExtendedAgentCard(decodeGetExtendedAgentCardRequest(p ?? {}), c),
};

const STREAMING: Record<string, StreamCall> = {
  SendStreamingMessage: (h, p, c) => h.sendStreamingMessage(decodeSendMessageRequest(p), c),
  SubscribeToTask: (h, p, c) => h.subscribeToTask(decodeSubscribeToTaskRequest(p), c),
};

const JSON_HEADERS = { 'content-type': 'application/json' };

function reply(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...JSON_HEADERS, ...headers } });
}

/**
 * The JSON-RPC 2.0 binding as a web-standard request handler (mount it at the interface URL). Errors
 * travel as HTTP 200 + error envelope, as the official SDK does, except a refused body size (413) and a
 * missing credential (401 + WWW-Authenticate) where the HTTP layer itself must say no.
 */
export function jsonRpcBinding(options: BindingOptions): (req: Request) => Promise<Response> {
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  return async (req) => {
    let id: JsonRpcId = null;
    try {
      if (req.method !== 'POST') throw new A2AError('InvalidRequestError', 'JSON-RPC requests are POSTed');
      const text = await readBodyLimited(req, maxBody);
      const envelope = parseJson(text);
      if (Array.isArray(envelope))
        throw new A2AError('InvalidRequestError', 'Batch requests are not supported');
      if (envelope === null || typeof envelope !== 'object') throw new A2AError('InvalidRequestError');
      const env = envelope as Record<string, unknown>;
      if (typeof env.id === 'string' || (typeof env.id === 'number' && Number.isFinite(env.id))) id = env.id;
      else if (env.id !== undefined && env.id !== null)
        throw new A2AError('InvalidRequestError', 'id must be a string, number or null');
      if (env.jsonrpc !== '2.0') throw new A2AError('InvalidRequestError', 'jsonrpc must be "2.0"');
      if (typeof env.method !== 'string')
        throw new A2AError('InvalidRequestError', 'method must be a string');
      checkVersion(req);
      const owner = await options.authenticate(req.headers);
      // `signal` is read lazily: creating the request's AbortSignal costs ~2 % CPU on unary calls that never use it.
      const ctx: CallContext = {
        owner,
        extensions: requestExtensions(req),
        get signal() {
          return req.signal;
        },
      };
      const lastEventId = req.headers.get('last-event-id');
      if (lastEventId) ctx.lastEventId = lastEventId;
      const params = env.params;
      if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
        throw new A2AError('InvalidParamsError', 'params must be an object');
      }
      // JSON-RPC carries the tenant in every request message (§1.1); REST has it in the path.
      const tenant = (params as Record<string, unknown> | undefined)?.tenant;
      if (typeof tenant === 'string' && tenant !== '') ctx.tenant = tenant;
      const method = env.method;
      const unary = Object.prototype.hasOwnProperty.call(UNARY, method) ? UNARY[method] : undefined;
      if (unary) {
        const result = await unary(options.handler, params, ctx);
        return reply({ jsonrpc: '2.0', id, result });
      }
      const streaming = Object.prototype.hasOwnProperty.call(STREAMING, method)
        ? STREAMING[method]
        : undefined;
      if (!streaming) throw new A2AError('MethodNotFoundError', `Method not found: ${method.slice(0, 100)}`);
      const items = await streaming(options.handler, params, ctx);
      const frames = toFrames(items, id);
      return new Response(
        sseReadableStream(frames, {
          clock: options.clock,
          ...(options.keepAliveMs !== undefined ? { keepAliveMs: options.keepAliveMs } : {}),
          errorEvent: (err) => {
            report(options, err);
            return { data: JSON.stringify({ jsonrpc: '2.0', id, error: jsonRpcError(err) }) };
          },
        }),
        {
          status: 200,
          headers: {
            'content-type': SSE_CONTENT_TYPE,
            'cache-control': 'no-cache',
            'x-accel-buffering': 'no',
          },
        },
      );
    } catch (err) {
      report(options, err);
      const e = toA2AError(err);
      const headers: Record<string, string> =
        e.errorName === 'UnauthenticatedError' ? { 'www-authenticate': 'Bearer' } : {};
      const status = e.spec.http === 413 || e.spec.http === 401 ? e.spec.http : 200;
      return reply(jsonRpcErrorResponse(id, e), status, headers);
    }
  };
}

function report(options: BindingOptions, err: unknown): void {
  if (!(err instanceof A2AError)) options.onInternalError?.(err);
}

async function* toFrames(batches: AsyncIterable<StreamItem[]>, id: JsonRpcId): AsyncGenerator<SseEvent[]> {
  const prefix = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`;
  for await (const batch of batches)
    yield batch.map((item) => ({ id: item.id, data: `${prefix}${wireJson(item.payload)}}` }));
}
