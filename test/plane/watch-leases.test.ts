import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Plane } from '../../src/plane/plane.ts';
import type { PlaneOptions } from '../../src/plane/options.ts';
import { harness, type Harness } from './harness.ts';

/**
 * Two planes on one database (a fresh PostgreSQL schema; and the memory store with leases forced on):
 * each job is streamed by exactly one plane, and when a plane dies its jobs are taken over by the other
 * within the lease ttl plus one adoption interval, on the virtual clock.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const TTL = 30_000;
const backends: Array<[string, string | undefined, PlaneOptions['watch']]> = [
  ['postgres', 'postgres', { leaseTtlMs: TTL }],
  ['memory (leases on)', undefined, { leases: 'on', leaseTtlMs: TTL }],
];

function subscribesPerJob(hh: Harness): Map<string, number> {
  const out = new Map<string, number>();
  for (const c of hh.remote.calls)
    if (c.method === 'subscribe' && c.id) out.set(c.id, (out.get(c.id) ?? 0) + 1);
  return out;
}

const watched = (p: Plane) =>
  Object.entries(p.watcherStates())
    .filter(([, s]) => s !== 'done')
    .map(([id]) => id);

for (const [name, store, watch] of backends) {
  describe(`watch leases between two planes: ${name}`, () => {
    it('each job is watched by one plane, and a dead plane’s jobs are picked up by the other', async () => {
      const options: PlaneOptions = { watch, reconcile: { intervalMs: 3_600_000 } };
      h = await harness(options, {}, 1, {}, { ...(store ? { store } : {}), instanceId: 'plane-a' });
      const a = h.plane;
      const b = h.addPlane(options, 'plane-b');
      await b.start();
      const ids: { a: string[]; b: string[] } = { a: [], b: [] };
      for (let i = 0; i < 4; i++)
        ids.a.push(
          (await a.create({ tenant: 't', target: 'fake', input: `a${i}` }, { wait: 'started' })).envelope.id,
        );
      for (let i = 0; i < 4; i++)
        ids.b.push(
          (await b.create({ tenant: 't', target: 'fake', input: `b${i}` }, { wait: 'started' })).envelope.id,
        );
      await h.settle();
      // A third plane starting now (its recovery lists every active job) watches none of them.
      const c = h.addPlane(options, 'plane-c');
      await c.start();
      await h.settle();
      expect(watched(c)).toEqual([]);
      await c.stop();
      // Two adoption rounds on each plane: nobody takes a job another live plane watches.
      await h.advance(2 * TTL + 1000);
      expect(watched(a).sort()).toEqual([...ids.a].sort());
      expect(watched(b).sort()).toEqual([...ids.b].sort());
      expect([...subscribesPerJob(h).values()]).toEqual(Array(8).fill(1));

      // Plane A dies (its leases are left to expire, as after SIGKILL).
      await a.stop({ abandon: true });
      await h.advance(TTL + TTL + 1000);
      expect(watched(b).sort()).toEqual([...ids.a, ...ids.b].sort());
      const subs = subscribesPerJob(h);
      for (const id of ids.a) expect(subs.get((await b.get('t', id)).remoteId!)).toBe(2);
      for (const id of ids.b) expect(subs.get((await b.get('t', id)).remoteId!)).toBe(1);

      // B now learns A's outcomes over its own streams.
      for (const id of ids.a) h.remote.set((await b.get('t', id)).remoteId!, 'succeeded');
      await h.settle();
      for (const id of ids.a) expect((await b.get('t', id)).state).toBe('succeeded');
    }, 60_000);
  });
}

describe('a dead plane’s jobs, adopted', () => {
  it('a cancel it recorded but could not deliver is sent by the plane that adopts the job', async () => {
    const options: PlaneOptions = {
      watch: { leases: 'on', leaseTtlMs: TTL },
      reconcile: { intervalMs: 3_600_000 },
      delivery: { stream: false, push: false, poll: false },
    };
    h = await harness(options, {}, 1, {}, { instanceId: 'plane-a' });
    const a = h.plane;
    const b = h.addPlane(options, 'plane-b');
    await b.start();
    const { envelope } = await a.create({ tenant: 't', target: 'fake', input: 'x' }, { wait: 'started' });
    // A records the cancel; the remote does not answer; A dies before trying again.
    h.remote.cancelCompletes = true;
    h.remote.failNext('cancel');
    await a.cancel('t', envelope.id).catch(() => undefined);
    await a.stop({ abandon: true });
    expect(h.remote.jobs.get(envelope.remoteId!)!.state).not.toBe('cancelled');
    // B adopts the job within the lease time and sends the cancel (reconciliation is an hour away).
    await h.advance(TTL + TTL + 1000);
    expect(h.remote.jobs.get(envelope.remoteId!)!.state).toBe('cancelled');
  });
});

describe('watch leases of jobs without a watcher', () => {
  it('a push-only job’s lease is released once the job is finished', async () => {
    h = await harness({
      watch: { leases: 'on', leaseTtlMs: TTL },
      delivery: { stream: false, push: true, poll: false },
      publicUrl: 'http://127.0.0.1:9',
    });
    const { envelope } = await h.plane.create(
      { tenant: 't', target: 'fake', input: 'p' },
      { wait: 'started' },
    );
    const free = () => h!.store.acquireLease(`watch:${envelope.id}`, 'someone-else', h!.clock.now(), 0);
    expect(await free()).toBe(false);
    h.remote.set(envelope.remoteId!, 'succeeded');
    const push = h.remote.pushes[0]!;
    await h.plane.handleWebhook('fake', {
      headers: { authorization: `Bearer ${push.token}` },
      rawBody: push.body,
      envelopeId: envelope.id,
    });
    await h.advance(TTL / 3 + 1000);
    expect(await free()).toBe(true);
  });
});

// On the SQL stores (the memory store's acquireLeases is a loop over acquireLease, so a spy cannot tell).
describe.each(['sqlite::memory:', 'postgres'])('watch leases at a restart: %s', (store) => {
  it('a restarted plane takes up its open jobs with one lease statement per 1,000 jobs, not one per job', async () => {
    h = await harness(
      { watch: { leases: 'on', leaseTtlMs: TTL }, reconcile: { intervalMs: 3_600_000 } },
      {},
      1,
      {},
      { store },
    );
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (await h.plane.create({ tenant: 't', target: 'fake', input: `r${i}` }, { wait: 'started' })).envelope
          .id,
      );
    await h.settle();
    const single = vi.spyOn(h.store, 'acquireLease');
    const many = vi.spyOn(h.store, 'acquireLeases');
    const reads = vi.spyOn(h.store, 'getEnvelope');
    const plane = await h.restart();
    expect(watched(plane).sort()).toEqual([...ids].sort());
    expect(single).not.toHaveBeenCalled();
    expect(many.mock.calls.map((c) => [...c[0]].sort())).toEqual([ids.map((id) => `watch:${id}`).sort()]);
    // The watcher reads its job once before it subscribes and once per frame it observes; the take-up
    // itself reads nothing per job beyond the recovery listing.
    expect(reads).toHaveBeenCalledTimes(2 * ids.length);
    // Each job streamed again once, by the restarted plane.
    expect([...subscribesPerJob(h).values()]).toEqual(Array(5).fill(2));
  });
});
