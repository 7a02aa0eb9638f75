import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import type { RemoteSnapshot } from '../../src/connectors/connector.ts';
import { TaskplaneError } from '../../src/core/errors.ts';

/**
 * The A2A connector against the real durable host (in process, over loopback), on every binding.
 * Waits are on stream frames (typed events), never on sleeps.
 */
let host: RunningHost;
beforeAll(async () => {
  host = await startHost({ port: 0, grpcPort: 0, db: 'memory:', logger: pino({ level: 'silent' }) });
});
afterAll(async () => {
  await host?.close();
});

const never = new AbortController().signal;
let n = 0;
const ids = () => ({ envelopeId: `e${++n}`, messageId: `m-${Date.now()}-${n}`, contextId: `c-${n}` });

async function until(
  it: AsyncIterator<RemoteSnapshot>,
  pred: (s: RemoteSnapshot) => boolean,
): Promise<RemoteSnapshot> {
  for (;;) {
    const r = await it.next();
    if (r.done) throw new Error('stream ended before the awaited state');
    if (pred(r.value)) return r.value;
  }
}

for (const binding of ['JSONRPC', 'HTTP+JSON', 'GRPC'] as const) {
  describe(`A2A connector over ${binding}`, () => {
    let c: A2AConnector;
    beforeAll(async () => {
      c = await A2AConnector.connect({
        target: 'demo',
        baseUrl: host.url,
        preferBinding: binding,
        idempotentStart: true,
      });
    });

    it('reads the card and picks the binding', () => {
      expect(c.transport.binding).toBe(binding);
      expect(c.capabilities.stream).toBe(true);
    });

    it('starts with returnImmediately, observes, answers input, and sees the artifacts and completion', async () => {
      const req = {
        ...ids(),
        input: { durationMs: 200, steps: 2, askInput: 'Which edition?', artifactChunks: 2 },
      };
      const first = await c.start(req, never);
      expect(['accepted', 'running']).toContain(first.state);
      expect(first.contextId).toBe(req.contextId);
      expect(first.remoteVersion).toBeTypeOf('number');
      // Same messageId again: the host deduplicates, no second task.
      const again = await c.start(req, never);
      expect(again.remoteId).toBe(first.remoteId);

      const stream = c.observe(first.remoteId, null, never)[Symbol.asyncIterator]();
      const waiting = await until(stream, (s) => s.state === 'waiting_for_input');
      expect(waiting.nativeState).toBe('TASK_STATE_INPUT_REQUIRED');
      expect(waiting.inputRequest?.prompt).toContain('Which edition?');
      await stream.return?.(undefined);

      const answered = await c.answer(
        first.remoteId,
        { requestId: waiting.inputRequest!.requestId, messageId: `${req.messageId}-a`, value: 'second' },
        never,
      );
      expect(answered.remoteId).toBe(first.remoteId);

      // The rest of the task can finish before the subscribe arrives: A2A answers a subscribe to a
      // finished task with UnsupportedOperationError (failed_precondition), and the task is read instead,
      // as the plane does.
      const resumed = c.observe(first.remoteId, null, never)[Symbol.asyncIterator]();
      const done = await until(resumed, (s) => s.state === 'succeeded').catch(async (err: unknown) => {
        expect((err as TaskplaneError).code).toBe('failed_precondition');
        return c.get(first.remoteId, never);
      });
      expect(done.state).toBe('succeeded');
      expect(done.artifacts?.[0]?.content).toContain('chunk');
      const got = await c.get(first.remoteId, never);
      expect(got.state).toBe('succeeded');
      expect(got.nativeState).toBe('TASK_STATE_COMPLETED');
    });

    it('startStream: SendStreamingMessage starts and streams to completion in one call', async () => {
      const req = { ...ids(), input: { durationMs: 100, steps: 2, artifactChunks: 2 } };
      const states: string[] = [];
      let last: RemoteSnapshot | null = null;
      for await (const snap of c.startStream(req, never)) {
        states.push(snap.state);
        last = snap;
      }
      expect(states[0]).toMatch(/accepted|running/);
      expect(last?.state).toBe('succeeded');
      expect(last?.artifacts?.[0]?.content).toBe('chunk 1/2\nchunk 2/2');
      expect(last?.contextId).toBe(req.contextId);
    });

    it('lists changed tasks since a time, paged', async () => {
      const since = Date.now() - 1000;
      for (let i = 0; i < 3; i++) await c.start({ ...ids(), input: 'hello' }, never);
      const seen: RemoteSnapshot[] = [];
      let cursor: string | undefined;
      do {
        const page = await c.listChanged({ since, pageSize: 2, ...(cursor ? { cursor } : {}) }, never);
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.items);
        cursor = page.nextCursor;
      } while (cursor);
      expect(seen.length).toBeGreaterThanOrEqual(3);
    });

    it('lists one conversation when given its contextId: its task alone, in one page', async () => {
      const since = Date.now() - 1000;
      for (let i = 0; i < 3; i++) await c.start({ ...ids(), input: 'hello' }, never);
      const mine = { ...ids(), input: 'hello' };
      const started = await c.start(mine, never);
      const page = await c.listChanged({ since, pageSize: 2, contextId: mine.contextId }, never);
      expect(page.items.map((s) => s.remoteId)).toEqual([started.remoteId]);
      expect(page.nextCursor).toBeUndefined();
    });

    it('cancels, and maps TaskNotFound to not_found and terminal subscribe to failed_precondition', async () => {
      const s = await c.start({ ...ids(), input: { durationMs: 60_000, steps: 2 } }, never);
      const cancelled = await c.cancel(s.remoteId, never);
      expect(cancelled.state).toBe('cancelled');
      const err = (await c.get('no-such-task', never).catch((e: unknown) => e)) as TaskplaneError;
      expect(err).toBeInstanceOf(TaskplaneError);
      expect(err.code).toBe('not_found');
      const it2 = c.observe(s.remoteId, null, never)[Symbol.asyncIterator]();
      const sub = (await it2.next().catch((e: unknown) => e)) as TaskplaneError;
      expect(sub.code).toBe('failed_precondition');
    });

    it('honours the AbortSignal', async () => {
      const controller = new AbortController();
      controller.abort();
      await expect(c.get('x', controller.signal)).rejects.toMatchObject({ code: 'unavailable' });
    });
  });
}

