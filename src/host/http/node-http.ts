import { context, propagation, type TextMapGetter } from '@opentelemetry/api';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { payloadTooLarge } from '../../protocols/a2a/errors.ts';
import type { HeaderReader } from '../../protocols/a2a/handler.ts';
import type { BindingOptions, HttpReply, HttpRequest } from '../../protocols/a2a/http-common.ts';
import { pumpSse, type SseSink } from '../../protocols/a2a/sse.ts';

/**
 * A binding core served straight on node:http: the body is read from the socket stream and the answer
 * written with one `writeHead(...).end(body)`, with no web Request, Headers or Response built in between.
 * That layer cost a fifth of a GetTask's CPU (hono on @hono/node-server vs a bare node:http server
 * answering the same JSON: docs/performance.md, "Bindings on node:http"). The bytes on the wire match the
 * web-standard adapter's as @hono/node-server writes them (status, headers, bodies, SSE framing).
 */
/** Reads trace headers from node's header object (values may be arrays). */
const nodeHeaderGetter: TextMapGetter<IncomingMessage['headers']> = {
  keys: (headers) => Object.keys(headers),
  get: (headers, key) => headers[key.toLowerCase()],
};

export function nodeListener(
  core: (req: HttpRequest) => Promise<HttpReply>,
  options: BindingOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    // The caller's W3C trace context is active while the request is handled, so the agent's execute
    // started from it continues the caller's trace (a no-op without an OpenTelemetry SDK).
    const traced = propagation.extract(context.active(), req.headers, nodeHeaderGetter);
    context
      .with(traced, () => core(new NodeHttpRequest(req, res)))
      .then(
        (reply) => send(reply, req, res),
        (err: unknown) => {
          // The cores never reject; should one, the client must not hang.
          options.onInternalError?.(err);
          res.destroy();
        },
      );
  };
}

/**
 * A request target whose path and query WHATWG URL parsing leaves as they are, so they can be read off
 * the raw string: origin-form, only characters no part of the URL percent-encodes, no backslash (hono
 * refuses one in the path with 400), no `.`/`..` segment (`%2e` included) that parsing would resolve.
 * What SDK clients send; anything else is parsed with `new URL`, or left to hono by the host.
 */
export function isPlainTarget(url: string): boolean {
  return PLAIN_TARGET.test(url) && !DOT_SEGMENT.test(url);
}

const PLAIN_TARGET = /^\/[\w\-.~!$&'()*+,;=:@%/?]*$/;
const DOT_SEGMENT = /\/(?:\.|%2e){1,2}(?:[/?]|$)/i;

/**
 * `IncomingMessage.headers` behind the `Headers.get` shape. node joins repeated list headers itself but
 * keeps only the first line of the singleton headers below, where a web `Headers` (the hono path) joins
 * every line with ", ". Those are read again from `rawHeaders`, so both paths hand the bindings the same
 * value: two Authorization lines must fail as "Bearer a, Bearer b" does on the hono path (401), not
 * authenticate with the first key. The scan allocates nothing unless a header is repeated.
 */
class NodeHeaders implements HeaderReader {
  constructor(private readonly req: IncomingMessage) {}

  get(name: string): string | null {
    const headers = this.req.headers;
    let key = name;
    let v = headers[key];
    if (v === undefined) {
      key = name.toLowerCase();
      if (key !== name) v = headers[key];
    }
    if (v === undefined) return null;
    if (typeof v !== 'string') return v.join(', ');
    return FIRST_LINE_ONLY.has(key) ? joinRepeated(this.req.rawHeaders, key, v) : v;
  }
}

/** The headers node keeps the first line of when repeated (`IncomingMessage.headers`, node 20 docs). */
const FIRST_LINE_ONLY = new Set([
  'age',
  'authorization',
  'content-length',
  'content-type',
  'etag',
  'expires',
  'from',
  'host',
  'if-modified-since',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'proxy-authorization',
  'referer',
  'retry-after',
  'server',
  'user-agent',
]);

/** How many lines of header `name` (lower case) a request carried (`rawHeaders`: name, value, …). */
export function headerLines(raw: string[], name: string): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) if (isName(raw[i]!, name)) n++;
  return n;
}

/** Every line of `name` (lower case) joined as `Headers.get` joins them; `first` when there is one. */
function joinRepeated(raw: string[], name: string, first: string): string {
  let joined = first;
  let seen = false;
  for (let i = 0; i < raw.length; i += 2) {
    if (!isName(raw[i]!, name)) continue;
    if (seen) joined += `, ${raw[i + 1]!}`;
    else seen = true;
  }
  return joined;
}

