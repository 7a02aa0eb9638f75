import { afterEach, describe, expect, it, vi } from 'vitest';
import { harness, type Harness } from './harness.ts';

/**
 * A restart takes up its open jobs in waves: the watchers it starts do not all read the store at once
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
});