describe('parseWebhook', () => {
  it('reads the bearer token, the delivery id and a status snapshot', async () => {
    const c = await A2AConnector.connect({ target: 'demo', baseUrl: host.url });
    const body = JSON.stringify({
      statusUpdate: {
        taskId: 't1',
        contextId: 'c1',
        status: { state: 'TASK_STATE_WORKING', timestamp: '2026-01-01T00:00:00.000Z' },
      },
    });
    const sig = await c.parseWebhook({
      headers: { Authorization: 'Bearer tok', 'A2A-Delivery-Id': 'd1' },
      rawBody: body,
    });
    expect(sig).toMatchObject({ remoteId: 't1', deliveryId: 'd1', token: 'tok' });
    expect(sig.snapshot?.state).toBe('running');
    expect(sig.snapshot?.remoteVersion).toBe(Date.parse('2026-01-01T00:00:00.000Z'));
    // X-A2A-Notification-Token carries the A2A `token`, which an agent may list back: never the secret.
    const legacy = await c.parseWebhook({ headers: { 'x-a2a-notification-token': 'old' }, rawBody: body });
    expect(legacy.token).toBeNull();
    expect(legacy.deliveryId).toMatch(/^sha256:/);
    await expect(c.parseWebhook({ headers: {}, rawBody: '{"nope":1}' })).rejects.toMatchObject({
      code: 'invalid_argument',
    });
  });
});
