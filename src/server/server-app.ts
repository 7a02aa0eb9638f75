import { readFile } from 'node:fs/promises';
import { join, normalize } from 'node:path';
import { Hono, type Context } from 'hono';
import type { Logger } from 'pino';
import { DEFAULT_MAX_JSON_DEPTH } from '../core/bounded-json.ts';
import { TaskplaneError } from '../core/errors.ts';
import type { Plane } from '../plane/plane.ts';
import type { Store } from '../store/store.ts';
import type { ApiKeys } from './api-keys.ts';
import { sendError } from './http-errors.ts';
import type { LabRequestHandler } from './lab-route.ts';
import { createMetrics } from './metrics.ts';
import { openApiDocument } from './openapi.ts';
import {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_WEBHOOK_BYTES,
  readBodyText,
  type BodyLimits,
} from './request-body.ts';
import { registerTaskRoutes, type ServerEnv } from './task-routes.ts';

export interface ServerAppOptions {
  plane: Plane;
  store: Store;
  keys: ApiKeys;
  logger: Logger;
  /** Directory of the static dashboard (index.html, *.js, *.css). */
  dashboardDir?: string;
  /** Serves the failure lab page at `/lab` (server/lab-route.ts); no API key needed, it holds no data. */
  lab?: LabRequestHandler;
  /** Ends open SSE streams on shutdown. */
  signal: AbortSignal;
  /** Request body limit of the `/v1` API routes, in bytes; over it is 413. @default 1048576 (1 MiB) */
  maxBodyBytes?: number;
  /** Request body limit of the webhook route (no API key needed), in bytes. @default 65536 (64 KiB) */
  maxWebhookBytes?: number;
  /** Nesting levels a JSON body may have on any route; deeper is 400. @default 64 */
  maxJsonDepth?: number;
  /** prom-client default process metrics. @default true */
  defaultMetrics?: boolean;
}

const STATIC_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/**
 * The control plane's HTTP surface (Hono): the /v1 API behind bearer API keys (key → tenant), the
 * A2A webhook ingress (authenticated by the per-task push token instead), /healthz, /metrics,
 * /v1/openapi.json, the lab page at `/lab` and the dashboard at `/`.
 */
export function createServerApp(o: ServerAppOptions): Hono<ServerEnv> {
  const app = new Hono<ServerEnv>();
  const metrics = createMetrics(o.plane, { defaultMetrics: o.defaultMetrics ?? true });
  const maxJsonDepth = o.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const limits: BodyLimits = { maxBytes: o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, maxJsonDepth };
  const maxWebhookBytes = o.maxWebhookBytes ?? DEFAULT_MAX_WEBHOOK_BYTES;

  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/metrics', async (c) =>
    c.body(await metrics.metrics(), 200, { 'content-type': metrics.contentType }),
  );
  app.get('/v1/openapi.json', (c) => c.json(openApiDocument()));

  // Push ingress: 2xx only once the delivery is durably recorded (plane.handleWebhook resolves after).
  app.post('/v1/webhooks/:kind/:target', async (c) => {
    try {
      // The connector parses the body; the scan as it arrives keeps its nesting within what later steps handle.
      const raw = await readBodyText(c.req.raw, maxWebhookBytes, maxJsonDepth);
      const headers: Record<string, string> = {};
      c.req.raw.headers.forEach((v, k) => (headers[k] = v));
      const result = await o.plane.handleWebhook(c.req.param('target'), {
        headers,
        rawBody: raw,
        envelopeId: c.req.query('envelope') ?? null,
      });
      return c.json({ status: result.status }, 200);
    } catch (err) {
      if (!(err instanceof TaskplaneError) || err.code !== 'unauthenticated')
        o.logger.warn({ err: err instanceof Error ? err.message : 'error' }, 'webhook refused');
      return sendError(c, err);
    }
  });

  app.use('/v1/*', async (c, next) => {
    if (c.req.path === '/v1/openapi.json' || c.req.path.startsWith('/v1/webhooks/')) return next();
    const auth = c.req.header('authorization') ?? '';
    const key = /^bearer\s+/i.test(auth)
      ? auth.replace(/^bearer\s+/i, '').trim()
      : (c.req.query('key') ?? '');
    // `?key=` exists for EventSource, which cannot send headers (the dashboard's live view).
    const tenant = key ? o.keys.tenantFor(key) : undefined;
    if (!tenant)
      return sendError(c, new TaskplaneError('unauthenticated', 'a valid bearer API key is required'));
    c.set('tenant', tenant);
    return next();
  });
  registerTaskRoutes(app, { plane: o.plane, store: o.store, signal: o.signal, limits });

  if (o.lab) {
    const lab = o.lab;
    const serveLab = async (c: Context<ServerEnv>) => (await lab(c.req.raw)) ?? c.notFound();
    app.get('/lab', serveLab);
    app.get('/lab/*', serveLab);
  }
  if (o.dashboardDir) {
    const dir = o.dashboardDir;
    app.get('/*', async (c) => {
      const path = c.req.path === '/' ? '/index.html' : c.req.path;
      const file = normalize(join(dir, path));
      const ext = file.slice(file.lastIndexOf('.'));
      if (!file.startsWith(normalize(dir)) || !STATIC_TYPES[ext]) return c.notFound();
      try {
        return c.body(await readFile(file, 'utf8'), 200, {
          'content-type': STATIC_TYPES[ext]!,
          'cache-control': 'no-cache',
        });
      } catch {
        return c.notFound();
      }
    });
  }
  app.notFound((c) => c.json({ error: { code: 'not_found', message: 'no such route', field: null } }, 404));
  app.onError((err, c) => {
    o.logger.error({ err }, 'request failed');
    return sendError(c, err);
  });
  return app;
}
