import { context, propagation } from '@opentelemetry/api';

/**
 * W3C trace context (`traceparent`, `tracestate`) for an outgoing request, taken from the active span:
 * an agent that traces continues the plane's trace of the task. Empty unless the application installed
 * an OpenTelemetry SDK with a propagator; the API alone is a no-op.
 */
export function traceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}
