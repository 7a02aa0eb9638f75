import { createHash, timingSafeEqual } from 'node:crypto';
import { context, propagation } from '@opentelemetry/api';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import type { Registry } from 'prom-client';
import type { Logger } from '../core/logger.ts';
import type { Clock } from '../core/clock.ts';
import { canonicalJson, sha256Hex } from '../core/canonical-json.ts';
import type { A2ARequestHandler, Authenticate } from '../protocols/a2a/handler.ts';
import { jsonRpcBinding, type BindingOptions } from '../protocols/a2a/jsonrpc-binding.ts';
import { restBinding } from '../protocols/a2a/rest-binding.ts';
import { A2AError, jsonRpcErrorResponse, restError } from '../protocols/a2a/errors.ts';
import { AGENT_CARD_PATH, A2A_VERSION_HEADER } from '../protocols/a2a/types.ts';
import { isV03Version } from '../protocols/a2a/v03/card.ts';
import { CARD_JWKS_PATH } from './served-cards.ts';
import { JSONRPC_PATH, REST_PATH } from './agent-card.ts';
import { jsonRpcNodeBinding } from './http/jsonrpc-node.ts';
import { MCP_PATH } from './http/mcp-http.ts';
import { headerLines, isPlainTarget } from './http/node-http.ts';
import { restNodeBinding } from './http/rest-node.ts';

export interface HostAppOptions {
  handler: A2ARequestHandler;
  authenticate: Authenticate;
  clock: Clock;
  logger: Logger;
  /** Request body limit in bytes on both bindings. @default 1048576 (1 MiB) */
  maxBodyBytes?: number;
  /** Nesting levels a JSON body may have on both bindings. @default 64 */
  maxJsonDepth?: number;
  keepAliveMs?: number;
  /** The card for clients that name no version or 0.3 (served-cards.ts); unset, they get the 1.0 card. */
  v03Card?: () => Record<string, unknown> | null;
  /** The public keys of the card signatures, served at CARD_JWKS_PATH; null when the card is unsigned. */
  cardJwks?: () => { keys: unknown[] } | null;
  /** The MCP endpoint (http/mcp-http.ts), served at /mcp and /mcp/{tenant}. */
  mcp?: (req: Request, tenant: string) => Promise<Response>;
  /** /metrics (host-metrics.ts) and who may read it. Absent: no /metrics route. */
  metrics?: { registry: Registry; access: MetricsAccess };
}

/**
 * Who may read /metrics: anyone who can connect (`open`, a host on loopback), bearers of a token, or
 * nobody (a host listening beyond loopback without a token: its metrics would be public).
 */
export type MetricsAccess = { kind: 'open' } | { kind: 'token'; token: string } | { kind: 'closed' };

export function hostMetricsAccess(bind: string, token: string | undefined): MetricsAccess {
  if (token) return { kind: 'token', token };
  const loopback = /^127\./.test(bind) || bind === '::1' || bind === 'localhost';
  return loopback ? { kind: 'open' } : { kind: 'closed' };
}

function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * The HTTP surface: the agent card (public, cacheable, ETag; A2A 1.0, agent card), the JSON-RPC binding at
 * /a2a/jsonrpc and the HTTP+JSON binding under /a2a/rest (with optional `/{tenant}` prefix).
 */
