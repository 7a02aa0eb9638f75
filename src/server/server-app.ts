import { traceRequests } from './request-tracing.ts';
import { readFile } from 'node:fs/promises';
import { join, normalize } from 'node:path';
import { Hono, type Context } from 'hono';
import type { Logger } from '../core/logger.ts';
import { DEFAULT_MAX_JSON_DEPTH } from '../core/bounded-json.ts';
import { SystemClock, type Clock } from '../core/clock.ts';
import { TaskplaneError } from '../core/errors.ts';
import type { Connector } from '../connectors/connector.ts';
import type { Plane } from '../plane/plane.ts';
import type { ApiKeyRecord, EnvelopeStore } from '../store/store.ts';
import { timingSafeEqualString } from '../plane/constant-time.ts';
import type { KeyRing } from './api-keys.ts';
import { errorHandler, sendError } from './http-errors.ts';
import type { LabRequestHandler } from './lab-route.ts';
import { createMetrics } from './metrics.ts';
import { openApiDocument } from './openapi.ts';
import type { StreamTickets } from './stream-tickets.ts';
import {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_MAX_WEBHOOK_BYTES,
  readBodyText,
  type BodyLimits,
} from './request-body.ts';
import { registerTargetRoutes } from './target-routes.ts';
import { registerTaskRoutes, type ServerEnv } from './task-routes.ts';
import { TenantLimits, type TenantLimitsOptions } from './tenant-limits.ts';
import { registerWorkflowRoutes } from './workflow-routes.ts';
import type { WorkerSchemaCompiler } from './worker-schema-compiler.ts';

export interface ServerAppOptions extends TenantLimitsOptions {
  plane: Plane;
  store: EnvelopeStore;
  keys: KeyRing;
  tickets: StreamTickets;
  logger: Logger;
  /**
   * Who may read /metrics: everyone (`open`), holders of a bearer token, or nobody (`closed`: a plane
   * bound beyond loopback with no token configured). @default { kind: 'open' }
   */
  metricsAccess?: MetricsAccess;
  /** The configured targets by name, for /v1/targets. @default none */
  targets?: () => Iterable<[string, Connector]>;
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
  /** The worker compiling acceptance schemas: its time is shared among tenants by their limits. */
  schemaCompiler?: WorkerSchemaCompiler;
  /**
   * How old a tenant's GET /v1/costs figures (one read of every task of the tenant) may be before a
   * request refreshes them in the background; the response's `ageSeconds` says how old they are.
   * @default 30000
   */
  costsMaxAgeMs?: number;
  /** Time for the per-tenant limits (tenant-limits.ts), the SSE streams' batching and the ages of cached figures. @default a SystemClock */
  clock?: Clock;
}

export type MetricsAccess = { kind: 'open' } | { kind: 'token'; token: string } | { kind: 'closed' };

/**
 * The dashboard's Content-Security-Policy: its own scripts, styles and API only; no inline script or
 * style, no framing, no plugins. A script injected through task data (which the dashboard renders) can
 * neither run inline nor send the page's key anywhere but back to this plane.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The routes a browser reads with EventSource, which cannot send an Authorization header. */
const SSE_ROUTE = /^\/v1\/(?:events|tasks\/[^/]+\/events)$/;
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Answers that refuse what the caller sent or how often: counted against its refusal rate. */
const REFUSALS = new Set([400, 413, 415, 422, 429]);
/** On the webhook route a bad push token (401) is the sender's fault too. */
const WEBHOOK_REFUSALS = new Set([...REFUSALS, 401]);
const WEBHOOK_ROUTE = /^\/v1\/webhooks\/[^/]+\/([^/]+)$/;
/**
 * The door key of a webhook route: its target as the path spells it (not decoded, so a malformed escape
 * is a key like any other). A space cannot be in a tenant's name, so no tenant shares it.
 */
