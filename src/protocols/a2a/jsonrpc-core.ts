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
import { DEFAULT_MAX_JSON_DEPTH } from '../../core/bounded-json.ts';
import { A2AError, jsonRpcError, jsonRpcErrorResponse } from './errors.ts';
import type { A2ARequestHandler, CallContext, StreamItem } from './handler.ts';
import {
  DEFAULT_MAX_BODY_BYTES,
  callContext,
  checkJsonContentType,
  checkVersion,
  jsonReplies,
  parseJson,
  requestedVersion,
  streamReply,
  type BindingOptions,
  type HttpReply,
  type HttpRequest,
} from './http-common.ts';
import type { SseEvent } from './sse.ts';
import type { JsonRpcId } from './types.ts';
import { wireJson } from './wire-json.ts';
import { callV03, v03ErrorEvent } from './v03/jsonrpc.ts';
import { isV03Version } from './v03/card.ts';
import { A2A_V03_VERSION } from './v03/wire.ts';

type Call = (handler: A2ARequestHandler, params: unknown, ctx: CallContext) => Promise<unknown>;
type StreamCall = (
  handler: A2ARequestHandler,
  params: unknown,
  ctx: CallContext,
) => Promise<AsyncIterable<StreamItem[]>>;

/** JSON-RPC method table (A2A 1.0, operations). DeleteTaskPushNotificationConfig returns Empty → `result: null`. */
const UNARY = new Map<string, Call>([
  ['SendMessage', (h, p, c) => h.sendMessage(decodeSendMessageRequest(p), c)],
  ['GetTask', (h, p, c) => h.getTask(decodeGetTaskRequest(p), c)],
  ['ListTasks', (h, p, c) => h.listTasks(decodeListTasksRequest(p ?? {}), c)],
  ['CancelTask', (h, p, c) => h.cancelTask(decodeCancelTaskRequest(p), c)],
  [
    'CreateTaskPushNotificationConfig',
    (h, p, c) => h.createTaskPushNotificationConfig(decodeCreatePushConfigRequest(p), c),
  ],
  [
    'GetTaskPushNotificationConfig',
    (h, p, c) => h.getTaskPushNotificationConfig(decodeGetPushConfigRequest(p), c),
  ],
  [
    'ListTaskPushNotificationConfigs',
    (h, p, c) => h.listTaskPushNotificationConfigs(decodeListPushConfigsRequest(p), c),
  ],
  [
    'DeleteTaskPushNotificationConfig',
    async (h, p, c) => {
      await h.deleteTaskPushNotificationConfig(decodeDeletePushConfigRequest(p), c);
      return null;
    },
  ],
  [
    'GetExtendedAgentCard',
    (h, p, c) => h.getExtendedAgentCard(decodeGetExtendedAgentCardRequest(p ?? {}), c),
  ],
]);

const STREAMING = new Map<string, StreamCall>([
  ['SendStreamingMessage', (h, p, c) => h.sendStreamingMessage(decodeSendMessageRequest(p), c)],
  ['SubscribeToTask', (h, p, c) => h.subscribeToTask(decodeSubscribeToTaskRequest(p), c)],
]);

/**
 * The JSON-RPC 2.0 binding, transport-neutral. Errors travel as HTTP 200 + error envelope, as the
 * official SDK does, except a refused body size (413) and a missing credential (401 +
 * WWW-Authenticate) where the HTTP layer itself must say no. Never rejects.
 */
export function jsonRpcCore(options: BindingOptions): (req: HttpRequest) => Promise<HttpReply> {
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const maxDepth = options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const replies = jsonReplies(options, 'application/json');
  return async (req) => {
    let id: JsonRpcId = null;
    try {
      if (req.method !== 'POST') throw new A2AError('InvalidRequestError', 'JSON-RPC requests are POSTed');
      checkJsonContentType(req);
      const envelope = parseJson(await req.text(maxBody), maxDepth);
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
      // A client that asks for 0.3 (or, as 0.3 clients do, for no version) is answered as 0.3 (A2A
      // 1.0, versioning; v03/jsonrpc.ts), where an unknown method is MethodNotFound; a 1.0 method
      // name without a version is still refused as VersionNotSupported.
      const v03 =
        !UNARY.has(env.method) &&
        !STREAMING.has(env.method) &&
        isV03Version(requestedVersion(req).majorMinor);
      if (!v03) checkVersion(req);
      const ctx = callContext(req, await options.authenticate(req.headers));
      const params = env.params;
      if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
        throw new A2AError('InvalidParamsError', 'params must be an object');
      }
      // JSON-RPC carries the tenant in every request message (A2A 1.0, operations); REST has it in the path.
      const tenant = (params as Record<string, unknown> | undefined)?.tenant;
      if (typeof tenant === 'string' && tenant !== '') ctx.tenant = tenant;
      const method = env.method;
      if (v03) {
        ctx.protocolVersion = A2A_V03_VERSION;
        const answer = await callV03(options.handler, method, params, ctx, id);
        if ('result' in answer) return replies.ok(200, { jsonrpc: '2.0', id, result: answer.result });
        return streamReply(options, answer.frames, (err) => v03ErrorEvent(err, id));
      }
      const unary = UNARY.get(method);
      if (unary) {
        const result = await unary(options.handler, params, ctx);
        return replies.ok(200, { jsonrpc: '2.0', id, result });
      }
      const streaming = STREAMING.get(method);
      if (!streaming) throw new A2AError('MethodNotFoundError', `Method not found: ${method.slice(0, 100)}`);
      const items = await streaming(options.handler, params, ctx);
      return streamReply(options, toFrames(items, id), (err) => ({
        data: JSON.stringify({ jsonrpc: '2.0', id, error: jsonRpcError(err) }),
      }));
    } catch (err) {
      // Errors travel as 200 + error envelope, except where the HTTP layer itself must say no.
      return replies.error(err, (e) => ({
        status: e.spec.http === 413 || e.spec.http === 401 ? e.spec.http : 200,
        // -32005 here: the 415 of UnsupportedMediaTypeError is the HTTP+JSON binding's.
        body: jsonRpcErrorResponse(id, e),
      }));
    }
  };
}

async function* toFrames(batches: AsyncIterable<StreamItem[]>, id: JsonRpcId): AsyncGenerator<SseEvent[]> {
  const prefix = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`;
  for await (const batch of batches)
    yield batch.map((item) => ({ id: item.id, data: `${prefix}${wireJson(item.payload)}}` }));
}
