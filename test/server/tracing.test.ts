import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/host/agent-api.ts';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import { McpConnector } from '../../src/connectors/mcp/mcp-connector.ts';
import { defineTool } from '../../src/host/tool-api.ts';
import { taskTraceContext } from '../../src/plane/tracing.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { startTestHost } from '../host/in-process.ts';
import { KEY_A, planeApp } from './plane-app-fixture.ts';

/**
 * With an OpenTelemetry SDK installed by the application: the API request continues the caller's
 * trace, every remote call for a task is a span of that task's one trace (linked to the request that
 * caused it), and the A2A request carries that trace as W3C traceparent.
 */
const exporter = new InMemorySpanExporter();
const seen: Array<{ url: string; traceparent: string | null }> = [];
let host: RunningHost;
let executeSpan: ReadableSpan | undefined;
let toolSpan: ReadableSpan | undefined;
let fx: Awaited<ReturnType<typeof planeApp>>;

beforeAll(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
  );
  host = await startTestHost(new MemoryStore(), {
    agent: defineAgent({
      card: { name: 'traced', description: 'records the trace its execute runs in', version: '1' },
      async execute(ctx) {
        executeSpan = trace.getActiveSpan() as unknown as ReadableSpan;
        await ctx.status('working');
        await ctx.sleep(60_000);
      },
      tools: [
        defineTool({
          name: 'traced_tool',
          async run() {
            toolSpan = trace.getActiveSpan() as unknown as ReadableSpan;
            return 'traced';
          },
        }),
      ],
    }),
  });
  const recording: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    seen.push({ url: String(input), traceparent: headers.get('traceparent') });
    return fetch(input, init);
  };
  fx = await planeApp({
    connectors: {
      agent: new A2AConnector({ target: 'agent', baseUrl: host.url, fetch: recording }),
      tools: new McpConnector({
        target: 'tools',
        url: `${host.url}/mcp`,
        tool: 'traced_tool',
        fetch: recording,
      }),
    },
  });
});
afterAll(async () => {
  await fx.close();
  await host.close();
  trace.disable();
  propagation.disable();
  context.disable();
});

const CALLER_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CALLER_SPAN = 'b7ad6b7169203331';

