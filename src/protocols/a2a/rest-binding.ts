import {
  asObject,
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
import { A2AError, invalidParams, restError, toA2AError } from './errors.ts';
import type { A2ARequestHandler, CallContext, StreamItem } from './handler.ts';
import {
  DEFAULT_MAX_BODY_BYTES,
  LazySignalContext,
  checkVersion,
  parseJson,
  readBodyLimited,
  requestExtensions,
} from './http-common.ts';
import type { BindingOptions } from './jsonrpc-binding.ts';
import { SSE_CONTENT_TYPE, sseReadableStream, type SseEvent } from './sse.ts';
import { A2A_CONTENT_TYPE } from './types.ts';
import { wireJson } from './wire-json.ts';

/** First path segments that name a route; any other first segment is a `/{tenant}` prefix (§1.1). */
const ROUTE_ROOTS = new Set(['message:send', 'message:stream', 'tasks', 'extendedAgentCard']);

interface Route {
  kind: 'json' | 'stream' | 'empty';
  run: (h: A2ARequestHandler, ctx: CallContext) => Promise<unknown>;
  status?: number;
}

function a2aJson(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': A2A_CONTENT_TYPE } });
}

/**
 * The HTTP+JSON binding (§1.1 routes) as a web-standard handler for everything under the interface URL.
 * Paths are parsed by hand because route segments contain colons (`/message:send`), which most routers
 * read as parameters. `:subscribe` is served on GET (proto) and POST (prose), A2A#1574.
 */
export function restBinding(
  options: BindingOptions & { basePath: string },
): (req: Request) => Promise<Response> {
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const base = options.basePath.replace(/\/+$/, '');
  return async (req) => {
    try {
      const url = new URL(req.url);
      const rest = url.pathname.startsWith(base) ? url.pathname.slice(base.length) : url.pathname;
      let segments = rest.split('/').filter(Boolean).map(safeDecode);
      let tenant: string | undefined;
      if (segments.length > 1 && !ROUTE_ROOTS.has(segments[0]!)) {
        tenant = segments[0];
        segments = segments.slice(1);
      }
      const readBody = async (): Promise<Record<string, unknown>> => {
        const text = await readBodyLimited(req, maxBody);
        if (text.trim() === '') return {};
        return asObject(parseJson(text), 'body');
      };
      const route = await matchRoute(req.method, segments, url.searchParams, readBody, tenant);
      checkVersion(req);
      const owner = await options.authenticate(req.headers);
      const ctx = new LazySignalContext(owner, requestExtensions(req), req);
      if (tenant) ctx.tenant = tenant;
      const lastEventId = req.headers.get('last-event-id');
      if (lastEventId) ctx.lastEventId = lastEventId;
      const result = await route.run(options.handler, ctx);
      if (route.kind === 'empty') return new Response(null, { status: 204 });
      if (route.kind === 'json') return a2aJson(result, route.status ?? 200);
      return new Response(
        sseReadableStream(toFrames(result as AsyncIterable<StreamItem[]>), {
          clock: options.clock,
          ...(options.keepAliveMs !== undefined ? { keepAliveMs: options.keepAliveMs } : {}),
          errorEvent: (err) => {
            if (!(err instanceof A2AError)) options.onInternalError?.(err);
            return { event: 'error', data: JSON.stringify(restError(err).body) };
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
      if (!(err instanceof A2AError)) options.onInternalError?.(err);
      const e = toA2AError(err);
      const { httpStatus, body } = restError(e);
      const res = a2aJson(body, httpStatus);
      if (e.errorName === 'UnauthenticatedError') res.headers.set('www-authenticate', 'Bearer');
      return res;
    }
  };
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

/** Splits `abc:cancel` into id and verb; ids of ours never contain `:`. */
function splitVerb(segment: string): [string, string | undefined] {
  const i = segment.lastIndexOf(':');
  return i < 0 ? [segment, undefined] : [segment.slice(0, i), segment.slice(i + 1)];
}

async function matchRoute(
  method: string,
  s: string[],
  query: URLSearchParams,
  readBody: () => Promise<Record<string, unknown>>,
  tenant: string | undefined,
): Promise<Route> {
  const notFound = () =>
    new A2AError('MethodNotFoundError', `No route for ${method} /${s.join('/')}`.slice(0, 200));
  if (s.length === 1 && s[0] === 'message:send' && method === 'POST') {
    const req = decodeSendMessageRequest(withTenant(await readBody(), tenant));
    return { kind: 'json', run: (h, c) => h.sendMessage(req, c) };
  }
  if (s.length === 1 && s[0] === 'message:stream' && method === 'POST') {
    const req = decodeSendMessageRequest(withTenant(await readBody(), tenant));
    return { kind: 'stream', run: (h, c) => h.sendStreamingMessage(req, c) };
  }
  if (s.length === 1 && s[0] === 'extendedAgentCard' && method === 'GET') {
    return { kind: 'json', run: (h, c) => h.getExtendedAgentCard(withTenant({}, tenant), c) };
  }
  if (s[0] !== 'tasks') throw notFound();
  if (s.length === 1 && method === 'GET') {
    const req = decodeListTasksRequest(withTenant(queryObject(query), tenant));
    return { kind: 'json', run: (h, c) => h.listTasks(req, c) };
  }
  if (s.length === 2) {
    const [id, verb] = splitVerb(s[1]!);
    if (verb === undefined && method === 'GET') {
      const req = decodeGetTaskRequest(withTenant({ ...queryObject(query), id }, tenant));
      return { kind: 'json', run: (h, c) => h.getTask(req, c) };
    }
    if (verb === 'cancel' && method === 'POST') {
      const body = await readBody();
      const req = decodeCancelTaskRequest(withTenant({ ...body, id }, tenant));
      return { kind: 'json', run: (h, c) => h.cancelTask(req, c) };
    }
    if (verb === 'subscribe' && (method === 'GET' || method === 'POST')) {
      const req = decodeSubscribeToTaskRequest(withTenant({ id }, tenant));
      return { kind: 'stream', run: (h, c) => h.subscribeToTask(req, c) };
    }
    throw notFound();
  }
  if (s[2] !== 'pushNotificationConfigs') throw notFound();
  const taskId = s[1]!;
  if (s.length === 3 && method === 'POST') {
    const body = await readBody();
    if (typeof body.taskId === 'string' && body.taskId !== '' && body.taskId !== taskId) {
      throw invalidParams('taskId', 'does not match the task in the path');
    }
    if (typeof body.task_id === 'string' && body.task_id !== '' && body.task_id !== taskId) {
      throw invalidParams('taskId', 'does not match the task in the path');
    }
    const req = decodeCreatePushConfigRequest(withTenant({ ...body, taskId, task_id: undefined }, tenant));
    return { kind: 'json', status: 201, run: (h, c) => h.createTaskPushNotificationConfig(req, c) };
  }
  if (s.length === 3 && method === 'GET') {
    const req = decodeListPushConfigsRequest(withTenant({ ...queryObject(query), taskId }, tenant));
    return { kind: 'json', run: (h, c) => h.listTaskPushNotificationConfigs(req, c) };
  }
  if (s.length === 4 && method === 'GET') {
    const req = decodeGetPushConfigRequest(withTenant({ taskId, id: s[3] }, tenant));
    return { kind: 'json', run: (h, c) => h.getTaskPushNotificationConfig(req, c) };
  }
  if (s.length === 4 && method === 'DELETE') {
    const req = decodeDeletePushConfigRequest(withTenant({ taskId, id: s[3] }, tenant));
    return { kind: 'empty', run: (h, c) => h.deleteTaskPushNotificationConfig(req, c) };
  }
  throw notFound();
}

async function* toFrames(batches: AsyncIterable<StreamItem[]>): AsyncGenerator<SseEvent[]> {
  for await (const batch of batches)
    yield batch.map((item) => ({ id: item.id, data: wireJson(item.payload), source: item.payload }));
}
