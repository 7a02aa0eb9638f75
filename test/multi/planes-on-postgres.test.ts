import { describe, expect, it, vi } from 'vitest';
import { TaskplaneError } from '../../src/core/errors.ts';
import type { Connector } from '../../src/connectors/connector.ts';
import type { FakeRemote } from '../plane/fake-remote.ts';
import { CLUSTER_OPTIONS, cluster, until, watching, type Member } from './cluster.ts';

/**
 * Several plane instances on one PostgreSQL schema, each with its own connections: what a user does
 * through any instance reaches the instance that watches the job, a job another instance finished stops
 * being watched there, and a create whose plane died is started by the instance that answers its retry.
 * Reconciliation is an hour away, so none of this is its doing.
 */
const T = 't';
const RENEW_MS = CLUSTER_OPTIONS.watch!.leaseTtlMs! / 3;

async function startedOn(m: Member, input: string) {
  return (await m.plane.create({ tenant: T, target: 'fake', input }, { wait: 'started' })).envelope;
}

/** The job waits for input, and the watching plane's stream ended there (as A2A servers end it). */
async function parkedAtInput(m: Member, id: string, remote: FakeRemote, rid: string) {
  // Subscribed (the fake registers the stream in the same turn as it records the call): the input
  // request then arrives as a stream event, which ends the stream.
  await until(
    [m.store],
    () => remote.calls.some((c) => c.method === 'subscribe' && c.id === rid),
    'the creating plane streams the job',
  );
  remote.set(rid, 'waiting_for_input', { inputRequest: { requestId: 'q1', prompt: 'Which edition?' } });
  await until(
    [m.store],
    async () =>
      (await m.plane.get(T, id)).state === 'waiting_for_input' && m.plane.watcherStates()[id] === 'parked',
    'the watcher parked at the input request',
  );
}