/**
 * `raw` is `name` in any case, without `toLowerCase` (a string per call for a capitalized name). `name`
 * holds only lower-case letters and `-`, which `| 0x20` leaves alone; of the token characters only the
 * upper-case letters map onto them.
 */
function isName(raw: string, name: string): boolean {
  if (raw === name) return true;
  if (raw.length !== name.length) return false;
  for (let i = 0; i < name.length; i++) if ((raw.charCodeAt(i) | 0x20) !== name.charCodeAt(i)) return false;
  return true;
}

/** hono's reason for the same event, so handlers see one reason whichever adapter served them. */
const CLIENT_GONE = 'Client connection prematurely closed.';

class NodeHttpRequest implements HttpRequest {
  readonly headers: NodeHeaders;
  private controller: AbortController | undefined;
  private pathname: string | undefined;
  /** The query as sent, until asked for as parameters. */
  private query: URLSearchParams | string = '';

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
  ) {
    this.headers = new NodeHeaders(req);
  }

  get method(): string {
    return this.req.method ?? '';
  }

  get path(): string {
    return this.pathname ?? this.parseTarget();
  }

  get searchParams(): URLSearchParams {
    if (this.pathname === undefined) this.parseTarget();
    if (typeof this.query === 'string') this.query = new URLSearchParams(this.query);
    return this.query;
  }

  text(limit: number): Promise<string> {
    return readBody(this.req, limit);
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      const controller = new AbortController();
      this.controller = controller;
      const res = this.res;
      // The socket may already be gone (the client left while the handler ran): `close` has fired.
      if (this.req.socket.destroyed) controller.abort(CLIENT_GONE);
      else
        res.once('close', () => {
          if (!res.writableFinished) controller.abort(CLIENT_GONE);
        });
    }
    return this.controller.signal;
  }

  /** Splits a plain target at its `?`; parses any other as hono does (on an `http://host` prefix). */
  private parseTarget(): string {
    const url = this.req.url ?? '/';
    if (isPlainTarget(url)) {
      const q = url.indexOf('?');
      this.pathname = q < 0 ? url : url.slice(0, q);
      this.query = q < 0 ? '' : url.slice(q + 1);
    } else {
      const parsed = new URL(`http://localhost${url}`);
      this.pathname = parsed.pathname;
      this.query = parsed.searchParams;
    }
    return this.pathname;
  }
}

/**
 * Reads the body up to `limit` bytes, refusing early on Content-Length and while streaming (chunked),
 * so an oversized body never sits in memory whole. The HTTP parser already rejects a body longer than
 * its Content-Length. The listeners stay attached (the request dies with them), so nothing is removed
 * per request.
 */
function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(payloadTooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    req.on('data', (chunk: Buffer) => {
      if (settled) return; // refused: the rest is discarded (see drain)
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else {
        settled = true;
        reject(payloadTooLarge(limit));
      }
    });
    req.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(
        chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8'),
      );
    });
    // A client that leaves mid-body destroys the request: 'close' without 'end' (no 'error' is emitted
    // without a listener for it).
    req.on('close', () => {
      if (settled) return;
      settled = true;
      reject(new Error(CLIENT_GONE));
    });
  });
}

function send(reply: HttpReply, req: IncomingMessage, res: ServerResponse): void {
  if (reply.kind === 'json') {
    // A body left unread (refused before or while it was read: 401, 404, 413, or on a route that takes
    // none) may still be arriving: the answer closes the connection (node ends the socket once the
    // answer is written) rather than reading the rest, which a client could make endless. A body the
    // parser has wholly received (`complete`: every GET) node discards itself and keeps the connection.
    const headers = req.complete ? reply.headers : { ...reply.headers, Connection: 'close' };
    if (reply.body === null) res.writeHead(reply.status, headers).end();
    else
      res
        .writeHead(reply.status, { ...headers, 'Content-Length': Buffer.byteLength(reply.body) })
        .end(reply.body);
    return;
  }
  res.writeHead(200, reply.headers);
  res.flushHeaders();
  const cancel = pumpSse(reply.frames, new ResponseSink(res), reply.sse);
  // Client disconnect stops the pump and releases the subscription (after a normal end it is a no-op).
  if (req.socket.destroyed) cancel();
  else res.once('close', cancel);
}

/** Writes SSE chunks to the response, waiting for `drain` when the socket buffer is full. */
class ResponseSink implements SseSink {
  constructor(private readonly res: ServerResponse) {}

  write(chunk: Uint8Array): boolean {
    return this.res.write(chunk);
  }

  drained(): Promise<void> {
    const res = this.res;
    if (res.destroyed || res.writableEnded) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  }

  end(): void {
    this.res.end();
  }
}
