import fc from 'fast-check';
import pino from 'pino';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { describe, expect, it } from 'vitest';
import { SystemClock } from '../../src/core/clock.ts';
import { startServer } from '../../src/server/start-server.ts';
import { FakeRemote } from '../plane/fake-remote.ts';

/**
 * Random interleavings of two tenants' /v1 operations on one control plane, through three keys (two
 * for tenant alpha, which share its tasks, one for beta): no tenant reads, lists, streams, cancels,
 * answers or pushes state into another's task. The push route needs no key, only the token registered
 * for one task, so the forged webhook op sends a delivery about the victim's job with a token the
 * caller's own task was given.
 */

const KEYS = ['alpha-key-one-0123456789', 'alpha-key-two-0123456789', 'beta-key-0123456789abcd'];
const TENANT_OF = ['alpha', 'alpha', 'beta'];

const KINDS = [
  'create',
  'get',
  'list',
  'cancel',
  'input',
  'history',
  'taskEvents',
  'events',
  'forge',
] as const;
type Kind = (typeof KINDS)[number];

interface Op {
  actor: number;
  kind: Kind;
  target: number;
  idempotency: number;
}

const opArb: fc.Arbitrary<Op> = fc.record({
  actor: fc.nat({ max: KEYS.length - 1 }),
  // Creates and forged deliveries weigh more: they need tasks of both tenants to mean anything.
  kind: fc.constantFrom(...KINDS, 'create', 'create', 'forge', 'forge'),
  target: fc.nat({ max: 50 }),
  idempotency: fc.nat({ max: 2 }),
});

interface KnownTask {
  id: string;
  tenant: string;
  remoteId: string;
}

/** SSE events from `res` until `want` arrived or the stream ends; then the stream is let go. */
async function readEvents(res: Response, want: number): Promise<EventSourceMessage[]> {
  const got: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => got.push(e) });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  while (got.length < want) {
    const { value, done } = await reader.read();
    if (done) break;
    parser.feed(decoder.decode(value, { stream: true }));
  }
  await reader.cancel();
  return got;
}

