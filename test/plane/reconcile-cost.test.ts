import { afterEach, describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/core/envelope.ts';
import { harness, type Harness } from './harness.ts';
import { ReadCounter } from './read-counter.ts';

/**
 * A reconciliation pass costs the jobs that changed or are due attention, not the open jobs quietly
 * running: with many quiet open jobs, a round reads from the store only the jobs its list mentions and
 * those whose own deadlines have come (store-query.ts reconcileDueAt), and never lists every open job.
 * Counted on a wrapper of the store: the envelopes each method hands back. Virtual clock; rounds by hand.
 */
const QUIET = 300;
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function setup(
  counter: ReadCounter,
  reconcile: { maxFetchesPerRound?: number } = {},
): Promise<Harness> {
  h = await harness(
    {
      // Each poller reads its job once and stops (its deadline): from then on the jobs are quiet.
      delivery: { stream: false, push: false, poll: true },
      poll: { deadlineMs: 1 },
      reconcile: { enabled: false, ...reconcile },
    },
    { list: true },
    1,
    {},
    { wrapStore: (s) => counter.wrap(s) },
  );
  return h;
}

async function createJobs(
  n: number,
  extra: { timeoutMs?: number; expectedDurationMs?: number } = {},
): Promise<Envelope[]> {
  const out: Envelope[] = [];
  for (let i = 0; i < n; i++) {
    const { envelope } = await h!.plane.create(
      { tenant: `t${i % 3}`, target: 'fake', input: `job ${i}`, ...extra },
      { wait: 'started' },
    );
    out.push(envelope);
  }
  return out;
}

describe('a reconciliation pass with many quiet open jobs', () => {
  it('reads the job its list mentions, not every open job', async () => {
    const counter = new ReadCounter();
    await setup(counter);
    const jobs = await createJobs(QUIET);
    await h!.advance(60_000);
    // The first round lists everything changed since the oldest job: every job, once.
    const [first] = await h!.plane.reconcileNow('fake');
    expect(first!.listed).toBe(QUIET);

    await h!.advance(60_000);
    const changed = jobs[7]!;
    h!.remote.set(changed.remoteId!, 'succeeded');
    counter.reset();
    const [round] = await h!.plane.reconcileNow();
    expect(round).toMatchObject({ target: 'fake', listed: 1, changed: 1, fetched: 0 });
    expect((await h!.plane.get('t1', changed.id)).state).toBe('succeeded');
    // No listing of open jobs, and a handful of envelopes read for one changed job (its lookup, its
    // observation), where reading every open job would be QUIET.
    expect(counter.calls.get('listEnvelopes') ?? 0).toBe(0);
    expect(counter.total()).toBeLessThanOrEqual(5);
  });

  it('finds a job past its timeout among them, reading it alone', async () => {
    const counter = new ReadCounter();
    await setup(counter);
    await createJobs(QUIET);
    const [late] = await createJobs(1, { timeoutMs: 120_000 });
    await h!.advance(60_000);
    await h!.plane.reconcileNow('fake');
    // Past the timeout; its own timer is not what this test is about, so the round must act on it
    // whether or not the timer already did.
    await h!.advance(120_000);
    counter.reset();
    const mark = h!.remote.calls.length;
    await h!.plane.reconcileNow('fake');
    const state = (await h!.plane.get('t0', late!.id)).state;
    expect(['cancel_requested', 'cancelled']).toContain(state);
    expect(h!.remote.calls.slice(mark).filter((c) => c.method === 'get')).toEqual([]);
    expect(counter.calls.get('listEnvelopes') ?? 0).toBe(0);
    expect(counter.total()).toBeLessThanOrEqual(10);
  });

  it('reads the jobs past their expected duration at most maxFetchesPerRound a round, each in turn', async () => {
    const counter = new ReadCounter();
    await setup(counter, { maxFetchesPerRound: 2 });
    const overdue = await createJobs(5, { expectedDurationMs: 60_000 });
    await createJobs(QUIET, { expectedDurationMs: 3_600_000 });
    await h!.advance(60_000);
    await h!.plane.reconcileNow('fake');
    // Past the five jobs' expected duration and the orphan margin; the others are well within theirs.
    await h!.advance(360_000);
    const rounds: string[][] = [];
    for (let round = 0; round < 3; round++) {
      counter.reset();
      const mark = h!.remote.calls.length;
      const [report] = await h!.plane.reconcileNow('fake');
      rounds.push(h!.remote.calls.slice(mark).flatMap((c) => (c.method === 'get' && c.id ? [c.id] : [])));
      expect(report).toMatchObject({ fetched: 2, deferred: 3 });
      // The five due jobs and what the two reads observe, never the quiet ones.
      expect(counter.calls.get('listEnvelopes') ?? 0).toBe(0);
      expect(counter.total()).toBeLessThanOrEqual(10);
      await h!.advance(1_000);
    }
    expect(new Set([...rounds[0]!, ...rounds[1]!]).size).toBe(4);
    expect(new Set(rounds.flat())).toEqual(new Set(overdue.map((j) => j.remoteId)));
  });
});