export function createHostApp(o: HostAppOptions): Hono {
  const bindingOptions = hostBindingOptions(o);
  const rpc = jsonRpcBinding(bindingOptions);
  const rest = restBinding({ ...bindingOptions, basePath: REST_PATH });
  // strict: false serves every route with a trailing slash too (clients append one to the card's URLs).
  const app = new Hono({ strict: false });
  const modified = new CardModified(o.clock);
  // An answer that leaves a request body unread (refused before it was read: 401, 404, 413) closes the
  // connection rather than have @hono/node-server read and discard up to 64 MiB of it to keep it.
  // A caller's W3C trace context (traceparent) becomes the active context for the request, so the
  // agent's execute, started from it, continues the caller's trace (executions.ts). A no-op unless the
  // application installed an OpenTelemetry SDK.
  app.use((c, next) => {
    const carrier: Record<string, string> = {};
    c.req.raw.headers.forEach((value, name) => (carrier[name] = value));
    return context.with(propagation.extract(context.active(), carrier), next);
  });
  app.use(async (c, next) => {
    await next();
    const req = c.req.raw;
    if (req.method === 'GET' || req.method === 'HEAD') return;
    const declared = req.headers.get('content-length');
    const hasBody = declared !== null ? Number(declared) > 0 : req.headers.has('transfer-encoding');
    if (hasBody && (!req.bodyUsed || c.res.status === 413)) c.res.headers.set('connection', 'close');
  });
  app.get(AGENT_CARD_PATH, (c) => {
    // A client that names no version is a 0.3 client (A2A 1.0, versioning): it gets the card with
    // the 0.3 fields added (protocols/a2a/v03/card.ts); `Vary: A2A-Version` keeps caches apart.
    const asked = c.req.header(A2A_VERSION_HEADER)?.trim() || c.req.query(A2A_VERSION_HEADER)?.trim() || '';
    const v03 = asked === '' || isV03Version(asked) ? (o.v03Card?.() ?? null) : null;
    const body = canonicalJson(v03 ?? o.handler.agentCard());
    const etag = `"${sha256Hex(body).slice(0, 32)}"`;
    const lastModified = modified.of(etag);
    const headers = {
      etag,
      'last-modified': new Date(lastModified).toUTCString(),
      'cache-control': 'public, max-age=300',
      vary: 'A2A-Version',
    };
    if (notModified(c.req.header('if-none-match'), c.req.header('if-modified-since'), etag, lastModified))
      return c.body(null, 304, headers);
    return c.body(body, 200, { ...headers, 'content-type': 'application/json' });
  });
  app.get(CARD_JWKS_PATH, (c) => {
    const jwks = o.cardJwks?.();
    if (!jwks) return notFoundReply(c.req.path);
    return c.body(JSON.stringify(jwks), 200, {
      'content-type': 'application/jwk-set+json',
      'cache-control': 'public, max-age=300',
    });
  });
  app.get('/healthz', (c) => c.json({ ok: true }));
  const metrics = o.metrics;
  if (metrics) {
    app.get('/metrics', async (c) => {
      const { access } = metrics;
      const given = (c.req.header('authorization') ?? '').replace(/^bearer\s+/i, '');
      if (access.kind === 'closed' || (access.kind === 'token' && !sameSecret(given, access.token)))
        return c.json(
          statusError(
            401,
            'UNAUTHENTICATED',
            'a valid metrics token is required (TASKPLANE_HOST_METRICS_TOKEN on the host)',
          ),
          401,
        );
      return c.body(await metrics.registry.metrics(), 200, { 'content-type': metrics.registry.contentType });
    });
  }
  app.all(JSONRPC_PATH, (c) => rpc(c.req.raw));
  app.all(REST_PATH, (c) => rest(c.req.raw));
  app.all(`${REST_PATH}/*`, (c) => rest(c.req.raw));
  const mcp = o.mcp;
  if (mcp) {
    app.all(MCP_PATH, (c) => mcp(c.req.raw, ''));
    app.all(`${MCP_PATH}/:tenant`, (c) => mcp(c.req.raw, c.req.param('tenant')));
  }
  app.notFound((c) => notFoundReply(c.req.path));
  app.onError((err, c) => {
    o.logger.error({ err }, 'unhandled request error');
    return c.json(statusError(500, 'INTERNAL', 'Internal error'), 500);
  });
  return app;
}

/**
 * The card's `Last-Modified` (A2A 1.0, agent card: servers may send it beside the ETag; TCK
 * CARD-CACHE-003): the time this process first served the card's current content, in whole seconds as
 * HTTP dates have them. A restart gives a later time for the same card, which costs a client one
 * full fetch, never a stale card.
 */
class CardModified {
  private etag = '';
  private at = 0;

  constructor(private readonly clock: Clock) {}

