import { propagation, trace, ROOT_CONTEXT, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { MiddlewareHandler } from 'hono';

/**
 * A server span per API request that continues the caller's trace (W3C `traceparent` on the request),
 * so a caller that traces sees its POST /v1/tasks, and the remote calls the plane makes meanwhile link
 * back to it (plane/tracing.ts). A no-op unless the application installed an OpenTelemetry SDK.
 */
export const traceRequests: MiddlewareHandler = async (c, next) => {
  const carrier: Record<string, string> = {};
  c.req.raw.headers.forEach((value, name) => (carrier[name] = value));
  const parent = propagation.extract(ROOT_CONTEXT, carrier);
  const tracer = trace.getTracer('taskplane');
  await tracer.startActiveSpan(
    `${c.req.method} /v1`,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': c.req.method, 'url.path': c.req.path } },
    parent,
    async (span) => {
      try {
        await next();
      } finally {
        // The matched route names the span once routing is done (`POST /v1/tasks`, never an id).
        span.updateName(`${c.req.method} ${c.req.routePath}`);
        span.setAttribute('http.response.status_code', c.res.status);
        const tenant = (c.var as Record<string, unknown>).tenant;
        if (typeof tenant === 'string') span.setAttribute('taskplane.tenant', tenant);
        if (c.res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      }
    },
  );
};