describe('planes sharing one PostgreSQL', () => {
  it('an answer through a plane that does not watch the job wakes the plane that does (change feed)', async () => {
    const c = await cluster([{}, {}, {}]);
    const [a, b, third] = c.members as [Member, Member, Member];
    const env = await startedOn(a, 'needs input');
    await parkedAtInput(a, env.id, c.remote, env.remoteId!);

    await b.plane.answer(T, env.id, { requestId: 'q1', value: 'second' });
    // The agent finishes after the answer; only a stream (A's) can tell, and A's stream ended at the
    // input request.
    c.remote.set(env.remoteId!, 'succeeded');
    await until(
      [a.store, b.store],
      async () => (await b.plane.get(T, env.id)).state === 'succeeded',
      'succeeded',
    );
    expect(watching(b.plane)).toEqual([]);
    expect(watching(third.plane)).toEqual([]);
  }, 60_000);

  it('a watcher that missed the change notice finds the answer on its own lease round', async () => {
    // A hears nothing from the others (no LISTEN): only its own timer can find the change.
    const c = await cluster([{ listen: false }, {}]);
    const [a, b] = c.members as [Member, Member];
    const env = await startedOn(a, 'needs input');
    await parkedAtInput(a, env.id, c.remote, env.remoteId!);
    await b.plane.answer(T, env.id, { requestId: 'q1', value: 'second' });
    c.remote.set(env.remoteId!, 'succeeded');
    expect((await b.plane.get(T, env.id)).state).toBe('running');

    await c.clock.advance(RENEW_MS + 1);
    await until([b.store], async () => (await b.plane.get(T, env.id)).state === 'succeeded', 'succeeded');
  }, 60_000);

  it('a job another plane finished stops its watcher and its lease is no longer renewed', async () => {
    const c = await cluster([{ listen: false }, {}]);
    const [a, b] = c.members as [Member, Member];
    c.remote.cancelCompletes = true;
    const env = await startedOn(a, 'to cancel');
    await parkedAtInput(a, env.id, c.remote, env.remoteId!);
    expect((await b.plane.cancel(T, env.id)).state).toBe('cancelled');
    const lease = `watch:${env.id}`;
    expect(await b.store.acquireLease(lease, 'probe', c.clock.now(), 1)).toBe(false);

    await c.clock.advance(RENEW_MS + 1);
    await until([a.store], () => !watching(a.plane).includes(env.id), 'the watcher on A ended');
    // Released, not merely left to expire: taken well within the 30 s the lease ran for.
    await until(
      [a.store],
      () => b.store.acquireLease(lease, 'probe', c.clock.now(), 1),
      'the lease of the finished job is free',
    );
  }, 60_000);

  it('a create in flight when its plane died is started at once by the plane that answers the retry', async () => {
    let startCalled = (): void => undefined;
    const calledStart = new Promise<void>((resolve) => (startCalled = resolve));
    // A's start never reaches the agent: A dies with it in flight.
    const hanging = (base: Connector): Connector =>
      Object.assign(Object.create(base) as Connector, {
        start: (_req: unknown, signal: AbortSignal) =>
          new Promise<never>((_, reject) => {
            startCalled();
            signal.addEventListener('abort', () => reject(new TaskplaneError('unavailable', 'killed')));
          }),
      });
    const c = await cluster([{ connector: hanging }, {}]);
    const [a, b] = c.members as [Member, Member];
    const req = { tenant: T, target: 'fake', input: 'in flight', idempotencyKey: 'order-17' };
    const { envelope } = await a.plane.create(req);
    await calledStart;
    await a.kill();
    const startedAt = c.clock.now();

    const retry = await b.plane.create(req);
    expect(retry.created).toBe(false);
    expect(retry.envelope.id).toBe(envelope.id);
    await until(
      [b.store],
      async () => (await b.plane.get(T, envelope.id)).remoteId !== null,
      'the retried job is started',
    );
    // On the virtual clock nothing moved: not the lease's expiry (30 s), nor a retry backoff.
    expect(c.clock.now()).toBe(startedAt);
    expect(c.remote.jobs.size).toBe(1);
    await until([b.store], () => watching(b.plane).includes(envelope.id), 'B watches the job');
  }, 60_000);

  it("a dead plane's jobs are adopted at the next lease round, not the next adoption round", async () => {
    const c = await cluster([{}, {}]);
    const [a, b] = c.members as [Member, Member];
    const env = await startedOn(a, 'orphaned');
    await until([a.store], () => watching(a.plane).includes(env.id), 'A watches the job');
    await a.kill();
    // One lease round (ttl/3), well before the adoption interval (= ttl, 30 s).
    await c.clock.advance(RENEW_MS + 1);
    await until([b.store], () => watching(b.plane).includes(env.id), 'B watches the orphaned job');
    expect(c.clock.now() - 1_700_000_000_000).toBeLessThan(CLUSTER_OPTIONS.watch!.leaseTtlMs!);
  }, 60_000);

  it("an adoption round neither reads nor offers a live plane's jobs", async () => {
    const c = await cluster([{}, {}]);
    const [a, b] = c.members as [Member, Member];
    for (let i = 0; i < 5; i++) await startedOn(a, `busy ${i}`);
    const single = vi.spyOn(b.store, 'acquireLease');
    const batched = vi.spyOn(b.store, 'acquireLeases');
    const unwatched = vi.spyOn(b.store, 'listUnwatchedEnvelopes');
    // Past B's adoption interval (= ttl), short of A's leases expiring (renewed every ttl/3). Virtual time
    // does not wait for PostgreSQL: a renewal round is three statements, and A's must have committed
    // before B's round reads, as it would have in real time, so time stops short of B's round until then.
    const renewals = vi.spyOn(a.store, 'acquireLeases');
    const ttl = CLUSTER_OPTIONS.watch!.leaseTtlMs!;
    await c.clock.advance(ttl - 1);
    await until([a.store], () => renewals.mock.calls.length > 0, "A's leases renewed");
    await Promise.all(renewals.mock.results.map((r) => r.value as Promise<unknown>));
    await c.clock.advance(2);
    await until([b.store], () => unwatched.mock.results.length > 0, 'B ran an adoption round');
    const [round] = unwatched.mock.results;
    expect((await (round!.value as ReturnType<typeof b.store.listUnwatchedEnvelopes>)).items).toEqual([]);
    // Nothing to offer: no lease statement at all, let alone one per job.
    expect(single).not.toHaveBeenCalled();
    expect(batched.mock.calls.flatMap((call) => call[0]).filter((n) => n.startsWith('watch:'))).toEqual([]);
    expect(watching(b.plane)).toEqual([]);
    expect(watching(a.plane)).toHaveLength(5);
  }, 60_000);

  it('the reconciliation of a target passes to another plane as soon as its holder dies', async () => {
    const c = await cluster([{}, {}]);
    const [a, b] = c.members as [Member, Member];
    await startedOn(a, 'reconciled');
    expect((await a.plane.reconcileNow('fake'))[0]!.listPages).toBe(1);
    // A holds the target's lease for the whole interval: B's pass is skipped.
    expect((await b.plane.reconcileNow('fake'))[0]!.listPages).toBe(0);
    await a.kill();
    // Long before the lease's hour is up: A's process is gone, so B lists now.
    expect((await b.plane.reconcileNow('fake'))[0]!.listPages).toBe(1);
  }, 60_000);
});