const webhookKey = (path: string) => {
  const target = WEBHOOK_ROUTE.exec(path)?.[1];
  return target === undefined ? undefined : `webhook ${target}`;
};

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
  const metrics = createMetrics(o.plane, {
    defaultMetrics: o.defaultMetrics ?? true,
    ...(o.clock ? { clock: o.clock } : {}),
  });
  const maxJsonDepth = o.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
  const limits: BodyLimits = { maxBytes: o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, maxJsonDepth };
  const maxWebhookBytes = o.maxWebhookBytes ?? DEFAULT_MAX_WEBHOOK_BYTES;
  const clock = o.clock ?? new SystemClock();
  const tenantLimits = new TenantLimits(clock, o);
  o.schemaCompiler?.useBudget(tenantLimits);

  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/metrics', async (c) => {
    const access = o.metricsAccess ?? { kind: 'open' };
    if (access.kind !== 'open') {
      const given = (c.req.header('authorization') ?? '').replace(/^bearer\s+/i, '');
      if (access.kind === 'closed' || !timingSafeEqualString(given, access.token))
        throw new TaskplaneError(
          'unauthenticated',
          'a valid metrics token is required (serve --metrics-token)',
        );
    }
    return c.body(await metrics.metrics(), 200, { 'content-type': metrics.contentType });
  });
  app.get('/v1/openapi.json', (c) => c.json(openApiDocument()));

  // Push ingress: 2xx only once the delivery is durably recorded (plane.handleWebhook resolves after).
  // It needs no API key, so it must not tell a stranger which targets exist: an unknown target, one that
  // takes no webhooks, a body it cannot read and a bad token all get the same 401.
  app.post('/v1/webhooks/:kind/:target', async (c) => {
    // The connector parses the body; the scan as it arrives keeps its nesting within what later steps
    // handle. A body over the size or nesting limit gets its own answer (413, 400): the limits are the
    // same for every target, so that answer says nothing about which targets exist.
    // No tenant is known before the push token is checked: a target's webhook route is its own key at
    // the door, so a sender refused again and again is held there, not answered as fast as it sends.
    await tenantLimits.admit(webhookKey(c.req.path)!);
    const raw = await readBodyText(c.req.raw, maxWebhookBytes, maxJsonDepth);
    const headers: Record<string, string> = {};
    c.req.raw.headers.forEach((v, k) => (headers[k] = v));
    try {
      const result = await o.plane.handleWebhook(c.req.param('target'), {
        headers,
        rawBody: raw,
        envelopeId: c.req.query('envelope') ?? null,
      });
      return c.json({ status: result.status }, 200);
    } catch (err) {
      // A store or remote that is down is the same for every target: let the sender retry.
      if (err instanceof TaskplaneError && (err.code === 'unavailable' || err.code === 'timeout')) throw err;
      // The error handler still logs the cause (at error level when it is a fault of ours).
      throw new TaskplaneError('unauthenticated', 'webhook credentials are not valid', { cause: err });
    }
  });

  const keyOf = new WeakMap<Request, ApiKeyRecord>();
  app.use('/v1/*', traceRequests);
  app.use('/v1/*', async (c, next) => {
    if (c.req.path === '/v1/openapi.json' || c.req.path.startsWith('/v1/webhooks/')) return next();
    const auth = c.req.header('authorization') ?? '';
    const bearer = /^bearer\s+/i.test(auth) ? auth.replace(/^bearer\s+/i, '').trim() : '';
    // A browser's EventSource cannot send a header: on the stream routes (only), a short-lived ticket
    // from POST /v1/stream-tickets, or the key itself, may come in the query instead.
    const stream = c.req.method === 'GET' && SSE_ROUTE.test(c.req.path);
    const ticket = stream && !bearer ? c.req.query('ticket') : undefined;
    const queryKey = stream && !bearer && !ticket ? c.req.query('key') : undefined;
    let key;
    if (bearer || queryKey) key = await o.keys.authenticate((bearer || queryKey)!);
    else if (ticket) {
      const hash = o.tickets.verify(ticket);
      key = hash ? await o.keys.authenticateHash(hash) : undefined;
    }
    if (!key) throw new TaskplaneError('unauthenticated', 'a valid bearer API key is required');
    if (key.readOnly && !READ_METHODS.has(c.req.method) && c.req.path !== '/v1/stream-tickets')
      throw new TaskplaneError('permission_denied', 'this API key is read-only');
    c.set('tenant', key.tenant);
    c.set('keyId', key.id);
    keyOf.set(c.req.raw, key);
    // The tenant's share, checked before its body is read: a refused request costs no more than its
    // headers, and a tenant refused often waits at the door first (tenant-limits.ts admit).
    await tenantLimits.admit(key.tenant);
    if (!READ_METHODS.has(c.req.method)) tenantLimits.takeWrite(key.tenant);
    if (c.req.method === 'POST' && c.req.path === '/v1/tasks') {
      const waits = c.req.query('wait') !== undefined || /\bwait\s*=/i.test(c.req.header('prefer') ?? '');
      const release = await tenantLimits.enterCreate(key.tenant, !waits);
      try {
        await next();
      } finally {
        release();
      }
      return;
    }
    await next();
  });
  app.post('/v1/stream-tickets', (c) => c.json(o.tickets.issue(keyOf.get(c.req.raw)!), 201));
  registerTaskRoutes(app, {
    plane: o.plane,
    store: o.store,
    signal: o.signal,
    limits,
    tenantLimits,
    // A stream ends when its key is revoked, as a client leaving would end it.
    revoked: (keyId) => o.keys.streamSignal(keyId),
    clock,
  });
  registerTargetRoutes(app, { plane: o.plane, store: o.store, targets: o.targets ?? (() => []) });
  registerWorkflowRoutes(app, {
    plane: o.plane,
    limits,
    tenantLimits,
    clock,
    ...(o.costsMaxAgeMs !== undefined ? { costsMaxAgeMs: o.costsMaxAgeMs } : {}),
  });

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
          'content-security-policy': DASHBOARD_CSP,
          'x-content-type-options': 'nosniff',
          'referrer-policy': 'no-referrer',
        });
      } catch {
        return c.notFound();
      }
    });
  }
  app.notFound((c) => sendError(c, new TaskplaneError('not_found', 'no such route')));
  // Routes and middleware throw; this one handler answers every error and logs it (http-errors.ts).
  const answerError = errorHandler(o.logger);
  app.onError((err, c) => {
    const res = answerError(err, c);
    // A refusal counts against its sender's refusal rate (tenant-limits.ts refused): the tenant of the
    // key, or the webhook route of the target.
    const tenant = c.get('tenant') as string | undefined;
    const webhook = tenant === undefined ? webhookKey(c.req.path) : undefined;
    if (tenant !== undefined ? REFUSALS.has(res.status) : webhook && WEBHOOK_REFUSALS.has(res.status))
      tenantLimits.refused(tenant ?? webhook!);
    return res;
  });
  return app;
}
