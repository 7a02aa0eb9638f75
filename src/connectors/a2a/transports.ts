import { TaskplaneError, unreadableAnswer } from '../../core/errors.ts';
import {
  A2A_CONTENT_TYPE,
  A2A_PROTOCOL_VERSION,
  A2A_VERSION_HEADER,
  type A2AMethod,
} from '../../protocols/a2a/types.ts';
import type { LookupFunction } from 'node:net';
import type { HttpAnswer, StreamRequest } from '../http-stream.ts';
import type { EventSourceMessage } from 'eventsource-parser';
import { readBoundedText } from '../remote-limits.ts';
import { readSse } from '../sse-reader.ts';
import { traceHeaders } from '../trace-headers.ts';
import { transportError } from '../transport-errors.ts';
import { a2aWireError, routeError } from './wire-errors.ts';

/**
 * The A2A 1.0 bindings behind one interface: JSON-RPC (POST the envelope to the interface URL),
 * HTTP+JSON (REST routes under the interface URL), and gRPC (grpc-transport.ts). Every request carries `A2A-Version: 1.0`
 * (A2A 1.0, versioning: a 1.0 server treats a missing header as 0.3 and refuses), a per-call timeout and the caller's
 * AbortSignal. A stream's timeout covers only the time to the response headers.
 */
export interface A2ATransport {
  readonly binding: 'JSONRPC' | 'HTTP+JSON' | 'GRPC';
  call(method: A2AMethod, params: Record<string, unknown>, signal: AbortSignal): Promise<unknown>;
  stream(
    method: 'SubscribeToTask' | 'SendStreamingMessage',
    params: Record<string, unknown>,
    signal: AbortSignal,
  ): AsyncIterable<StreamFrame>;
}

/** One StreamResponse of a stream, with the SSE `id:` it came with (our host sends the event seq). */
export interface StreamFrame {
  frame: unknown;
  /** The SSE event id, kept on the envelope as `lastEventId`; null when the server sends none. */
  eventId: string | null;
}

export interface TransportOptions {
  url: string;
  /** Copied into every request when the chosen AgentInterface names one (A2A 1.0.1 §8.3.2). */
  tenant?: string;
  /** Extra headers (e.g. `authorization` for an agent that wants a key). */
  headers?: Record<string, string>;
  timeoutMs: number;
  fetch?: typeof fetch;
  /** The `A2A-Version` every request carries. @default '1.0' */
  version?: string;
  /**
   * How every connection for this interface looks its host up (interface-reach.ts publicOnlyLookup, for
   * an agent on public addresses): each request then goes over node:http (http-stream.ts), the caller's
   * fetch included, since fetch cannot be given a lookup.
   */
  lookup?: LookupFunction;
}

interface Sent {
  response: HttpAnswer;
  done: () => void;
}

const EVENT_STREAM = 'text/event-stream';
/** A success that is not the event stream asked for: the start may have been taken all the same. */
const NO_STREAM = 'answered a stream request without an event stream';

/**
 * node:http's stream opener, imported on first use: this module is also part of the lab's browser
 * bundle, whose simulated targets always pass their own fetch. The lab bundler leaves it out
 * (src/lab/page-assets.ts).
 */
let httpStream: Promise<typeof import('../http-stream.ts')> | undefined;
export async function openStream(url: string, req: StreamRequest, signal: AbortSignal): Promise<HttpAnswer> {
  return (await (httpStream ??= import('../http-stream.ts'))).openStream(url, req, signal);
}

export async function send(
  o: TransportOptions,
  url: string,
  init: RequestInit,
  signal: AbortSignal,
  accept: string,
): Promise<Sent> {
  const controller = new AbortController();
  let timedOut = false;
  const onAbort = () => controller.abort(signal.reason);
  if (signal.aborted) controller.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  // A connector is I/O, not engine: a real timer is right here (the engine adds its own on the Clock port).
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('timeout'));
  }, o.timeoutMs);
  const headers: Record<string, string> = {
    [A2A_VERSION_HEADER]: o.version ?? A2A_PROTOCOL_VERSION,
    accept,
    ...traceHeaders(),
    ...o.headers,
  };
  if (init.body !== undefined) headers['content-type'] ??= 'application/json';
  try {
    const all = { ...headers, ...(init.headers as Record<string, string>) };
    // An event stream stays open for the task's whole life: node:http keeps far less per open response
    // than fetch (http-stream.ts). A caller's own fetch is used for everything else, unless every
    // connection must be looked up the interface's way.
    const response =
      o.lookup || (accept === EVENT_STREAM && !o.fetch)
        ? await openStream(
            url,
            {
              method: init.method ?? 'GET',
              headers: all,
              body: init.body as string | undefined,
              lookup: o.lookup,
            },
            controller.signal,
          )
        : await (o.fetch ?? fetch)(url, { ...init, headers: all, signal: controller.signal });
    clearTimeout(timer);
    return { response, done: () => signal.removeEventListener('abort', onAbort) };
  } catch (err) {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
    throw transportError(err, signal, () => timedOut);
  }
}

