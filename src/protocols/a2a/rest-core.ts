import {
  decodeCancelTaskRequest,
  decodeCreatePushConfigRequest,
  decodeDeletePushConfigRequest,
  decodeGetPushConfigRequest,
  decodeGetTaskRequest,
  decodeListPushConfigsRequest,
  decodeListTasksRequest,
  decodeSendMessageRequest,
  decodeSubscribeToTaskRequest,
} from './decode.ts';
import { DEFAULT_MAX_JSON_DEPTH } from '../../core/bounded-json.ts';
import { A2AError, invalidParams, restError } from './errors.ts';
import type { A2ARequestHandler, CallContext, StreamItem } from './handler.ts';
import {
  DEFAULT_MAX_BODY_BYTES,
  callContext,
  checkVersion,
  jsonReplies,
  requestedVersion,
  streamReply,
  type BindingOptions,
  type HttpReply,
  type HttpRequest,
  type JsonReply,
} from './http-common.ts';
import type { SseEvent } from './sse.ts';
import {
  type CancelTaskRequest,
  type DeleteTaskPushNotificationConfigRequest,
  type GetTaskPushNotificationConfigRequest,
  type GetTaskRequest,
  type ListTaskPushNotificationConfigsRequest,
  type ListTasksRequest,
  type SendMessageRequest,
  type SubscribeToTaskRequest,
  type TaskPushNotificationConfig,
} from './types.ts';
import { wireJson } from './wire-json.ts';
import { isV03Version } from './v03/card.ts';
import { v03Rest } from './v03/rest.ts';
import { readBody, splitVerb, type BodyLimits } from './rest-body.ts';

export interface RestBindingOptions extends BindingOptions {
  /** The interface URL's path, e.g. `/a2a/rest`; routes (and the `/{tenant}` prefix) follow it. */
  basePath: string;
}

/** First path segments that name a route; any other first segment is a `/{tenant}` prefix (A2A 1.0, operations). */
const ROUTE_ROOTS = new Set(['message:send', 'message:stream', 'tasks', 'extendedAgentCard']);

/**
 * What a route does once the request is decoded, authenticated and version-checked. Each is built once,
 * at module load, so routing a request allocates no closure.
 */
interface Operation<P> {
  /** `json` answers 200 with the result, `created` 201, `empty` 204 with no body, `stream` an SSE stream. */
  kind: 'json' | 'created' | 'empty' | 'stream';
  run(h: A2ARequestHandler, params: P, ctx: CallContext): Promise<unknown>;
}

interface Route {
  op: Operation<unknown>;
  params: unknown;
}

function route<P>(op: Operation<P>, params: P): Route {
  return { op: op as Operation<unknown>, params };
}

function operation<P>(kind: Operation<P>['kind'], run: Operation<P>['run']): Operation<P> {
  return { kind, run };
}

type H = A2ARequestHandler;
type C = CallContext;
const SEND = operation('json', (h: H, p: SendMessageRequest, c: C) => h.sendMessage(p, c));
const STREAM = operation('stream', (h: H, p: SendMessageRequest, c: C) => h.sendStreamingMessage(p, c));
const EXTENDED_CARD = operation('json', (h: H, p: { tenant?: string }, c: C) => h.getExtendedAgentCard(p, c));
const LIST_TASKS = operation('json', (h: H, p: ListTasksRequest, c: C) => h.listTasks(p, c));
const GET_TASK = operation('json', (h: H, p: GetTaskRequest, c: C) => h.getTask(p, c));
const CANCEL_TASK = operation('json', (h: H, p: CancelTaskRequest, c: C) => h.cancelTask(p, c));
const SUBSCRIBE = operation('stream', (h: H, p: SubscribeToTaskRequest, c: C) => h.subscribeToTask(p, c));
const CREATE_PUSH = operation('created', (h: H, p: TaskPushNotificationConfig & { taskId: string }, c: C) =>
  h.createTaskPushNotificationConfig(p, c),
);
const LIST_PUSH = operation('json', (h: H, p: ListTaskPushNotificationConfigsRequest, c: C) =>
  h.listTaskPushNotificationConfigs(p, c),
);
const GET_PUSH = operation('json', (h: H, p: GetTaskPushNotificationConfigRequest, c: C) =>
  h.getTaskPushNotificationConfig(p, c),
);
const DELETE_PUSH = operation('empty', (h: H, p: DeleteTaskPushNotificationConfigRequest, c: C) =>
  h.deleteTaskPushNotificationConfig(p, c),
);

const NO_CONTENT: JsonReply = Object.freeze({
  kind: 'json',
  status: 204,
  headers: Object.freeze({}),
  body: null,
});

/**
 * The HTTP+JSON binding (routes: A2A 1.0, operations) for everything under the interface URL, transport-neutral.
 * Paths are parsed by hand because route segments contain colons (`/message:send`), which most routers
 * read as parameters. `:subscribe` is served on GET (proto) and POST (prose), A2A#1574. Errors are
 * google.rpc.Status bodies with the spec's HTTP status. Never rejects.
 */
