import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './harness.ts';
import { ReadCounter } from './read-counter.ts';

/**
 * A stream that goes silent while the job is settled by another path (reconciliation, an API
 * observation, another plane): the watcher must not stay blocked on it until stop().
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T = 'tenant-a';
const streaming = { delivery: { stream: true, push: false, poll: false } };

/** Moves a remote job without a word on its open streams: the stream has gone silent. */
function finishSilently(h: Harness, remoteId: string): void {
  const job = h.remote.jobs.get(remoteId)!;
  job.state = 'succeeded';
  job.native = 'COMPLETED';
  job.ts = h.clock.now() + 1;
}

describe('a stream watcher on a silent stream', () => {
  it('stops when reconciliation settles the job', async () => {
    h = await harness(streaming);
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    await h.settle();
    expect(h.plane.watcherStates()[envelope.id]).toBe('attached');
    finishSilently(h, envelope.remoteId!);
    await h.plane.reconcileNow();
    await h.settle();
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
    expect(h.plane.watcherStates()[envelope.id]).toBeUndefined();
  });

  it('stops when another plane sharing the store settles the job', async () => {
    h = await harness(streaming);
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    await h.settle();
    expect(h.plane.watcherStates()[envelope.id]).toBe('attached');
    // Another plane (not started: no watchers of its own) observes the outcome through the same store.
    const other = h.addPlane({ ...streaming, reconcile: { enabled: false } }, 'plane-b');
    finishSilently(h, envelope.remoteId!);
    await other.observe(envelope.id, h.remote.snapshot(h.remote.jobs.get(envelope.remoteId!)!), 'push');
    await h.settle();
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
    expect(h.plane.watcherStates()[envelope.id]).toBeUndefined();
  });

  it('keeps streaming when the change is not an outcome', async () => {
    h = await harness(streaming);
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    await h.settle();
    const subscribes = h.remote.calls.filter((c) => c.method === 'subscribe').length;
    await h.plane.cancel(T, envelope.id, 'bob');
    await h.settle();
    expect(h.plane.watcherStates()[envelope.id]).toBe('attached');
    expect(h.remote.calls.filter((c) => c.method === 'subscribe')).toHaveLength(subscribes);
    h.remote.set(envelope.remoteId!, 'cancelled');
    await h.settle();
    expect((await h.plane.get(T, envelope.id)).state).toBe('cancelled');
  });

  it('reads nothing back for its own writes: a stream of status messages costs no settle reads', async () => {
    const counter = new ReadCounter();
    const versionReads = () => counter.calls.get('envelopeVersions') ?? 0;
    h = await harness(streaming, {}, 1, {}, { wrapStore: (store) => counter.wrap(store) });
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    await h.settle();
    const before = versionReads();
    for (let i = 0; i < 20; i++) {
      h.remote.set(envelope.remoteId!, 'running', { statusMessage: `step ${i}` });
      await h.settle();
    }
    expect((await h.plane.get(T, envelope.id)).statusMessage).toBe('step 19');
    expect(h.plane.watcherStates()[envelope.id]).toBe('attached');
    expect(versionReads() - before).toBe(0);
    // An outcome written by another path still ends the watcher.
    const other = h.addPlane({ ...streaming, reconcile: { enabled: false } }, 'plane-b');
    h.remote.silentStreams = true;
    h.remote.set(envelope.remoteId!, 'succeeded');
    await other.observe(envelope.id, h.remote.snapshot(h.remote.jobs.get(envelope.remoteId!)!), 'push');
    await h.settle();
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
    expect(h.plane.watcherStates()[envelope.id]).toBeUndefined();
  });

  it('decides each frame against its own last write: a stream of status messages reads no record', async () => {
    const counter = new ReadCounter();
    const recordReads = () => counter.calls.get('getEnvelope') ?? 0;
    h = await harness(streaming, {}, 1, {}, { wrapStore: (store) => counter.wrap(store) });
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    h.remote.set(envelope.remoteId!, 'running', { statusMessage: 'warming up' });
    await h.settle();
    const before = recordReads();
    for (let i = 0; i < 20; i++) {
      h.remote.set(envelope.remoteId!, 'running', { statusMessage: `step ${i}` });
      await h.settle();
    }
    const events = await h.store.listEvents({ envelopeId: envelope.id, afterSeq: 0, limit: 1000 });
    expect(events.filter((e) => e.type === 'status_message').map((e) => e.data.message)).toEqual(
      Array.from({ length: 20 }, (_, i) => `step ${i}`),
    );
    expect(recordReads() - before).toBe(0);
  });

  it('keeps what another writer recorded between two frames, and the next frame still lands', async () => {
    h = await harness(streaming);
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    h.remote.set(envelope.remoteId!, 'running', { statusMessage: 'one' });
    await h.settle();
    // Another plane records a cancel request on the job: the watcher's own last write is now stale.
    const other = h.addPlane({ ...streaming, reconcile: { enabled: false } }, 'plane-b');
    await other.cancel(T, envelope.id, 'bob');
    h.remote.set(envelope.remoteId!, 'running', { statusMessage: 'two' });
    await h.settle();
    const env = await h.plane.get(T, envelope.id);
    expect(env.statusMessage).toBe('two');
    expect(env.cancel?.requestedBy).toBe('bob');
    expect(env.state).toBe('cancel_requested');
  });
});
