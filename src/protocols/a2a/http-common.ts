import { JsonTooDeepError, parseBoundedJson } from '../../core/bounded-json.ts';
import type { Clock } from '../../core/clock.ts';
import { A2AError, toA2AError } from './errors.ts';
import type { A2ARequestHandler, Authenticate, CallContext, HeaderReader } from './handler.ts';
import { SSE_CONTENT_TYPE, type SseEvent, type SseStreamOptions } from './sse.ts';
import { A2A_EXTENSIONS_HEADER, A2A_PROTOCOL_VERSION, A2A_VERSION_HEADER } from './types.ts';

/**
 * What both A2A HTTP bindings (JSON-RPC and HTTP+JSON) share, whichever server received the request:
 * the request and reply shapes their transport-neutral cores (`jsonrpc-core.ts`, `rest-core.ts`) speak,
 * which the web-standard adapter (`web-http.ts`) and the node:http fast path (`node-http.ts`) supply
 * and write; version checks; the call context.
 */
export interface BindingOptions {
  handler: A2ARequestHandler;
  authenticate: Authenticate;
  clock: Clock;
  /** Request body limit in bytes, counted while the body streams in; over it is 413. @default 1048576 (1 MiB) */
  maxBodyBytes?: number;
  /** Nesting levels of arrays and objects a request body may have; deeper is an invalid request. @default 64 */
  maxJsonDepth?: number;
  /** @default 15000 */
  keepAliveMs?: number;
  /** Reports errors that reach the edge as InternalError (the client sees no internal text). */
  onInternalError?: (err: unknown) => void;
}

/** Default request body limit: A2A messages are small; big content goes by `url` parts. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** One HTTP request as a binding sees it. */
export interface HttpRequest {
  readonly method: string;
  /** Header names in any case; lower case is the fast path on node:http. */
  readonly headers: HeaderReader;
  /** The URL path as WHATWG URL serializes it (`new URL(url).pathname`: still percent-encoded). */
  readonly path: string;
  /** The query parameters (REST filters; the A2A-Version fallback: A2A 1.0, versioning). Read lazily. */
  readonly searchParams: URLSearchParams;
  /** The body as text; rejects with PayloadTooLargeError past `limit` bytes. */
  text(limit: number): Promise<string>;
  /** Aborts when the client goes away. Read lazily: creating it has a measurable cost on a unary call. */
  readonly signal: AbortSignal;
}

/** A whole answer; `body` null is none at all (204). */
export interface JsonReply {
  kind: 'json';
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string | null;
}

/** A 200 whose body is an SSE stream of `frames`, written with `sse` (sse.ts `pumpSse`). */
export interface StreamReply {
  kind: 'sse';
  headers: Readonly<Record<string, string>>;
  frames: AsyncIterable<SseEvent[]>;
  sse: SseStreamOptions;
}

export type HttpReply = JsonReply | StreamReply;

/** Shared, never mutated: both adapters copy what they add (hono's writer copies before adding a length). */
const SSE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': SSE_CONTENT_TYPE,
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
});

/** A binding's JSON replies, with its content type; `WWW-Authenticate` on a missing credential. */
export interface JsonReplies {
  /** A JSON reply with `body` serialized as is. */
  ok(status: number, body: unknown): JsonReply;
  /**
   * The reply for an error that reached the edge, reported when internal; `toReply` gives its status and
   * body (JSON-RPC: 200 and an error envelope; HTTP+JSON: google.rpc.Status with the spec's status). An
   * UnauthenticatedError gets `WWW-Authenticate: Bearer` whatever the status.
   */
  error(err: unknown, toReply: (e: A2AError) => { status: number; body: unknown }): JsonReply;
}

export function jsonReplies(options: BindingOptions, contentType: string): JsonReplies {
  // Shared, never mutated: both adapters copy what they add.
  const headers = Object.freeze({ 'content-type': contentType });
  const unauthenticated = Object.freeze({ 'content-type': contentType, 'www-authenticate': 'Bearer' });
  return {
    ok: (status, body) => ({ kind: 'json', status, headers, body: JSON.stringify(body) }),
    error(err, toReply) {
      reportInternal(options, err);
      const e = toA2AError(err);
      const { status, body } = toReply(e);
      return {
        kind: 'json',
        status,
        headers: e.errorName === 'UnauthenticatedError' ? unauthenticated : headers,
        body: JSON.stringify(body),
      };
    },
  };
}

/**
 * A 200 streaming `frames`; an error thrown mid-stream is reported when internal and becomes the final
 * event `errorEvent` makes of it.
 */
export function streamReply(
  options: BindingOptions,
  frames: AsyncIterable<SseEvent[]>,
  errorEvent: (err: unknown) => SseEvent,
): StreamReply {
  return {
    kind: 'sse',
    headers: SSE_HEADERS,
    frames,
    sse: {
      clock: options.clock,
      ...(options.keepAliveMs !== undefined ? { keepAliveMs: options.keepAliveMs } : {}),
      errorEvent: (err) => {
        reportInternal(options, err);
        return errorEvent(err);
      },
    },
  };
}

/** Errors the client sees as InternalError go to `onInternalError`; protocol errors are answers. */
function reportInternal(options: BindingOptions, err: unknown): void {
  if (!(err instanceof A2AError)) options.onInternalError?.(err);
}

