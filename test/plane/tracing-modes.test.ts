import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/core/envelope.ts';
import { traceHeaders } from '../../src/connectors/trace-headers.ts';
import { inRemoteCallSpan, inStreamSpan, recordTaskSpan, taskTraceContext } from '../../src/plane/tracing.ts';

/**
 * The plane skips tracing work when nothing would see it (no SDK, no propagator). Each half on its own
 * must still do its part: a propagator alone sends the task's trace to the agent, an SDK alone records
 * the spans. (test/server/tracing.test.ts runs the whole plane with both.)
 */
const env = {
  id: 'tsk_tracing_modes',
  tenant: 't1',
  target: 'agent',
  connector: 'a2a',
  state: 'succeeded',
  createdAt: 1,
};
const taskTraceId = trace.getSpanContext(taskTraceContext(env.id))!.traceId;

async function* frames() {
  yield 1;
  yield 2;
}

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
});
afterEach(() => {
  trace.disable();
  propagation.disable();
});

describe('tracing with part of OpenTelemetry installed', () => {
  it('a propagator without an SDK: a remote call still sends the task trace as traceparent', async () => {
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const headers = await inRemoteCallSpan('send', env, async () => traceHeaders());
    expect(headers.traceparent).toMatch(new RegExp(`^00-${taskTraceId}-[0-9a-f]{16}-01$`));
  });

  it('an SDK without a propagator: calls, streams and the task span are recorded in the task trace', async () => {
    const exporter = new InMemorySpanExporter();
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
    );
    await inRemoteCallSpan('get', env, async () => 'ok');
    const read: number[] = [];
    for await (const n of inStreamSpan('subscribe', env, frames())) read.push(n);
    recordTaskSpan(env as unknown as Envelope, 2);
    expect(read).toEqual([1, 2]);
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name).sort()).toEqual([
      'taskplane get',
      'taskplane subscribe',
      'taskplane task',
    ]);
    for (const s of spans) expect(s.spanContext().traceId).toBe(taskTraceId);
  });

  it('neither: the call runs, sends no trace, and a stream is handed back as it is', async () => {
    expect(await inRemoteCallSpan('send', env, async () => traceHeaders())).toEqual({});
    const source = frames();
    expect(inStreamSpan('subscribe', env, source)).toBe(source);
  });
});