describe('OpenTelemetry traces', () => {
  it('one trace per task, continued from the caller, propagated to the agent and into its execute', async () => {
    const res = await fx.fetch('/v1/tasks?wait=started', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${KEY_A}`,
        'content-type': 'application/json',
        traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
      },
      body: JSON.stringify({ target: 'agent', input: 'trace me' }),
    });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const taskTrace = trace.getSpanContext(taskTraceContext(id))!.traceId;
    expect(taskTrace).not.toBe(CALLER_TRACE);

    // The start streams until the task ends: cancel it, then read both spans.
    const cancel = await fx.fetch(`/v1/tasks/${id}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(cancel.ok).toBe(true);
    const finished = (name: string) => exporter.getFinishedSpans().find((s) => s.name === name);
    await expect.poll(() => finished('taskplane start'), { timeout: 20_000 }).toBeDefined();
    await expect.poll(() => finished('taskplane cancel'), { timeout: 20_000 }).toBeDefined();

    const request = finished('POST /v1/tasks')!;
    expect(request.spanContext().traceId).toBe(CALLER_TRACE);
    expect(request.parentSpanContext?.spanId).toBe(CALLER_SPAN);
    expect(request.attributes['taskplane.tenant']).toBe('alpha');

    const start = finished('taskplane start')!;
    expect(start.spanContext().traceId).toBe(taskTrace);
    expect(start.attributes).toMatchObject({ 'taskplane.envelope_id': id, 'taskplane.target': 'agent' });
    expect(start.links.map((l) => l.context.spanId)).toEqual([request.spanContext().spanId]);
    // A later call for the same task, from another request, lands in the same trace.
    const cancelSpan = finished('taskplane cancel')!;
    expect(cancelSpan.spanContext().traceId).toBe(taskTrace);
    expect(finished('POST /v1/tasks/:id/cancel')?.spanContext().traceId).not.toBe(taskTrace);

    // The agent received the task's trace: each request carried the span it belongs to as parent.
    const parents = seen.map((r) => r.traceparent);
    expect(parents).toContain(`00-${taskTrace}-${start.spanContext().spanId}-01`);
    expect(parents).toContain(`00-${taskTrace}-${cancelSpan.spanContext().spanId}-01`);
    // The host continued that trace into the agent's execute.
    expect(executeSpan?.name).toBe('taskplane execute');
    expect(executeSpan?.spanContext().traceId).toBe(taskTrace);
  });

  it('reads the agent card once: a later task makes no describe call, and its trace has no empty span for one', async () => {
    const spansOf = (traceId: string, name: string) =>
      exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId && s.name === name);
    const cardReads = () => seen.filter((r) => r.url.includes('/.well-known/agent-card.json')).length;
    /** Starts a task, cancels it and waits for its start span: the trace id of the task. */
    const startAndEnd = async (input: string): Promise<string> => {
      const res = await fx.fetch('/v1/tasks?wait=started', {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
        body: JSON.stringify({ target: 'agent', input }),
      });
      expect(res.status).toBe(201);
      const { id } = (await res.json()) as { id: string };
      const taskTrace = trace.getSpanContext(taskTraceContext(id))!.traceId;
      const cancel = await fx.fetch(`/v1/tasks/${id}/cancel`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(cancel.ok).toBe(true);
      await expect.poll(() => spansOf(taskTrace, 'taskplane start').length, { timeout: 20_000 }).toBe(1);
      return taskTrace;
    };
    // The first task to this agent (in this test or an earlier one) read the card, in a span of its trace.
    await startAndEnd('first task');
    expect(cardReads()).toBeGreaterThan(0);
    expect(exporter.getFinishedSpans().some((s) => s.name === 'taskplane describe')).toBe(true);
    const readsBefore = cardReads();
    const second = await startAndEnd('second task');
    expect(cardReads()).toBe(readsBefore);
    expect(spansOf(second, 'taskplane describe')).toEqual([]);
  });

  it("ends and exports the task's own span, from creation to its terminal state, in the task's trace", async () => {
    const { envelope } = await fx.plane.create(
      { tenant: 'alpha', target: 'agent', input: 'end me' },
      { wait: 'started' },
    );
    const root = trace.getSpanContext(taskTraceContext(envelope.id))!;
    const taskSpan = () =>
      exporter
        .getFinishedSpans()
        .find((s) => s.name === 'taskplane task' && s.attributes['taskplane.envelope_id'] === envelope.id);
    // Not before the task ends: a span is exported once it is ended.
    expect(taskSpan()).toBeUndefined();
    await fx.plane.cancel('alpha', envelope.id);
    await expect.poll(taskSpan, { timeout: 20_000 }).toBeDefined();
    const span = taskSpan()!;
    expect(span.spanContext().traceId).toBe(root.traceId);
    expect(span.parentSpanContext?.spanId).toBe(root.spanId);
    expect(span.attributes).toMatchObject({
      'taskplane.state': 'cancelled',
      'taskplane.target': 'agent',
      'taskplane.tenant': 'alpha',
    });
    const ms = (t: [number, number]) => t[0] * 1000 + t[1] / 1e6;
    expect(ms(span.startTime)).toBe(envelope.createdAt);
    const ended = await fx.plane.get('alpha', envelope.id);
    expect(ms(span.endTime)).toBe(ended.updatedAt);
    // Exactly one per task, however many paths observed the end.
    await fx.plane.reconcileNow('agent');
    expect(
      exporter
        .getFinishedSpans()
        .filter(
          (s) =>
            s === span ||
            (s.name === 'taskplane task' && s.attributes['taskplane.envelope_id'] === envelope.id),
        ),
    ).toHaveLength(1);
  });

  it("the MCP host continues the task's trace into the tool's run, as the A2A host does into execute", async () => {
    seen.length = 0;
    const { envelope } = await fx.plane.create(
      { tenant: 'alpha', target: 'tools', input: {} },
      { wait: 'started' },
    );
    const taskTrace = trace.getSpanContext(taskTraceContext(envelope.id))!.traceId;
    await expect
      .poll(async () => (await fx.plane.get('alpha', envelope.id)).state, { timeout: 20_000 })
      .toBe('succeeded');
    // The tools/call carried the task's trace as traceparent…
    const start = exporter
      .getFinishedSpans()
      .find((s) => s.name === 'taskplane start' && s.attributes['taskplane.envelope_id'] === envelope.id)!;
    expect(start.spanContext().traceId).toBe(taskTrace);
    expect(seen.map((r) => r.traceparent)).toContain(`00-${taskTrace}-${start.spanContext().spanId}-01`);
    // …and the host ran the tool inside it, as a child of the call that started it.
    expect(toolSpan?.name).toBe('taskplane execute');
    expect(toolSpan?.spanContext().traceId).toBe(taskTrace);
    expect(toolSpan?.parentSpanContext?.spanId).toBe(start.spanContext().spanId);
    expect(toolSpan?.attributes['taskplane.tool']).toBe('traced_tool');
  });
});
