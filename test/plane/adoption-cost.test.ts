import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Envelope } from '../../src/core/envelope.ts';
import type { Plane } from '../../src/plane/plane.ts';
import type { PlaneOptions } from '../../src/plane/options.ts';
import { harness, type Harness } from './harness.ts';
import { ReadCounter } from './read-counter.ts';
import { recordingLogger } from '../support/recording-logger.ts';

/**
 * An adoption round (plane/watch-leases.ts) costs the jobs no live plane watches, not every open job:
 * with every job's lease held by a live plane, a round reads no envelope at all; with some leases freed
 * (their plane died), it reads those and no others. And one job whose watcher cannot start does not keep
 * the others of its take-up from being watched. Counted on a wrapper of the store: the envelopes each
 * method hands back. Virtual clock.
 */
const JOBS = 300;
const TTL = 30_000;
const options: PlaneOptions = {
  watch: { leases: 'on', leaseTtlMs: TTL },
  reconcile: { enabled: false },
};
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const attached = (p: Plane) => Object.values(p.watcherStates()).filter((s) => s === 'attached').length;

async function createJobs(plane: Plane, n: number, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++)
    ids.push(
      (await plane.create({ tenant: 't', target: 'fake', input: `${prefix}${i}` }, { wait: 'started' }))
        .envelope.id,
    );
  return ids;
}

// Memory (leases forced on) and SQLite; PostgreSQL runs the same read in the store suite and in
// test/store/unwatched-reads.test.ts.
describe.each([
  ['memory', undefined],
  ['sqlite', 'sqlite::memory:'],
])('an adoption round with many open jobs: %s', (_name, store) => {
  it('reads no envelope while a live plane holds every lease, and only the freed ones once some are', async () => {
    const counter = new ReadCounter();
    h = await harness(
      options,
      {},
      1,
      {},
      {
        ...(store ? { store } : {}),
        instanceId: 'plane-a',
        wrapStore: (s) => counter.wrap(s),
      },
    );
    const a = h.plane;
    const b = h.addPlane(options, 'plane-b');
    await b.start();
    const freed = 40;
    const ofB = await createJobs(b, JOBS - freed, 'b');
    const ofA = await createJobs(a, freed, 'a');
    await h.settle();
    expect(attached(a) + attached(b)).toBe(JOBS);

    // A full adoption interval on both planes: every job is watched, so neither reads one.
    counter.reset();
    await h.advance(TTL + 1000);
    expect(counter.calls.get('listUnwatchedEnvelopes')).toBeGreaterThanOrEqual(2);
    expect(counter.calls.get('listEnvelopes') ?? 0).toBe(0);
    expect(counter.total()).toBe(0);
    expect(attached(a) + attached(b)).toBe(JOBS);

    // Plane A dies holding 40 leases (as after SIGKILL); once they expire, B's round reads those 40 only.
    await a.stop({ abandon: true });
    counter.reset();
    await h.advance(2 * TTL + 1000);
    expect(attached(b)).toBe(JOBS);
    expect(counter.reads.get('listUnwatchedEnvelopes')).toBe(freed);
    expect(counter.calls.get('listEnvelopes') ?? 0).toBe(0);
    // Beyond the round's listing, the reads are the adopted watchers' own (one before subscribing).
    expect(counter.total() - freed).toBeLessThanOrEqual(2 * freed);
    expect(new Set(Object.keys(b.watcherStates()))).toEqual(new Set([...ofA, ...ofB]));
  }, 60_000);
});

describe('a take-up with a job whose watcher cannot start', () => {
  it('watches every other job of the wave and the waves after it, logs the job, and lets its lease go', async () => {
    const logger = recordingLogger();
    h = await harness(options, {}, 1, {}, { store: 'sqlite::memory:', instanceId: 'plane-a', logger });
    const a = h.plane;
    const b = h.addPlane(options, 'plane-b');
    await b.start();
    // Three take-up waves (100 each): the failing job is in the first.
    const jobs = 250;
    const ids = await createJobs(a, jobs, 'j');
    await h.settle();
    const bad = ids[5]!;
    const watch = (b as unknown as { watch: (id: string, env?: Envelope) => Promise<void> }).watch;
    const spy = vi.spyOn(b as unknown as { watch: typeof watch }, 'watch').mockImplementation(function (
      this: Plane,
      id: string,
      env?: Envelope,
    ) {
      if (id === bad) return Promise.reject(new Error('connector lookup failed'));
      return watch.call(this, id, env);
    });
    await a.stop({ abandon: true });
    await h.advance(TTL + TTL + 1000);
    await vi.waitFor(() => expect(attached(b)).toBe(jobs - 1));
    expect(b.watcherStates()[bad]).toBeUndefined();
    expect(logger.lines).toContainEqual(
      expect.objectContaining({
        level: 'error',
        obj: expect.objectContaining({ envelopeId: bad }),
        msg: 'watching a job failed',
      }),
    );
    // Its lease was let go, so a later round takes it up once its watcher can start.
    expect(await h.store.acquireLease(`watch:${bad}`, 'probe', h.clock.now(), 0)).toBe(true);
    spy.mockRestore();
    await h.advance(TTL + 1000);
    await vi.waitFor(() => expect(attached(b)).toBe(jobs));
  }, 60_000);
});
