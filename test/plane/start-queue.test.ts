import { afterEach, describe, expect, it } from 'vitest';
import type { ConnectorCapabilities } from '../../src/connectors/connector.ts';
import { STARTS_PER_TURN } from '../../src/plane/start-queue.ts';
import { DUE_CHECKS_PER_TURN } from '../../src/plane/reconciler.ts';
import { WRITES_PER_TURN } from '../../src/plane/turns.ts';
import type { PlaneOptions } from '../../src/plane/options.ts';
import type { CreateTaskRequest } from '../../src/plane/plane.ts';
import { harness, type Harness } from './harness.ts';

/**
 * New jobs' starts wait in the start queue for a later turn of the event loop (the server's is
 * setImmediate; here the test runs each turn by hand): a create answers before its start's work runs,
 * a burst of starts is spread over turns, and stop() never waits on a start that has not begun. The
 * plane's long loops over jobs (a reconciliation pass, a revoked key's jobs) take turns the same way.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T = 'tenant-a';
const starts = () => h!.remote.calls.filter((c) => c.method === 'start' || c.method === 'startStream').length;

type Turns = Awaited<ReturnType<typeof withTurns>>;

/** A harness whose plane defers starts to turns this test runs with `turn()`. */
async function withTurns(
  options: PlaneOptions = {},
  startStream = false,
  caps: Partial<ConnectorCapabilities> = {},
) {
  const turns: Array<() => void> = [];
  h = await harness(options, caps, 1, { startStream }, { nextTurn: (fn) => turns.push(fn) });
  return {
    async turn() {
      for (const fn of turns.splice(0)) fn();
      await h!.settle();
    },
    waiting: () => turns.length,
  };
}

describe('start queue', () => {
  it('a create returns with its envelope durable and nothing sent; the next turn sends the start', async () => {
    const turns = await withTurns({ delivery: { stream: false, push: false, poll: true } });
    const { envelope, created } = await h!.plane.create({ tenant: T, target: 'fake', input: 'q' });
    expect(created).toBe(true);
    await h!.settle();
    expect(starts()).toBe(0);
    expect((await h!.store.getEnvelope(envelope.id))?.state).toBe('accepted');
    expect(turns.waiting()).toBe(1);
    await turns.turn();
    expect(starts()).toBe(1);
    expect((await h!.store.getEnvelope(envelope.id))?.remoteId).not.toBeNull();
  });

  it(`a burst of creates begins at most ${STARTS_PER_TURN} starts per turn, each job started once`, async () => {
    const turns = await withTurns({ delivery: { stream: false, push: false, poll: true } });
    const n = STARTS_PER_TURN * 2 + 3;
    for (let i = 0; i < n; i++) await h!.plane.create({ tenant: T, target: 'fake', input: i });
    await h!.settle();
    const perTurn: number[] = [];
    let before = 0;
    while (turns.waiting() > 0) {
      await turns.turn();
      perTurn.push(starts() - before);
      before = starts();
    }
    expect(perTurn).toEqual([STARTS_PER_TURN, STARTS_PER_TURN, 3]);
    expect(h!.remote.jobs.size).toBe(n);
  });

  it('wait: started still waits for the remote, through the queue', async () => {
    const turns = await withTurns({ delivery: { stream: false, push: false, poll: true } });
    const pending = h!.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    let answered = false;
    void pending.then(() => (answered = true));
    await h!.settle();
    expect(answered).toBe(false);
    await turns.turn();
    const { envelope } = await pending;
    expect(envelope.remoteId).not.toBeNull();
  });

  it('stop() with starts still queued returns; nothing was sent and a restarted plane starts each job once', async () => {
    const turns = await withTurns({ delivery: { stream: true, push: false } });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await h!.plane.create({ tenant: T, target: 'fake', input: i })).envelope.id);
    const stopped = h!.plane.stop();
    // The queued starts find the plane stopped when their turn comes, and stop() waits for no more.
    await turns.turn();
    await stopped;
    expect(starts()).toBe(0);
    for (const id of ids) expect((await h!.store.getEnvelope(id))?.startAttempts ?? 0).toBe(0);
    await h!.restart();
    await h!.advance(1_000);
    for (const id of ids) expect((await h!.store.getEnvelope(id))?.remoteId).not.toBeNull();
    expect(starts()).toBe(3);
  });
});

describe('stop right after a create', () => {
  // stop() at every point of a start in flight, for each way a job is watched: it must return, and a
  // restarted plane must start the job exactly once.
  const setups: Array<[string, PlaneOptions, boolean]> = [
    ['streaming start', { delivery: { stream: true, push: false } }, true],
    ['start, then stream', { delivery: { stream: true, push: false } }, false],
    ['start, then poll', { delivery: { stream: false, push: false, poll: true } }, false],
    [
      'start, then push',
      { delivery: { stream: false, push: true, poll: false }, publicUrl: 'http://plane.test' },
      false,
    ],
  ];
  for (const [name, options, startStream] of setups)
    it(`${name}: stop() returns at every step of the start, and the job is started once after a restart`, async () => {
      for (let steps = 0; steps < 12; steps++) {
        h = await harness(options, {}, steps + 1, { startStream });
        h.remote.startDelayMs = steps % 2 ? 0 : 500;
        const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: steps });
        for (let i = 0; i < steps; i++) await Promise.resolve();
        await h.plane.stop();
        await h.restart();
        await h.advance(120_000);
        const after = await h.store.getEnvelope(envelope.id);
        expect(after?.remoteId).not.toBeNull();
        expect(h.remote.jobsByMessageId(envelope.messageId!)).toHaveLength(1);
        await h.close();
        h = undefined;
      }
    });
});

