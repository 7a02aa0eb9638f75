import { afterEach, describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/core/envelope.ts';
import { harness, type Harness } from './harness.ts';

/**
 * The truth rule inside the engine, on a virtual clock: a start that cannot reach its target says why
 * and when it retries, and fails only when the target certainly never got it; reconciliation isolates
 * each job, so one job's failure never hides another's outcome.
 */
const T = 't1';
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const quiet = {
  delivery: { stream: false, push: false, poll: true },
  poll: { intervalMs: 10_000_000, maximumIntervalMs: 10_000_000 },
  reconcile: { enabled: false },
};

describe('a start that cannot reach its target', () => {
  const opts = {
    ...quiet,
    startRetry: { initialIntervalMs: 1_000, maximumIntervalMs: 5_000 },
    startDeadlineMs: 60_000,
  };

  it('shows lastError, attempts and the next retry time, then fails start_unreachable after the deadline', async () => {
    h = await harness(opts);
    h.remote.startFault = 'refused';
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' });
    await h.advance(1);
    let env = await h.plane.get(T, envelope.id);
    expect(env.state).toBe('accepted');
    expect(env.lastError).toMatchObject({ code: 'unavailable', during: 'start' });
    expect(env.startAttempts).toBeGreaterThanOrEqual(1);
    expect(env.nextRetryAt).toBeGreaterThan(h.clock.now());
    await h.advance(70_000);
    env = await h.plane.get(T, envelope.id);
    expect(env.state).toBe('failed');
    expect(env.error?.code).toBe('start_unreachable');
    const events = await h.plane.events(T, { afterSeq: 0, envelopeId: envelope.id });
    expect(events.find((e) => e.data.to === 'failed')?.data).toMatchObject({
      source: 'policy',
      reason: 'start_unreachable',
    });
  });

  it('keeps a start that may have reached the target open as unknown, never failed', async () => {
    h = await harness(opts);
    h.remote.startFault = 'in_doubt';
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' });
    await h.advance(70_000);
    let env = await h.plane.get(T, envelope.id);
    expect(env.state).toBe('unknown');
    // The target comes back: the job is started (same messageId) and its true outcome learned.
    h.remote.startFault = null;
    await h.advance(10_000);
    env = await h.plane.get(T, envelope.id);
    expect(env.remoteId).not.toBeNull();
    h.remote.set(env.remoteId!, 'succeeded');
    await h.plane.reconcileNow('fake');
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
  });
});

describe('a start answer that names no job', () => {
  for (const startStream of [false, true])
    it(`${startStream ? 'streaming' : 'plain'}: a failed attempt that may have been sent; the job is found by its contextId, not bound to nothing`, async () => {
      h = await harness(
        { ...quiet, delivery: { stream: startStream, push: false, poll: true } },
        { idempotentStart: false },
        1,
        { startStream },
      );
      h.remote.startFault = 'nameless';
      const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' });
      await h.advance(1);
      let env = await h.plane.get(T, envelope.id);
      expect(env.remoteId).toBeNull();
      expect(env.state).toBe('accepted');
      expect(env.lastError).toMatchObject({ code: 'remote_error', during: 'start' });
      expect(env.startMaybeSent).toBe(true);
      h.remote.startFault = null;
      await h.advance(70_000);
      env = await h.plane.get(T, envelope.id);
      const [made] = [...h.remote.jobs.keys()];
      expect(env.remoteId).toBe(made);
      expect(h.remote.jobs.size).toBe(1);
      h.remote.set(made!, 'succeeded');
      await h.plane.reconcileNow('fake');
      expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
    });
});

describe('reconciliation isolates each job', () => {
  it("one job's failure is logged and retried next round; the pass goes on with the others", async () => {
    h = await harness(quiet);
    const a = (await h.plane.create({ tenant: T, target: 'fake', input: 'a' }, { wait: 'started' })).envelope;
    const b = (await h.plane.create({ tenant: T, target: 'fake', input: 'b' }, { wait: 'started' })).envelope;
    h.remote.set(a.remoteId!, 'succeeded');
    h.remote.set(b.remoteId!, 'succeeded');
    const store = h.store;
    const update = store.updateEnvelope.bind(store);
    let broken = true;
    store.updateEnvelope = (env: Envelope, version: number, events) =>
      broken && env.id === a.id ? Promise.reject(new Error('disk full')) : update(env, version, events);
    await h.plane.reconcileNow('fake');
    expect((await h.plane.get(T, b.id)).state).toBe('succeeded');
    expect((await h.plane.get(T, a.id)).state).not.toBe('succeeded');
    broken = false;
    await h.plane.reconcileNow('fake');
    expect((await h.plane.get(T, a.id)).state).toBe('succeeded');
  });
});