/**
 * JSON.parse that throws the protocol's parse error, and refuses nesting deeper than `maxDepth` as an
 * invalid request (JSON-RPC -32600, HTTP+JSON 400) before building anything: the decoders and
 * serializers after it recurse.
 */
export function parseJson(text: string, maxDepth: number): unknown {
  try {
    return parseBoundedJson(text, maxDepth);
  } catch (err) {
    if (err instanceof JsonTooDeepError) throw new A2AError('InvalidRequestError', err.message);
    throw new A2AError('JSONParseError');
  }
}

/**
 * A body's Content-Type must be JSON: `application/json` or `application/a2a+json` (A2A 1.0, HTTP+JSON
 * binding: clients may send either), parameters such as `charset` allowed, any case. A request without
 * one is read as JSON (lenient, as the body is what counts). Anything else, the `text/plain` of a bare
 * `fetch` with a string body and the form type of `curl -d` included, is UnsupportedMediaTypeError: -32005
 * on JSON-RPC, 415 on HTTP+JSON.
 */
export function checkJsonContentType(req: HttpRequest): void {
  const value = req.headers.get('content-type');
  if (value === null || value === 'application/json' || isJsonMediaType(value)) return;
  throw new A2AError(
    'UnsupportedMediaTypeError',
    `Content-Type ${JSON.stringify(value.slice(0, 100))} is not supported; send application/json or application/a2a+json`,
  );
}

function isJsonMediaType(value: string): boolean {
  const semi = value.indexOf(';');
  const type = (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase();
  return type === 'application/json' || type === 'application/a2a+json' || type === '';
}

const VERSION_HEADER = A2A_VERSION_HEADER.toLowerCase();
const EXTENSIONS_HEADER = A2A_EXTENSIONS_HEADER.toLowerCase();
const LEGACY_EXTENSIONS_HEADER = 'x-a2a-extensions';

/**
 * A2A 1.0, versioning: the version comes from the `A2A-Version` header or the `A2A-Version` query parameter; a missing
 * or empty value MUST be treated as 0.3, which this 1.0-only server answers with VersionNotSupportedError
 * (-32009), as the official JS SDK does. Only Major.Minor counts: `1.0.3` is 1.0 (never reject on patch).
 * The query is parsed only when the header is absent.
 */
export function checkVersion(req: HttpRequest): void {
  const header = req.headers.get(VERSION_HEADER);
  // The header every 1.0 client sends is exactly "1.0": no trim, no regexp.
  if (header === A2A_PROTOCOL_VERSION) return;
  const { version, majorMinor } = requestedVersion(req);
  if (majorMinor !== A2A_PROTOCOL_VERSION) {
    throw new A2AError(
      'VersionNotSupportedError',
      `A2A version ${version} is not supported; this agent speaks ${A2A_PROTOCOL_VERSION}`,
      {
        metadata: { requested: version.slice(0, 32), supported: A2A_PROTOCOL_VERSION },
      },
    );
  }
}

/**
 * The version a request asks for: the `A2A-Version` header, else the query parameter, else 0.3 (A2A
 * 1.0, versioning: a missing or empty value means 0.3). `majorMinor` drops a patch number.
 */
export function requestedVersion(req: HttpRequest): { version: string; majorMinor: string } {
  let value = req.headers.get(VERSION_HEADER)?.trim();
  if (!value) value = req.searchParams.get(A2A_VERSION_HEADER)?.trim();
  const version = value ? value : '0.3';
  const m = /^(\d+)\.(\d+)(?:\.\d+)?$/.exec(version);
  return { version, majorMinor: m ? `${Number(m[1])}.${Number(m[2])}` : version };
}

/** The `A2A-Extensions` header value as a list of URIs. */
function parseExtensions(value: string | null): string[] {
  return value
    ? value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [];
}

/** The call context of an authenticated request: its extensions, its `Last-Event-ID`, its signal. */
export function callContext(req: HttpRequest, owner: string): CallContext {
  const headers = req.headers;
  // 0.3 clients spell it `X-A2A-Extensions`.
  const extensions = headers.get(EXTENSIONS_HEADER) ?? headers.get(LEGACY_EXTENSIONS_HEADER);
  const ctx = new LazySignalContext(owner, parseExtensions(extensions), req);
  const lastEventId = headers.get('last-event-id');
  if (lastEventId) ctx.lastEventId = lastEventId;
  return ctx;
}

/**
 * A CallContext whose `signal` is read from the request only when a handler asks for it (creating a
 * request's AbortSignal costs CPU on unary calls that never use it). A class, not an object
 * literal with `get signal()`: V8 gives every literal with a fresh accessor closure its own map, which
 * kept maps and objects surviving each scavenge under load; with the class the heap stays stable
 * (docs/performance.md, "Lazy AbortSignal and the call context").
 */
class LazySignalContext implements CallContext {
  declare tenant?: string;
  declare lastEventId?: string;
  declare protocolVersion?: string;
  readonly #source: { readonly signal: AbortSignal };

  constructor(
    readonly owner: string,
    readonly extensions: string[],
    source: { readonly signal: AbortSignal },
  ) {
    this.#source = source;
  }

  get signal(): AbortSignal {
    return this.#source.signal;
  }
}