export function restCore(options: RestBindingOptions): (req: HttpRequest) => Promise<HttpReply> {
  const limits: BodyLimits = {
    bytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    depth: options.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH,
  };
  const base = options.basePath.replace(/\/+$/, '');
  // application/json, not the application/a2a+json 1.0.1 recommends (SHOULD): the TCK's HTTP_JSON-SVC-001
  // and HTTP_JSON-ERR-001 require application/json, and every JSON client reads it (docs/a2a-notes.md,
  // "Content types").
  const replies = jsonReplies(options, 'application/json');
  return async (req) => {
    try {
      const path = req.path;
      const rest = path.startsWith(base) ? path.slice(base.length) : path;
      let segments = rest.split('/').filter(Boolean).map(safeDecode);
      // A2A 0.3 routes live under `/v1`; a client that asks for 0.3, or names no version as 0.3
      // clients do, is answered there as 0.3 (A2A 1.0, versioning; v03/rest.ts).
      if (segments[0] === 'v1' && isV03Version(requestedVersion(req).majorMinor))
        return await v03Rest(options, req, segments.slice(1), limits);
      let tenant: string | undefined;
      if (segments.length > 1 && !ROUTE_ROOTS.has(segments[0]!)) {
        tenant = segments[0];
        segments = segments.slice(1);
      }
      const { op, params } = await matchRoute(req, segments, tenant, limits);
      checkVersion(req);
      const ctx = callContext(req, await options.authenticate(req.headers));
      if (tenant) ctx.tenant = tenant;
      const result = await op.run(options.handler, params, ctx);
      if (op.kind === 'empty') return NO_CONTENT;
      if (op.kind !== 'stream') return replies.ok(op.kind === 'created' ? 201 : 200, result);
      return streamReply(options, toFrames(result as AsyncIterable<StreamItem[]>), errorEvent);
    } catch (err) {
      return replies.error(err, restReply);
    }
  };
}

/** google.rpc.Status with the spec's HTTP status (docs/a2a-notes.md, "Error table"). */
function restReply(e: A2AError): { status: number; body: unknown } {
  const { httpStatus, body } = restError(e);
  return { status: httpStatus, body };
}

/** A mid-stream error: a final `event: error` carrying the google.rpc.Status body. */
function errorEvent(err: unknown): SseEvent {
  return { event: 'error', data: JSON.stringify(restError(err).body) };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw invalidParams('path', 'bad percent-encoding');
  }
}

function withTenant(o: Record<string, unknown>, tenant: string | undefined): Record<string, unknown> {
  return tenant ? { ...o, tenant } : o;
}

function queryObject(q: URLSearchParams): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, v] of q) if (k !== 'A2A-Version') o[k] = v;
  return o;
}

function notFound(method: string, s: string[]): A2AError {
  return new A2AError('MethodNotFoundError', `No route for ${method} /${s.join('/')}`.slice(0, 200));
}

/** The route of a request and its decoded parameters; a body is read only by routes that take one. */
async function matchRoute(
  req: HttpRequest,
  s: string[],
  tenant: string | undefined,
  limits: BodyLimits,
): Promise<Route> {
  const method = req.method;
  if (s.length === 1 && s[0] === 'message:send' && method === 'POST')
    return route(SEND, decodeSendMessageRequest(withTenant(await readBody(req, limits), tenant)));
  if (s.length === 1 && s[0] === 'message:stream' && method === 'POST')
    return route(STREAM, decodeSendMessageRequest(withTenant(await readBody(req, limits), tenant)));
  if (s.length === 1 && s[0] === 'extendedAgentCard' && method === 'GET')
    return route(EXTENDED_CARD, withTenant({}, tenant));
  if (s[0] !== 'tasks') throw notFound(method, s);
  if (s.length === 1 && method === 'GET')
    return route(LIST_TASKS, decodeListTasksRequest(withTenant(queryObject(req.searchParams), tenant)));
  if (s.length === 2) {
    const [id, verb] = splitVerb(s[1]!);
    if (verb === undefined && method === 'GET')
      return route(
        GET_TASK,
        decodeGetTaskRequest(withTenant({ ...queryObject(req.searchParams), id }, tenant)),
      );
    if (verb === 'cancel' && method === 'POST') {
      const body = await readBody(req, limits);
      return route(CANCEL_TASK, decodeCancelTaskRequest(withTenant({ ...body, id }, tenant)));
    }
    if (verb === 'subscribe' && (method === 'GET' || method === 'POST'))
      return route(SUBSCRIBE, decodeSubscribeToTaskRequest(withTenant({ id }, tenant)));
    throw notFound(method, s);
  }
  if (s[2] !== 'pushNotificationConfigs') throw notFound(method, s);
  const taskId = s[1]!;
  if (s.length === 3 && method === 'POST') {
    const body = await readBody(req, limits);
    for (const named of [body.taskId, body.task_id]) {
      if (typeof named === 'string' && named !== '' && named !== taskId)
        throw invalidParams('taskId', 'does not match the task in the path');
    }
    return route(
      CREATE_PUSH,
      decodeCreatePushConfigRequest(withTenant({ ...body, taskId, task_id: undefined }, tenant)),
    );
  }
  if (s.length === 3 && method === 'GET')
    return route(
      LIST_PUSH,
      decodeListPushConfigsRequest(withTenant({ ...queryObject(req.searchParams), taskId }, tenant)),
    );
  if (s.length === 4 && method === 'GET')
    return route(GET_PUSH, decodeGetPushConfigRequest(withTenant({ taskId, id: s[3] }, tenant)));
  if (s.length === 4 && method === 'DELETE')
    return route(DELETE_PUSH, decodeDeletePushConfigRequest(withTenant({ taskId, id: s[3] }, tenant)));
  throw notFound(method, s);
}

async function* toFrames(batches: AsyncIterable<StreamItem[]>): AsyncGenerator<SseEvent[]> {
  for await (const batch of batches)
    yield batch.map((item) => ({ id: item.id, data: wireJson(item.payload), source: item.payload }));
}