  of(etag: string): number {
    if (etag !== this.etag) {
      this.etag = etag;
      this.at = Math.floor(this.clock.now() / 1000) * 1000;
    }
    return this.at;
  }
}

/**
 * RFC 9110 §13.2.2: If-None-Match decides when present (`*`, or a list naming our ETag, weak or
 * strong: a GET compares weakly); only without it is If-Modified-Since read, and a date that does not
 * parse is ignored.
 */
function notModified(
  ifNoneMatch: string | undefined,
  ifModifiedSince: string | undefined,
  etag: string,
  lastModified: number,
): boolean {
  if (ifNoneMatch !== undefined) {
    return ifNoneMatch
      .split(',')
      .map((t) => t.trim().replace(/^W\//, ''))
      .some((t) => t === '*' || t === etag);
  }
  if (ifModifiedSince === undefined) return false;
  const since = Date.parse(ifModifiedSince);
  return Number.isFinite(since) && lastModified <= since;
}

function hostBindingOptions(o: HostAppOptions): BindingOptions {
  return {
    handler: o.handler,
    authenticate: o.authenticate,
    clock: o.clock,
    ...(o.maxBodyBytes !== undefined ? { maxBodyBytes: o.maxBodyBytes } : {}),
    ...(o.maxJsonDepth !== undefined ? { maxJsonDepth: o.maxJsonDepth } : {}),
    ...(o.keepAliveMs !== undefined ? { keepAliveMs: o.keepAliveMs } : {}),
    onInternalError: (err: unknown) => o.logger.error({ err }, 'request failed'),
  };
}

/**
 * The node:http listener of the host: POSTs to the JSON-RPC URL (with or without a query string) and
 * every request under the HTTP+JSON URL go straight to the node adapters of the bindings (jsonrpc-node.ts,
 * rest-node.ts: no web Request/Response in between), everything else to the hono app. Requests hono
 * treats specially stay on hono, which answers them as before: absolute-form targets, a missing Host
 * (400), HEAD (hono runs the GET route and drops the body), and REST targets that URL parsing would
 * rewrite (dot segments, backslashes, characters it percent-encodes; see `isPlainTarget`).
 *
 * A Host that cannot form a URL is refused here, before either path (`refuseHost`). RFC 9112 §3.2: a
 * server MUST answer 400 to a Host with an invalid field value. hono refused some itself (with an empty
 * 400) but took others (`1.2.3.256`, `xn--a`), and a binding then failed building the URL (500), while
 * the node adapters, which never need the Host, served them. One check for both paths keeps them agreeing.
 */
export function createHostListener(o: HostAppOptions): RequestListener {
  const hono = getRequestListener(createHostApp(o).fetch);
  const bindingOptions = hostBindingOptions(o);
  const rpc = jsonRpcNodeBinding(bindingOptions);
  const rest = restNodeBinding({ ...bindingOptions, basePath: REST_PATH });
  // A host's clients nearly all send one Host (its public name). Remembering the last one taken skips
  // `isPlainHost`'s regexps for a string compare (docs/performance.md, "Host header").
  let plainHost = '';
  return (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url;
    const host = req.headers.host;
    if (host !== undefined) {
      // RFC 9112 §3.2: more than one Host line is a 400 too (node keeps the first one and drops the rest).
      if (headerLines(req.rawHeaders, 'host') > 1) return refuseHost(res);
      if (host === plainHost || isPlainHost(host)) {
        plainHost = host;
        if (url !== undefined) {
          if (req.method === 'POST' && isJsonRpcTarget(url)) return rpc(req, res);
          if (req.method !== 'HEAD' && isUnder(url, REST_PATH, true) && isPlainTarget(url))
            return rest(req, res);
        }
      } else if (!formsUrl(host)) return refuseHost(res);
    }
    void hono(req, res);
  };
}

/** The JSON-RPC URL, with or without a trailing slash (what the TCK's client posts to) and a query. */
function isJsonRpcTarget(url: string): boolean {
  if (isUnder(url, JSONRPC_PATH, false)) return true;
  return isUnder(url, `${JSONRPC_PATH}/`, false);
}

/** `path` itself, with or without a query string, or (`subpaths`) anything below it. */
function isUnder(url: string, path: string, subpaths: boolean): boolean {
  if (!url.startsWith(path)) return false;
  if (url.length === path.length) return true;
  const next = url.charCodeAt(path.length);
  return next === 63 /* ? */ || (subpaths && next === 47); /* / */
}

/**
 * A Host header that is a name or address with an optional port and passes `formsUrl`, so the node
 * adapters may serve it and hono would take it. Anything else (IPv6 literals included) is checked by
 * `formsUrl` alone and goes to hono. Of the names `PLAIN_HOST` admits, WHATWG URL parsing refuses or
 * rewrites two kinds: a last label starting with a digit is parsed as an IPv4 address (`1.2.3.256`,
 * `foo.1` refused; `127.1` rewritten to `127.0.0.1`), and an `xn--` label must be valid punycode. Only
 * those are parsed (`URL_SENSITIVE`), and a dotted quad (what `127.0.0.1:port` clients and benchmarks
 * send) is taken by a regexp: no URL is built for it.
 */
function isPlainHost(host: string): boolean {
  const m = PLAIN_HOST.exec(host);
  if (m === null || (m[1] !== undefined && Number(m[1]) > 65535)) return false;
  return DOTTED_QUAD.test(host) || !URL_SENSITIVE.test(host) || formsUrl(host);
}

const PLAIN_HOST = /^[a-z0-9._-]+(?::(\d{1,5}))?$/i;
const DOTTED_QUAD =
  /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?::\d+)?$/;
/** An `xn--` label anywhere, or a last label (before an optional trailing dot and port) starting with a digit. */
const URL_SENSITIVE = /(?:^|\.)(?:xn--|\d[^.:]*\.?(?::|$))/i;

/**
 * The one rule for a valid Host on both paths: `http://{host}/` parses to this very host. It is the
 * check hono makes before it builds a request (@hono/node-server `buildUrl`, "Invalid host header"), so
 * hono never refuses a Host this passes. A Host with userinfo (`a@b`) or a path is refused, and so is an
 * IPv4 shorthand URL parsing would rewrite (`127.1`): hono refused that too unless it skipped the check
 * (a lower-case Host with no port or one of 1000–59999), while the node adapters served it.
 */
function formsUrl(host: string): boolean {
  let hostname: string;
  try {
    hostname = new URL(`http://${host}/`).hostname;
  } catch {
    return false;
  }
  return hostname.length === host.length || hostname === host.replace(/:\d+$/, '').toLowerCase();
}

/**
 * 400 in the shape of the host's other pre-routing error (the hono app's `onError`: a google.rpc.Status
 * body), whichever binding the target names: no binding has read the request.
 */
function refuseHost(res: ServerResponse): void {
  res
    .writeHead(400, { 'content-type': 'application/json', 'content-length': BAD_HOST_BODY.length })
    .end(BAD_HOST_BODY);
}

const BAD_HOST_BODY = Buffer.from(
  JSON.stringify(statusError(400, 'INVALID_ARGUMENT', 'Invalid Host header')),
);

/**
 * No route: a JSON answer in the shape of the binding the path is under (a JSON-RPC error envelope with
 * MethodNotFound below the JSON-RPC URL, else a google.rpc.Status), never hono's plain-text 404: a JSON
 * API answers JSON.
 */
function notFoundReply(path: string): Response {
  const err = new A2AError('MethodNotFoundError', `No route for ${path.slice(0, 100)}`);
  const body = path.startsWith(`${JSONRPC_PATH}/`) ? jsonRpcErrorResponse(null, err) : restError(err).body;
  return new Response(JSON.stringify(body), {
    status: 404,
    headers: { 'content-type': 'application/json' },
  });
}

/** A google.rpc.Status body for the host's own errors, made before any binding read the request. */
function statusError(code: number, status: string, message: string) {
  return { error: { code, status, message, details: [] } };
}
