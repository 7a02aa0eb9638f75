import { afterEach, describe, expect, it, vi } from 'vitest';
import { harness, type Harness } from './harness.ts';

/**
 * A restart takes up its open jobs in waves, and a plane adopting a dead plane's jobs starts them the same
 * way: the watchers it starts do not all read the store at once
 * (on PostgreSQL, 10,000 reads queued at once outlasted the pool's connect timeout and their watchers
 * failed), and every job is watched in the end.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('take-up at a restart', () => {
  it('starts the recovered jobs’ watchers in waves, not all reading at once, and watches every one', async () => {
    h = await harness({ reconcile: { intervalMs: 3_600_000 } });
    const jobs = 500;
    for (let i = 0; i < jobs; i++)
      await h.plane.create({ tenant: 't', target: 'fake', input: `j${i}` }, { wait: 'started' });
    await h.settle();
    // Reads that answer a turn later, as a database does: how many wait at once is what a pool sees.
    const backend = h.store;
    const read = backend.getEnvelope.bind(backend);
    let inFlight = 0;
    let most = 0;
    vi.spyOn(backend, 'getEnvelope').mockImplementation(async (id) => {
      most = Math.max(most, ++inFlight);
      try {
        await new Promise((r) => setImmediate(r));
        return await read(id);
      } finally {
        inFlight--;
      }
    });
    const plane = await h.restart();
    await vi.waitFor(() => {
      expect(Object.values(plane.watcherStates()).filter((s) => s === 'attached')).toHaveLength(jobs);
    });
    // About one wave's first reads plus the reads of the wave before it finishing its attach (a wave is
    // 100 here): well under the 500 that started at once before.
    expect(most).toBeLessThan(jobs / 2);
    expect(most).toBeGreaterThan(1);
  }, 60_000);

  it('adopts a dead plane’s jobs in the same waves, claiming each lease once and reading nothing per job', async () => {
    const TTL = 30_000;
    const options = {
      watch: { leases: 'on' as const, leaseTtlMs: TTL },
      reconcile: { intervalMs: 3_600_000 },
    };
    // SQLite: the memory store's acquireLeases is a loop over acquireLease, so a spy could not tell.
    h = await harness(options, {}, 1, {}, { store: 'sqlite::memory:', instanceId: 'plane-a' });
    const a = h.plane;
    const b = h.addPlane(options, 'plane-b');
    await b.start();
    const jobs = 500;
    for (let i = 0; i < jobs; i++)
      await a.create({ tenant: 't', target: 'fake', input: `j${i}` }, { wait: 'started' });
    await h.settle();
    expect(Object.keys(b.watcherStates())).toHaveLength(0);
    // Plane A dies with its leases held (as after SIGKILL); B adopts once they expire.
    await a.stop({ abandon: true });
    const backend = h.store;
    const read = backend.getEnvelope.bind(backend);
    let inFlight = 0;
    let most = 0;
    const reads = vi.spyOn(backend, 'getEnvelope').mockImplementation(async (id) => {
      most = Math.max(most, ++inFlight);
      try {
        await new Promise((r) => setImmediate(r));
        return await read(id);
      } finally {
        inFlight--;
      }
    });
    const single = vi.spyOn(backend, 'acquireLease');
    await h.advance(TTL + TTL + 1000);
    await vi.waitFor(() => {
      expect(Object.values(b.watcherStates()).filter((s) => s === 'attached')).toHaveLength(jobs);
    });
    // The watchers' first reads, a wave at a time (100 here): well under the 500 that started at once.
    expect(most).toBeLessThan(jobs / 2);
    expect(most).toBeGreaterThan(1);
    // The leases were taken in the round's batch statement (claimMany), not again per job, and the
    // adoption read no job on its own: the reads are the watchers' (one before subscribing, one per frame).
    expect(single.mock.calls.filter(([name]) => name.startsWith('watch:'))).toEqual([]);
    expect(reads).toHaveBeenCalledTimes(2 * jobs);
  }, 60_000);
});