export async function readJson(response: HttpAnswer): Promise<unknown> {
  const text = await readBoundedText(
    response,
    'answer',
    (err) => new TaskplaneError('unavailable', 'response body interrupted', { cause: err }),
  );
  if (text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // An HTML page or other text where A2A answers JSON: a web server or proxy answered, not the agent.
    throw routeError(response.status, response.headers.get('content-type') ?? 'not JSON');
  }
}

export function isSse(response: HttpAnswer): boolean {
  return (response.headers.get('content-type') ?? '').startsWith(EVENT_STREAM);
}

// --- JSON-RPC ---------------------------------------------------------------------------------

function rpcResult(body: unknown, httpStatus: number): unknown {
  const b = body as { result?: unknown; error?: { code?: number; message?: string; data?: unknown } } | null;
  if (b && b.error)
    throw a2aWireError({
      rpcCode: b.error.code,
      message: b.error.message,
      details: b.error.data,
      httpStatus,
    });
  if (!b || !('result' in b))
    throw httpStatus < 300
      ? unreadableAnswer('not a JSON-RPC response')
      : a2aWireError({ httpStatus, message: 'not a JSON-RPC response' });
  return b.result;
}

/** The JSON frames of an event stream (events without data skipped); a frame that is not JSON fails it. */
export function sseFrames(
  response: HttpAnswer,
  signal: AbortSignal,
): AsyncIterableIterator<{ frame: unknown; event: string | undefined; eventId: string | null }> {
  return readSse(sseBody(response), signal, sseFrame);
}

function sseBody(response: HttpAnswer): NonNullable<HttpAnswer['body']> {
  if (!response.body) throw unreadableAnswer('event stream without a body');
  return response.body;
}

/**
 * A stream read straight from the iterator `open` resolves to: the first read waits for it (the request
 * sent, its answer checked), every later read is that iterator's own, with no generator of the transport
 * between it and the reader: each layer costs a promise and its callbacks per frame, alive while the
 * stream waits for its next frame (docs/performance.md, "Streams read directly").
 */
function openedStream<T>(open: () => Promise<AsyncIterator<T>>): AsyncIterableIterator<T> {
  let opening: Promise<AsyncIterator<T>> | null = null;
  let inner: AsyncIterator<T> | null = null;
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    next() {
      if (inner) return inner.next();
      opening ??= open().then((it) => (inner = it));
      return opening.then((it) => it.next());
    },
    async return() {
      const it = inner ?? (await opening?.catch(() => null)) ?? null;
      await it?.return?.();
      return { done: true, value: undefined };
    },
  };
}

function sseFrame(
  ev: EventSourceMessage,
): { frame: unknown; event: string | undefined; eventId: string | null } | undefined {
  if (!ev.data) return undefined;
  let frame: unknown;
  try {
    frame = JSON.parse(ev.data);
  } catch {
    throw unreadableAnswer('invalid SSE frame');
  }
  return { frame, event: ev.event, eventId: ev.id ?? null };
}

