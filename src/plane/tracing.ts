import {
  context,
  propagation,
  trace,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Context,
  type Link,
  type Span,
  type SpanOptions,
} from '@opentelemetry/api';
import { sha256Hex } from '../core/canonical-json.ts';
import type { Envelope } from '../core/envelope.ts';

/**
 * OpenTelemetry traces through `@opentelemetry/api`: no-ops unless the application installs an SDK, so
 * the engine (and the lab's replays) run the same with or without it.
 *
 * One trace per task: its trace id and root span id are derived from the envelope id, so every remote
 * call made for the task, by any plane process, before or after a restart, lands in the same trace
 * without storing a trace context in the envelope. That root id is a remote parent no process exports;
 * under it are the task's own span (creation to terminal state, `recordTaskSpan`) and each remote call's.
 * When a call runs inside a request that carried its own trace (`traceparent` on the API), its span
 * links to it.
 */
const TRACER = 'taskplane';

/** The API's own no-op provider: what the global provider hands spans to until an SDK is registered. */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * True when a span would reach nothing: no SDK registered to record it and no propagator to send its
 * context to an agent. Then a remote call runs without one, rather than derive the task's trace context
 * (a SHA-256 of its id) and build a span for nothing (docs/performance.md, "Tracing when nothing
 * traces"). A provider of another copy of the API, or one wrapped by the application, counts as an SDK.
 */
function tracingOff(): boolean {
  if (propagation.fields().length > 0) return false;
  const provider = trace.getTracerProvider() as Partial<ProxyTracerProvider>;
  return typeof provider.getDelegate === 'function' && provider.getDelegate() === NOOP_PROVIDER;
}

/** The context of a task's trace. */
export function taskTraceContext(envelopeId: string, parent: Context = context.active()): Context {
  const hex = sha256Hex(`taskplane-trace:${envelopeId}`);
  return trace.setSpanContext(parent, {
    traceId: hex.slice(0, 32),
    spanId: hex.slice(32, 48),
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  });
}

type TracedJob = Pick<Envelope, 'id' | 'tenant'> | null;

/** Where a remote call's span goes (the task's trace) and what it says (ids, link to the caller). */
function spanStart(envelope: TracedJob): { parent: Context; options: SpanOptions } {
  const active = context.active();
  const caller = trace.getSpanContext(active);
  const links: Link[] = envelope && caller && trace.isSpanContextValid(caller) ? [{ context: caller }] : [];
  // Callers pass the whole envelope where they have it; the target then names the agent called.
  const target = (envelope as { target?: unknown } | null)?.target;
  return {
    parent: envelope ? taskTraceContext(envelope.id, active) : active,
    options: {
      kind: SpanKind.CLIENT,
      links,
      attributes: envelope
        ? {
            'taskplane.envelope_id': envelope.id,
            'taskplane.tenant': envelope.tenant,
            ...(typeof target === 'string' ? { 'taskplane.target': target } : {}),
          }
        : {},
    },
  };
}

function failed(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : 'error' });
}

/**
 * The task's own span, from its creation to its terminal state, recorded once that state is written
 * (observe.ts, updateLocal): one per task, as the terminal write happens once. Its parent is the task
 * trace's derived root, like every remote call's span, so a backend shows it beside them at the top of
 * the task's trace, spanning them all.
 */
export function recordTaskSpan(envelope: Envelope, endedAt: number): void {
  if (tracingOff()) return;
  const span = trace.getTracer(TRACER).startSpan(
    'taskplane task',
    {
      kind: SpanKind.INTERNAL,
      startTime: envelope.createdAt,
      attributes: {
        'taskplane.envelope_id': envelope.id,
        'taskplane.tenant': envelope.tenant,
        'taskplane.target': envelope.target,
        'taskplane.connector': envelope.connector,
        'taskplane.state': envelope.state,
        ...(envelope.nativeState ? { 'taskplane.native_state': envelope.nativeState } : {}),
      },
    },
    taskTraceContext(envelope.id, ROOT_CONTEXT),
  );
  if (envelope.state === 'failed' || envelope.state === 'lost' || envelope.state === 'unknown')
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: envelope.error?.message ?? envelope.state,
    });
  span.end(Math.max(endedAt, envelope.createdAt));
}

/**
 * Runs one remote call in a client span of the task's trace (or of the active trace for calls about no
 * single task, such as reconciliation list pages). Connectors read the active context to send
 * `traceparent` (connectors/trace-headers.ts).
 */
export function inRemoteCallSpan<T>(name: string, envelope: TracedJob, fn: () => Promise<T>): Promise<T> {
  if (tracingOff()) return fn();
  const { parent, options } = spanStart(envelope);
  return trace.getTracer(TRACER).startActiveSpan(`taskplane ${name}`, options, parent, async (span) => {
    try {
      return await fn();
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * A stream (start-and-stream, subscribe) as one span from its request to its end. Each read runs with
 * the span active, so the request the first read sends carries it as `traceparent`. With no SDK that
 * records the span and no propagator that would send it (the API alone), the active context reaches
 * nothing: the stream is returned as it is, without a generator layer between it and its reader.
 */
export function inStreamSpan<T>(
  name: string,
  envelope: TracedJob,
  source: AsyncIterable<T>,
): AsyncIterable<T> {
  if (tracingOff()) return source;
  const { parent, options } = spanStart(envelope);
  const span = trace.getTracer(TRACER).startSpan(`taskplane ${name}`, options, parent);
  if (!span.isRecording() && propagation.fields().length === 0) {
    span.end();
    return source;
  }
  return traced(span, trace.setSpan(parent, span), source);
}

async function* traced<T>(
  span: Span,
  active: Context,
  source: AsyncIterable<T>,
): AsyncGenerator<T, void, undefined> {
  const it = source[Symbol.asyncIterator]();
  let finished = false;
  try {
    for (;;) {
      const next = await context.with(active, () => it.next());
      if (next.done) {
        finished = true;
        return;
      }
      yield next.value;
    }
  } catch (err) {
    finished = true;
    failed(span, err);
    throw err;
  } finally {
    // Left early (the job ended, or the caller broke out): close the underlying stream too.
    if (!finished) await it.return?.();
    span.end();
  }
}
