import { afterEach, describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/core/envelope.ts';
import type { Store } from '../../src/store/store.ts';
import { harness, type Harness } from './harness.ts';

/**
 * A start is sent again (same messageId) only while no plane has bound the job to a remote job. A plane
 * retrying a start may have read the job before another plane bound it (a lease taken over from a
 * stalled plane, a slow list); that plane may have addressed the remote job by its id since, and an
 * agent may then take the same message as a new one (our host does: docs/host.md, "Idempotent sends"),
 * so the resend would start a second job. test/multi/kill-cluster.test.ts is the same race with real
 * processes.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T = 'tenant-a';
const quiet = { delivery: { stream: false, push: false, poll: false } };

describe('a start retry for a job another plane has bound meanwhile', () => {
  it('is not sent: one job on the remote, the record bound to it', async () => {
    let bindFirst: ((backend: Store) => Promise<void>) | null = null;
    h = await harness(
      quiet,
      // The remote deduplicates nothing, as a host does once the first task was acknowledged.
      { idempotentStart: true, list: false },
      1,
      {},
      {
        // Just before this plane writes its next start attempt, another plane records what it learned
        // (the remote job r1, from its webhook or stream): this plane's read of the job is now stale.
        wrapStore: (backend) =>
          new Proxy(backend, {
            get(target, prop, receiver) {
              if (prop !== 'updateEnvelope') return Reflect.get(target, prop, receiver) as unknown;
              return async (next: Envelope, version: number, events: never[]) => {
                const hook = bindFirst;
                if (hook && next.remoteId === null && (next.startAttempts ?? 0) >= 2) {
                  bindFirst = null;
                  await hook(target);
                }
                return target.updateEnvelope(next, version, events);
              };
            },
          }),
      },
    );
    h.remote.dedupMessageIds = false;
    h.remote.failNext('start-after'); // r1 is created; its answer never comes back
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'x' }, { wait: 'started' });
    expect(envelope.remoteId).toBeNull();
    expect(h.remote.jobs.size).toBe(1);

    bindFirst = async (backend) => {
      const current = (await backend.getEnvelope(envelope.id))!;
      await backend.updateEnvelope(
        { ...current, remoteId: 'r1', state: 'running', updatedAt: h!.clock.now() },
        current.version,
        [],
      );
    };
    await h.advance(70_000);

    expect(bindFirst).toBeNull(); // the retry came, and met the bound record
    expect(h.remote.calls.filter((c) => c.method === 'start')).toHaveLength(1);
    expect(h.remote.jobs.size).toBe(1);
    const after = await h.plane.get(T, envelope.id);
    expect(after.remoteId).toBe('r1');
    expect(after.startAttempts).toBe(1);
  });
});

describe('a plane that stalled between recording a start attempt and sending it', () => {
  const TTL = 30_000;
  const streaming = { delivery: { stream: true, push: false, poll: false } };
  it.each([
    ['a plain start', quiet, false],
    ['a streaming start', streaming, true],
  ] as const)(
    '%s is not sent on a lease too old to trust; once the lease is renewed the job starts, once',
    async (_, delivery, startStream) => {
      let stallBeforeAttempt = true;
      h = await harness(
        { ...delivery, watch: { leases: 'on', leaseTtlMs: TTL } },
        { idempotentStart: true, list: false },
        1,
        { startStream },
        {
          // The plane pauses right as it records its first start attempt: no timer runs meanwhile, so its
          // lease is not renewed, and when it resumes the time is gone (VirtualClock.jump).
          wrapStore: (backend) =>
            new Proxy(backend, {
              get(target, prop, receiver) {
                if (prop !== 'updateEnvelope') return Reflect.get(target, prop, receiver) as unknown;
                return async (next: Envelope, version: number, events: never[]) => {
                  if (stallBeforeAttempt && next.remoteId === null && next.startAttempts === 1) {
                    stallBeforeAttempt = false;
                    h!.clock.jump((3 * TTL) / 4);
                  }
                  return target.updateEnvelope(next, version, events);
                };
              },
            }),
        },
      );
      const { envelope } = await h.plane.create(
        { tenant: T, target: 'fake', input: 'x' },
        { wait: 'started' },
      );
      // Another plane may have adopted the job by now: nothing was sent, and the record says so.
      const starts = () => h!.remote.calls.filter((c) => c.method === 'start' || c.method === 'startStream');
      expect(starts()).toHaveLength(0);
      const held = await h.plane.get(T, envelope.id);
      expect(held.remoteId).toBeNull();
      expect(held.startMaybeSent).toBe(false);
      expect(held.lastError?.message).toMatch(/watch lease/);
      // No other plane took it: the next renewal makes the lease fresh again, and the retry sends it.
      await h.advance(TTL);
      expect(starts()).toHaveLength(1);
      expect(h.remote.jobs.size).toBe(1);
      expect((await h.plane.get(T, envelope.id)).remoteId).toBe([...h.remote.jobs.keys()][0]);
    },
  );
});
