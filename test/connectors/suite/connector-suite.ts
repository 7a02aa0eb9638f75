import { beforeAll, describe, expect, it } from 'vitest';
import { TaskplaneError } from '../../../src/core/errors.ts';
import type { Connector, StartRequest } from '../../../src/connectors/connector.ts';

/**
 * One behaviour suite for the Connector port (STYLE.md: "one behaviour suite per interface, run
 * against every implementation"). Each connector's own test file calls it with a factory and the input
 * of a job that stays live for at least a minute on its remote, so every implementation sees a live job.
 */
export interface SuiteOptions {
  /** The job input: something the remote keeps running for a minute or more. */
  input: () => unknown;
  /** The remote's stream frames carry event ids (SSE `id:`). @default true */
  streamEventIds?: boolean;
}

const never = new AbortController().signal;

export function connectorBehaviour(name: string, make: () => Promise<Connector>, o: SuiteOptions): void {
  let n = 0;
  const request = (): StartRequest => {
    n++;
    const tag = `${name.replace(/\W+/g, '-')}-${Date.now()}-${n}`;
    return {
      envelopeId: `e-${tag}`,
      messageId: `suite-${tag}`,
      contextId: `suite-ctx-${tag}`,
      input: o.input(),
    };
  };
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
      // The engine keeps the last applied stream event id as the envelope's lastEventId.
      if (o.streamEventIds !== false) expect(first.value?.eventId).toMatch(/\S/);
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
