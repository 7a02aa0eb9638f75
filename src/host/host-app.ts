import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { canonicalJson, sha256Hex } from '../core/canonical-json.ts';
import type { A2ARequestHandler, Authenticate } from '../protocols/a2a/handler.ts';
import { jsonRpcBinding, type BindingOptions } from '../protocols/a2a/jsonrpc-binding.ts';
import { jsonRpcNodeBinding } from '../protocols/a2a/jsonrpc-node.ts';
import { isPlainTarget } from '../protocols/a2a/node-http.ts';
import { restBinding } from '../protocols/a2a/rest-binding.ts';
import { restNodeBinding } from '../protocols/a2a/rest-node.ts';
import { AGENT_CARD_PATH } from '../protocols/a2a/types.ts';
import { JSONRPC_PATH, REST_PATH } from './agent-card.ts';

export interface HostAppOptions {
  handler: A2ARequestHandler;
  authenticate: Authenticate;
  clock: Clock;
  logger: Logger;
  maxBodyBytes?: number;
  keepAliveMs?: number;
}

/**
 * The HTTP surface: the agent card (public, cacheable, ETag, §1.2), the JSON-RPC binding at
 * /a2a/jsonrpc and the HTTP+JSON binding under /a2a/rest (with optional `/{tenant}` prefix).
 */
export function createHostApp(o: HostAppOptions): Hono {
  const bindingOptions = hostBindingOptions(o);
  const rpc = jsonRpcBinding(bindingOptions);
  const rest = restBinding({ ...bindingOptions, basePath: REST_PATH });
  const app = new Hono();
  app.get(AGENT_CARD_PATH, (c) => {
    const body = canonicalJson(o.handler.agentCard());
    const etag = `"${sha256Hex(body).slice(0, 32)}"`;
    const headers = { etag, 'cache-control': 'public, max-age=300', vary: 'A2A-Version' };
    if (c.req.header('if-none-match') === etag) return c.body(null, 304, headers);
    return c.body(body, 200, { ...headers, 'content-type': 'application/json' });
  });
  app.get('/healthz', (c) => c.json({ ok: true }));
  app.all(JSONRPC_PATH, (c) => rpc(c.req.raw));
  app.all(REST_PATH, (c) => rest(c.req.raw));
  app.all(`${REST_PATH}/*`, (c) => rest(c.req.raw));
  app.onError((err, c) => {
    o.logger.error({ err }, 'unhandled request error');
    return c.json({ error: { code: 500, status: 'INTERNAL', message: 'Internal error', details: [] } }, 500);
  });
  return app;
}

function hostBindingOptions(o: HostAppOptions): BindingOptions {
  return {
    handler: o.handler,
    authenticate: o.authenticate,
    clock: o.clock,
    ...(o.maxBodyBytes !== undefined ? { maxBodyBytes: o.maxBodyBytes } : {}),
    ...(o.keepAliveMs !== undefined ? { keepAliveMs: o.keepAliveMs } : {}),
    onInternalError: (err: unknown) => o.logger.error({ err }, 'request failed'),
  };
}

/**
 * The node:http listener of the host: POSTs to the JSON-RPC URL (with or without a query string) and
 * every request under the HTTP+JSON URL go straight to the node adapters of the bindings (jsonrpc-node.ts,
 * rest-node.ts: no web Request/Response in between), everything else to the hono app. Requests hono
 * treats specially stay on hono, which answers them as before: absolute-form targets, a missing or
 * malformed Host (400), HEAD (hono runs the GET route and drops the body), and REST targets that URL
 * parsing would rewrite (dot segments, backslashes, characters it percent-encodes; see `isPlainTarget`).
 */
export function createHostListener(o: HostAppOptions): RequestListener {
  const hono = getRequestListener(createHostApp(o).fetch);
  const bindingOptions = hostBindingOptions(o);
  const rpc = jsonRpcNodeBinding(bindingOptions);
  const rest = restNodeBinding({ ...bindingOptions, basePath: REST_PATH });
  return (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url;
    if (url !== undefined && isPlainHost(req.headers.host)) {
      if (req.method === 'POST' && isUnder(url, JSONRPC_PATH, false)) return rpc(req, res);
      if (req.method !== 'HEAD' && isUnder(url, REST_PATH, true) && isPlainTarget(url)) return rest(req, res);
    }
    void hono(req, res);
  };
}

/** `path` itself, with or without a query string, or (`subpaths`) anything below it. */
function isUnder(url: string, path: string, subpaths: boolean): boolean {
  if (!url.startsWith(path)) return false;
  if (url.length === path.length) return true;
  const next = url.charCodeAt(path.length);
  return next === 63 /* ? */ || (subpaths && next === 47); /* / */
}

/**
 * A Host header hono takes as it is (a name or address, an optional port), so it never answers 400 for
 * it. Anything else (IPv6 literals included) goes to hono to be checked.
 */
function isPlainHost(host: string | undefined): boolean {
  if (host === undefined) return false;
  const m = PLAIN_HOST.exec(host);
  return m !== null && (m[1] === undefined || Number(m[1]) <= 65535);
}

const PLAIN_HOST = /^[a-z0-9._-]+(?::(\d{1,5}))?$/i;