// Loops over many jobs take turns too (plane/turns.ts): on a store that answers without I/O every await
// of such a loop resolves in one turn, and a stream frame that arrives meanwhile would wait for its end.
describe('long loops take turns', () => {
  /** A plane that learns of its jobs only from the passes a test asks for: no stream, push, poll or rounds. */
  const ASKED_ONLY: PlaneOptions = {
    delivery: { stream: false, push: false, poll: false },
    reconcile: { enabled: false },
  };

  /**
   * Lets the work settle, then runs the waiting turns one by one: how many more `done` counts after the
   * settling and after each turn.
   */
  async function donePerTurn(turns: Turns, done: () => Promise<number>): Promise<number[]> {
    await h!.settle();
    const perTurn = [await done()];
    while (turns.waiting() > 0) {
      await turns.turn();
      perTurn.push((await done()) - perTurn.reduce((a, b) => a + b, 0));
    }
    return perTurn;
  }

  /** `n` jobs created (each request with `extra`) and their starts run. */
  async function started(turns: Turns, n: number, extra: Partial<CreateTaskRequest> = {}): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++)
      ids.push((await h!.plane.create({ tenant: T, target: 'fake', input: i, ...extra })).envelope.id);
    while (turns.waiting() > 0) await turns.turn();
    return ids;
  }

  /** `quietMs` later every job has succeeded on the remote, which nobody has told the plane. */
  async function doneQuietly(quietMs: number): Promise<void> {
    await h!.advance(quietMs);
    for (const job of h!.remote.jobs.values()) h!.remote.set(job.id, 'succeeded');
  }

  /** How many of `ids` have an event of `type`. */
  async function withEvent(ids: string[], type: string): Promise<number> {
    let count = 0;
    for (const id of ids)
      if ((await h!.store.listEvents({ afterSeq: 0, envelopeId: id })).some((e) => e.type === type)) count++;
    return count;
  }

  it(`a reconciliation pass observes a listed page ${WRITES_PER_TURN} jobs a turn, and every one of them`, async () => {
    // With a store that answers without I/O, a page observed in one go holds the event loop for the whole
    // page, and every stream frame that arrives meanwhile waits for it.
    const turns = await withTurns(ASKED_ONLY, false, { list: true });
    const n = WRITES_PER_TURN * 2 + 3;
    const ids = await started(turns, n);
    await doneQuietly(60_000);
    const succeeded = async () =>
      (await Promise.all(ids.map((id) => h!.plane.get(T, id)))).filter((e) => e.state === 'succeeded').length;

    let report: unknown;
    const pass = h!.plane.reconcileNow('fake').then(([r]) => (report = r));
    const perTurn = await donePerTurn(turns, succeeded);
    await pass;
    expect(perTurn).toEqual([WRITES_PER_TURN, WRITES_PER_TURN, 3]);
    expect(report).toMatchObject({ target: 'fake', listed: n, changed: n });
  });

  it(`a pass over a target that cannot list looks its open jobs over ${DUE_CHECKS_PER_TURN} a turn, then reads the quiet ones`, async () => {
    // Without a list every open job is looked over for its own deadlines each pass; on a store that
    // answers without I/O a long loop of them would hold the event loop as a listed page did.
    const turns = await withTurns(
      { ...ASKED_ONLY, reconcile: { enabled: false, intervalMs: 1_000 } },
      false,
      { list: false },
    );
    const n = DUE_CHECKS_PER_TURN * 2 + 3;
    const ids = await started(turns, n);
    await doneQuietly(600_000);
    const reads = () => h!.remote.calls.filter((c) => c.method === 'get').length;
    const before = reads();

    let report: unknown;
    const pass = h!.plane.reconcileNow('fake').then(([r]) => (report = r));
    const readsPerTurn = await donePerTurn(turns, async () => reads() - before);
    await pass;
    // Two more turns pass with the loop still looking the jobs over, none read yet; then every quiet one is.
    expect(readsPerTurn).toEqual([0, 0, n]);
    expect(report).toMatchObject({ target: 'fake', fetched: n, changed: n });
    for (const id of ids) expect((await h!.plane.get(T, id)).state).toBe('succeeded');
  });

  it(`a revoked key's open jobs get their actor_revoked events ${WRITES_PER_TURN} a turn, every one of them`, async () => {
    const turns = await withTurns(ASKED_ONLY);
    const n = WRITES_PER_TURN * 2 + 3;
    const ids = await started(turns, n, { keyId: 'key-1' });
    await started(turns, 1, { keyId: 'key-2' });

    let report: { envelopes: string[] } | undefined;
    const handled = h!.plane.onActorRevoked('key-1', T).then((r) => (report = r));
    const perTurn = await donePerTurn(turns, () => withEvent(ids, 'actor_revoked'));
    await handled;
    expect(perTurn).toEqual([WRITES_PER_TURN, WRITES_PER_TURN, 3]);
    expect(report!.envelopes.sort()).toEqual([...ids].sort());
  });

  it(`a card change's events go to the target's open jobs ${WRITES_PER_TURN} a turn, every one of them`, async () => {
    // The agent was redeployed behind another interface: the next remote call notices, and each open job
    // gets a card_changed event saying why its route changed.
    const turns = await withTurns(ASKED_ONLY, false, { list: true });
    const n = WRITES_PER_TURN * 2 + 3;
    const ids = await started(turns, n);
    h!.remote.revision = 'v2';
    const pass = h!.plane.reconcileNow('fake');
    const perTurn = await donePerTurn(turns, () => withEvent(ids, 'card_changed'));
    await pass;
    expect(perTurn).toEqual([WRITES_PER_TURN, WRITES_PER_TURN, 3]);
  });
});
