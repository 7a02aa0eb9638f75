import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { canonicalJson, sha256Hex } from '../core/canonical-json.ts';
import type { A2ARequestHandler, Authenticate } from '../protocols/a2a/handler.ts';
import { jsonRpcBinding, type BindingOptions } from '../protocols/a2a/jsonrpc-binding.ts';
import { jsonRpcNodeBinding } from '../protocols/a2a/jsonrpc-node.ts';
import { restBinding } from '../protocols/a2a/rest-binding.ts';
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
 * The node:http listener of the host: POSTs to the JSON-RPC URL (with or without a query string) go
 * straight to the node adapter of the binding (jsonrpc-node.ts, no web Request/Response in between),
 * everything else to the hono app. Absolute-form targets and requests without a Host header stay on
 * hono, which answers those as before.
 */
export function createHostListener(o: HostAppOptions): RequestListener {
  const hono = getRequestListener(createHostApp(o).fetch);
  const rpc = jsonRpcNodeBinding(hostBindingOptions(o));
  return (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'POST' && isJsonRpcTarget(req.url) && req.headers.host !== undefined) rpc(req, res);
    else void hono(req, res);
  };
}

function isJsonRpcTarget(url: string | undefined): boolean {
  if (url === undefined || !url.startsWith(JSONRPC_PATH)) return false;
  return url.length === JSONRPC_PATH.length || url.charCodeAt(JSONRPC_PATH.length) === 63; // '?'
}