export function jsonRpcTransport(o: TransportOptions): A2ATransport {
  let nextId = 1;
  const body = (method: string, params: Record<string, unknown>) =>
    JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method,
      params: o.tenant ? { tenant: o.tenant, ...params } : params,
    });
  const post = (method: string, params: Record<string, unknown>, signal: AbortSignal, accept: string) =>
    send(o, o.url, { method: 'POST', body: body(method, params) }, signal, accept);
  return {
    binding: 'JSONRPC',
    async call(method, params, signal) {
      const { response, done } = await post(method, params, signal, 'application/json');
      try {
        const json = await readJson(response);
        if (!response.ok && (json === null || typeof json !== 'object' || !('error' in json))) {
          throw a2aWireError({ httpStatus: response.status });
        }
        return rpcResult(json, response.status);
      } finally {
        done();
      }
    },
    stream(method, params, signal) {
      return openedStream(async () => {
        const { response, done } = await post(method, params, signal, EVENT_STREAM);
        try {
          if (!isSse(response)) {
            // Pre-stream errors come back as a plain JSON-RPC error (A2A 1.0, streaming).
            rpcResult(await readJson(response), response.status);
            throw response.ok
              ? unreadableAnswer(NO_STREAM)
              : a2aWireError({ httpStatus: response.status, message: 'expected an event stream' });
          }
          const status = response.status;
          const frame = (ev: EventSourceMessage): StreamFrame | undefined => {
            const f = sseFrame(ev);
            return f && { frame: rpcResult(f.frame, status), eventId: f.eventId };
          };
          return readSse(sseBody(response), signal, frame, done);
        } catch (err) {
          done();
          throw err;
        }
      });
    },
  };
}

// --- HTTP+JSON ----------------------------------------------------------------------------------

interface Route {
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string>;
  body?: Record<string, unknown>;
}

const enc = encodeURIComponent;

function route(method: A2AMethod, p: Record<string, unknown>): Route {
  const { id, taskId, ...rest } = p as { id?: string; taskId?: string } & Record<string, unknown>;
  switch (method) {
    case 'SendMessage':
      return { method: 'POST', path: '/message:send', body: p };
    case 'SendStreamingMessage':
      return { method: 'POST', path: '/message:stream', body: p };
    case 'GetTask': {
      const query: Record<string, string> = {};
      if (p.historyLength !== undefined) query.historyLength = String(p.historyLength);
      return { method: 'GET', path: `/tasks/${enc(String(id))}`, query };
    }
    case 'ListTasks': {
      const query: Record<string, string> = {};
      for (const [k, v] of Object.entries(p)) if (v !== undefined && v !== '') query[k] = String(v);
      return { method: 'GET', path: '/tasks', query };
    }
    case 'CancelTask':
      return { method: 'POST', path: `/tasks/${enc(String(id))}:cancel`, body: rest };
    case 'SubscribeToTask':
      return { method: 'POST', path: `/tasks/${enc(String(id))}:subscribe`, body: {} };
    case 'CreateTaskPushNotificationConfig':
      return { method: 'POST', path: `/tasks/${enc(String(taskId))}/pushNotificationConfigs`, body: p };
    default:
      throw new TaskplaneError('unsupported', `${method} is not used by the connector`);
  }
}

function restError(json: unknown, httpStatus: number): TaskplaneError {
  const e = (json as { error?: { code?: number; message?: string; details?: unknown } } | null)?.error;
  return a2aWireError({ httpStatus, message: e?.message, details: e?.details });
}

export function restTransport(o: TransportOptions): A2ATransport {
  const base = o.url.replace(/\/+$/, '') + (o.tenant ? `/${enc(o.tenant)}` : '');
  const request = (r: Route, signal: AbortSignal, accept: string) => {
    const qs = r.query && Object.keys(r.query).length ? '?' + new URLSearchParams(r.query).toString() : '';
    const init: RequestInit = { method: r.method };
    if (r.method === 'POST') {
      init.body = JSON.stringify(r.body ?? {});
      init.headers = { 'content-type': A2A_CONTENT_TYPE };
    }
    return send(o, base + r.path + qs, init, signal, accept);
  };
  return {
    binding: 'HTTP+JSON',
    async call(method, params, signal) {
      const { response, done } = await request(
        route(method, params),
        signal,
        `${A2A_CONTENT_TYPE}, application/json`,
      );
      try {
        const json = await readJson(response);
        if (!response.ok) throw restError(json, response.status);
        return json;
      } finally {
        done();
      }
    },
    stream(method, params, signal) {
      return openedStream(async () => {
        const { response, done } = await request(route(method, params), signal, EVENT_STREAM);
        try {
          if (!response.ok || !isSse(response)) {
            const json = await readJson(response);
            throw response.ok ? unreadableAnswer(NO_STREAM) : restError(json, response.status);
          }
          const frame = (ev: EventSourceMessage): StreamFrame | undefined => {
            const f = sseFrame(ev);
            if (f?.event === 'error') throw restError(f.frame, 500);
            return f && { frame: f.frame, eventId: f.eventId };
          };
          return readSse(sseBody(response), signal, frame, done);
        } catch (err) {
          done();
          throw err;
        }
      });
    },
  };
}
