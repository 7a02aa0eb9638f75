import { afterEach, describe, expect, it } from 'vitest';
import type { PlaneOptions } from '../../src/plane/options.ts';
import { harness, type Harness } from './harness.ts';

/**
 * Reconciliation of a target that cannot list (MCP has no tasks/list by design): one read per task,
 * but only of the tasks the fast path has gone quiet on for a whole interval, at most
 * `maxFetchesPerRound` per round (the longest-unchecked first, so every task is reached in turn) and
 * `fetchConcurrency` at a time. Virtual clock; rounds run by hand.
 */
const T = 'acme';
const INTERVAL = 600_000;
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function setup(reconcile: PlaneOptions['reconcile'] = {}): Promise<Harness> {
  h = await harness(
    {
      // The poller gives up at once (its deadline) and the loop is off: the tests' own observations
      // are the fast path, and they run the rounds.
      delivery: { stream: false, push: false, poll: true },
      poll: { deadlineMs: 1 },
      reconcile: { enabled: false, intervalMs: INTERVAL, ...reconcile },
    },
    { list: false },
  );
  return h;
}

async function createJobs(n: number): Promise<Array<{ id: string; remoteId: string }>> {
  const out: Array<{ id: string; remoteId: string }> = [];
  for (let i = 0; i < n; i++) {
    const { envelope } = await h!.plane.create(
      { tenant: T, target: 'fake', input: `job ${i}` },
      { wait: 'started' },
    );
    out.push({ id: envelope.id, remoteId: envelope.remoteId! });
  }
  // Each poller reads its job once, then stops at its deadline: from here on the jobs are quiet.
  await h!.advance(60_000);
  return out;
}

/** The remote ids read by `get` since the call count `from`. */
function readsSince(from: number): string[] {
  return h!.remote.calls.slice(from).flatMap((c) => (c.method === 'get' && c.id ? [c.id] : []));
}

describe('reconciling a target with no list', () => {
  it('reads only the jobs not heard of within the interval', async () => {
    await setup();
    const [a, b, c] = await createJobs(3);
    // Heard of a minute ago: nothing is due yet.
    let mark = h!.remote.calls.length;
    const [first] = await h!.plane.reconcileNow('fake');
    expect(first!.fetched).toBe(0);
    expect(readsSince(mark)).toEqual([]);

    // An interval later the fast path has heard of `a` (a poll answer), of nobody else.
    await h!.advance(INTERVAL);
    h!.remote.set(a!.remoteId, 'running');
    await h!.plane.observe(a!.id, h!.remote.snapshot(h!.remote.jobs.get(a!.remoteId)!), 'poll');
    mark = h!.remote.calls.length;
    const [second] = await h!.plane.reconcileNow('fake');
    expect(readsSince(mark).sort()).toEqual([b!.remoteId, c!.remoteId].sort());
    expect(second).toMatchObject({ fetched: 2, deferred: 0 });

    // A job that changed while nobody listened is found by the round that reads it.
    h!.remote.set(b!.remoteId, 'succeeded');
    await h!.advance(INTERVAL);
    const [third] = await h!.plane.reconcileNow('fake');
    expect(third).toMatchObject({ fetched: 3, changed: 1 });
    expect((await h!.plane.get(T, b!.id)).state).toBe('succeeded');
  });

  it('reconciliation reading a job does not count as hearing of it: a quiet job is read every round', async () => {
    await setup();
    const [a] = await createJobs(1);
    for (let round = 0; round < 3; round++) {
      await h!.advance(INTERVAL);
      const mark = h!.remote.calls.length;
      await h!.plane.reconcileNow('fake');
      expect(readsSince(mark)).toEqual([a!.remoteId]);
    }
  });

  it('reads at most maxFetchesPerRound per round, the longest-unchecked first, so each job is reached in turn', async () => {
    await setup({ maxFetchesPerRound: 2 });
    const jobs = await createJobs(5);
    await h!.advance(INTERVAL);
    const rounds: string[][] = [];
    const reports = [];
    for (let round = 0; round < 3; round++) {
      const mark = h!.remote.calls.length;
      reports.push((await h!.plane.reconcileNow('fake'))[0]!);
      rounds.push(readsSince(mark));
      await h!.advance(1_000);
    }
    expect(rounds.map((r) => r.length)).toEqual([2, 2, 2]);
    expect(reports.map((r) => r.deferred)).toEqual([3, 3, 3]);
    // The first two rounds read four different jobs; by the third every job has been read.
    expect(new Set([...rounds[0]!, ...rounds[1]!]).size).toBe(4);
    expect(new Set(rounds.flat())).toEqual(new Set(jobs.map((j) => j.remoteId)));
    // The one job the first two rounds left is the third round's first read.
    const left = jobs
      .map((j) => j.remoteId)
      .find((id) => !rounds[0]!.includes(id) && !rounds[1]!.includes(id));
    expect(rounds[2]![0]).toBe(left);
  });

  it('has at most fetchConcurrency reads in flight', async () => {
    await setup({ fetchConcurrency: 2 });
    await createJobs(5);
    await h!.advance(INTERVAL);
    h!.remote.getDelayMs = 1_000;
    const round = h!.plane.reconcileNow('fake');
    await h!.advance(10_000);
    const [report] = await round;
    expect(report!.fetched).toBe(5);
    expect(h!.remote.maxGetsInFlight).toBe(2);
  });

  it('refuses bounds that are not positive integers, naming the field', async () => {
    await expect(setup({ maxFetchesPerRound: 0 })).rejects.toThrow(/reconcile\.maxFetchesPerRound/);
    await expect(setup({ fetchConcurrency: 1.5 })).rejects.toThrow(/reconcile\.fetchConcurrency/);
  });
});
