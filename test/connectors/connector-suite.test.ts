import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { SystemClock } from '../../src/core/clock.ts';
import { TaskplaneError } from '../../src/core/errors.ts';
import type { Connector, StartRequest } from '../../src/connectors/connector.ts';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import { FakeRemote } from '../plane/fake-remote.ts';

/**
 * One behaviour suite for the Connector port (STYLE.md: "one behaviour suite per interface, run
 * against every implementation"): the engine's fake, and the A2A connector on both bindings against
 * the durable host. Input is a long-running demo script so every implementation sees a live job.
 */
const never = new AbortController().signal;
let host: RunningHost;
beforeAll(async () => {
  host = await startHost({ port: 0, db: 'memory:', logger: pino({ level: 'silent' }) });
});
afterAll(async () => {
  await host?.close();
});

let n = 0;
const request = (): StartRequest => {
  n++;
  return {
    envelopeId: `e${n}`,
    messageId: `suite-${Date.now()}-${n}`,
    contextId: `suite-ctx-${Date.now()}-${n}`,
    input: { durationMs: 60_000, steps: 2 },
  };
};

const implementations: Array<[string, () => Promise<Connector>]> = [
  ['fake', async () => new FakeRemote(new SystemClock()).connector('fake')],
  [
    'a2a JSON-RPC',
    () =>
      A2AConnector.connect({
        target: 'demo',
        baseUrl: host.url,
        preferBinding: 'JSONRPC',
        idempotentStart: true,
      }),
  ],
  [
    'a2a HTTP+JSON',
    () =>
      A2AConnector.connect({
        target: 'demo',
        baseUrl: host.url,
        preferBinding: 'HTTP+JSON',
        idempotentStart: true,
      }),
  ],
];

for (const [name, make] of implementations) {
  describe(`Connector behaviour: ${name}`, () => {
    let c: Connector;
    beforeAll(async () => {
      c = await make();
    });

    it('start returns a live snapshot with the contextId we chose and a remote version', async () => {
      const req = request();
      const s = await c.start(req, never);
      expect(s.remoteId).toBeTruthy();
      expect(s.contextId).toBe(req.contextId);
      expect(['accepted', 'running']).toContain(s.state);
      expect(s.nativeState).toBeTruthy();
      expect(typeof s.remoteVersion === 'number' || s.remoteVersion === null).toBe(true);
    });

    it('start with the same messageId returns the same job where the remote deduplicates', async () => {
      const req = request();
      const a = await c.start(req, never);
      const b = await c.start(req, never);
      if (c.capabilities.idempotentStart) expect(b.remoteId).toBe(a.remoteId);
    });

    it('get returns the job; an unknown job is not_found', async () => {
      const s = await c.start(request(), never);
      expect((await c.get(s.remoteId, never)).remoteId).toBe(s.remoteId);
      const err = await c.get('no-such-job', never).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TaskplaneError);
      expect((err as TaskplaneError).code).toBe('not_found');
    });

    it('listChanged (when it can list) includes a job started since', async () => {
      if (!c.capabilities.list || !c.listChanged) return;
      const since = Date.now() - 1000;
      const s = await c.start(request(), never);
      const ids: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await c.listChanged({ since, pageSize: 100, ...(cursor ? { cursor } : {}) }, never);
        ids.push(...page.items.map((i) => i.remoteId));
        cursor = page.nextCursor;
      } while (cursor);
      expect(ids).toContain(s.remoteId);
    });

    it('observe (when it can stream) begins with the current snapshot', async () => {
      if (!c.capabilities.stream || !c.observe) return;
      const s = await c.start(request(), never);
      const controller = new AbortController();
      const it = c.observe(s.remoteId, null, controller.signal)[Symbol.asyncIterator]();
      const first = await it.next();
      expect(first.done).toBe(false);
      expect(first.value?.remoteId).toBe(s.remoteId);
      // Every implementation here has stream event ids (our host sends the event seq as SSE `id:`);
      // the engine keeps the last applied one as the envelope's lastEventId.
      expect(first.value?.eventId).toMatch(/\S/);
      controller.abort();
      await it.return?.(undefined);
    });

    it('cancel moves a running job to cancelled (or reports it still stopping); cancelling it again is not an error we mishandle', async () => {
      if (!c.capabilities.cancel || !c.cancel) return;
      const s = await c.start(request(), never);
      const after = await c.cancel(s.remoteId, never);
      expect(after.remoteId).toBe(s.remoteId);
      expect(['cancelled', 'running', 'accepted']).toContain(after.state);
      const again = await c.cancel(s.remoteId, never).catch((e: unknown) => e);
      if (again instanceof Error) {
        expect(again).toBeInstanceOf(TaskplaneError);
        expect((again as TaskplaneError).code).toBe('failed_precondition');
      }
    });
  });
}