describe('plane isolation (property)', () => {
  it('random interleavings of two tenants never cross, including webhooks and SSE', async () => {
    let forgedInAll = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 24, size: 'max' }), async (ops) => {
        const remote = new FakeRemote(new SystemClock());
        const server = await startServer({
          port: 0,
          db: 'memory:',
          connectors: { fake: remote.connector('fake') },
          apiKeys: KEYS.map((k, i) => `${TENANT_OF[i]}:${k}`).join(','),
          publicUrl: 'self',
          dashboard: false,
          defaultMetrics: false,
          logger: pino({ level: 'silent' }),
        });
        const api = (actor: number, path: string, init: RequestInit = {}) =>
          fetch(server.url + path, {
            ...init,
            headers: {
              'content-type': 'application/json',
              authorization: `Bearer ${KEYS[actor]}`,
              ...(init.headers as Record<string, string>),
            },
          });
        const post = (actor: number, path: string, body: unknown, headers: Record<string, string> = {}) =>
          api(actor, path, { method: 'POST', body: JSON.stringify(body), headers });
        const tasks: KnownTask[] = [];
        const byKey = new Map<string, string>();
        let forged = 0;
        try {
          for (const op of ops) {
            const tenant = TENANT_OF[op.actor]!;
            const own = tasks.filter((t) => t.tenant === tenant);
            const known = tasks.length > 0 ? tasks[op.target % tasks.length]! : undefined;
            if (op.kind === 'create' || !known) {
              const key = `k-${op.idempotency}`;
              // Waits for the remote's first answer: later steps use the remote id (forged webhooks).
              const res = await post(
                op.actor,
                '/v1/tasks?wait=started',
                { target: 'fake', input: { key } },
                { 'idempotency-key': key },
              );
              expect([200, 201]).toContain(res.status);
              const t = (await res.json()) as { id: string; tenant: string; remoteId: string };
              expect(t.tenant).toBe(tenant);
              const before = byKey.get(`${tenant}/${key}`);
              if (before !== undefined) expect(t.id).toBe(before);
              else {
                expect(tasks.map((x) => x.id)).not.toContain(t.id);
                tasks.push({ id: t.id, tenant, remoteId: t.remoteId });
                byKey.set(`${tenant}/${key}`, t.id);
              }
              continue;
            }
            const mine = known.tenant === tenant;
            const id = known.id;
            switch (op.kind) {
              case 'get': {
                const res = await api(op.actor, `/v1/tasks/${id}`);
                expect(res.status).toBe(mine ? 200 : 404);
                const body = (await res.json()) as { id?: string };
                if (mine) expect(body.id).toBe(id);
                break;
              }
              case 'list': {
                const res = await api(op.actor, '/v1/tasks?limit=500');
                const listed = ((await res.json()) as { tasks: Array<{ id: string }> }).tasks.map(
                  (t) => t.id,
                );
                expect(listed.sort()).toEqual(own.map((t) => t.id).sort());
                break;
              }
              case 'cancel': {
                const res = await post(op.actor, `/v1/tasks/${id}/cancel`, {});
                if (mine) expect(res.status).not.toBe(404);
                else expect(res.status).toBe(404);
                await res.body?.cancel();
                break;
              }
              case 'input': {
                const res = await post(op.actor, `/v1/tasks/${id}/input`, { requestId: 'q', value: 'x' });
                if (mine) expect(res.status).not.toBe(404);
                else expect(res.status).toBe(404);
                await res.body?.cancel();
                break;
              }
              case 'history': {
                const res = await api(op.actor, `/v1/tasks/${id}/history`);
                expect(res.status).toBe(mine ? 200 : 404);
                const body = (await res.json()) as { events?: Array<{ envelopeId: string; tenant: string }> };
                if (mine) for (const e of body.events!) expect(e).toMatchObject({ envelopeId: id, tenant });
                break;
              }
              case 'taskEvents': {
                const res = await api(op.actor, `/v1/tasks/${id}/events?after=0`);
                if (!mine) {
                  expect(res.status).toBe(404);
                  await res.body?.cancel();
                  break;
                }
                const [first] = await readEvents(res, 1);
                expect(JSON.parse(first!.data)).toMatchObject({ envelopeId: id, tenant });
                break;
              }
              case 'events': {
                // The tenant's log from the start: each of its tasks wrote at least one event, and every
                // event read is the tenant's own.
                const res = await api(op.actor, '/v1/events?after=0');
                const seen = await readEvents(res, own.length);
                expect(seen.length).toBeGreaterThanOrEqual(own.length);
                const ownIds = own.map((t) => t.id);
                for (const e of seen) {
                  const data = JSON.parse(e.data) as { envelopeId: string; tenant: string };
                  expect(data.tenant).toBe(tenant);
                  expect(ownIds).toContain(data.envelopeId);
                }
                break;
              }
              case 'forge': {
                // A delivery claiming the victim's job failed, sent to the victim's webhook URL with
                // the push token of a task the caller owns.
                const mineTask = own[op.target % Math.max(own.length, 1)];
                if (!mineTask || mineTask.id === id) break;
                const before = remote.pushes.length;
                remote.set(mineTask.remoteId, 'running');
                const push = remote.pushes.slice(before).find((p) => p.url.includes(mineTask.id));
                if (!push) break;
                const url = new URL(push.url);
                url.searchParams.set('envelope', id);
                const snapshot = {
                  remoteId: known.remoteId,
                  contextId: null,
                  state: 'failed',
                  nativeState: 'FAILED',
                  remoteVersion: Number.MAX_SAFE_INTEGER,
                  stateTimestamp: Number.MAX_SAFE_INTEGER,
                  inputRequest: null,
                  artifacts: [],
                };
                const res = await fetch(server.url + url.pathname + url.search, {
                  method: 'POST',
                  body: JSON.stringify({ deliveryId: `forged-${forged++}`, snapshot }),
                  headers: { authorization: `Bearer ${push.token}` },
                });
                expect(res.status).toBe(401);
                forgedInAll++;
                await res.body?.cancel();
                break;
              }
            }
          }
          // No forged delivery moved a task, and each tenant still holds exactly its own.
          for (const [actor, tenant] of TENANT_OF.entries()) {
            const res = await api(actor, '/v1/tasks?limit=500');
            const listed = ((await res.json()) as { tasks: Array<{ id: string; state: string }> }).tasks;
            expect(listed.map((t) => t.id).sort()).toEqual(
              tasks
                .filter((t) => t.tenant === tenant)
                .map((t) => t.id)
                .sort(),
            );
            for (const t of listed) expect(t.state).not.toBe('failed');
          }
        } finally {
          await server.close();
        }
      }),
      { seed: 0x15a1a7e, numRuns: 25 },
    );
    // The runs did send forged deliveries (not only skip them for want of tasks in both tenants).
    expect(forgedInAll).toBeGreaterThan(10);
  });
});
