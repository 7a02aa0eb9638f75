import { afterEach, describe, expect, it } from 'vitest';
import { TaskplaneError } from '../../src/core/errors.ts';
import { harness, type Harness } from './harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T = 'tenant-a';

describe('create', () => {
  it('writes the envelope with messageId and contextId before the remote call, and retries with the same messageId', async () => {
    h = await harness({
      delivery: { stream: false, push: false, poll: false },
      reconcile: { enabled: false },
    });
    h.remote.failNext('start');
    const { envelope } = await h.plane.create(
      { tenant: T, target: 'fake', input: { q: 1 } },
      { wait: 'started' },
    );
    expect(envelope.state).toBe('accepted');
    expect(envelope.messageId).toMatch(/^msg_/);
    expect(envelope.contextId).toMatch(/^ctx_/);
    expect(envelope.remoteId).toBeNull();
    expect(h.remote.jobs.size).toBe(0);
    await h.advance(70_000);
    const after = await h.plane.get(T, envelope.id);
    expect(after.remoteId).not.toBeNull();
    expect(h.remote.jobsByMessageId(envelope.messageId!)).toHaveLength(1);
    const s = await h.plane.signals();
    expect(s.reusedMessageIds).toBe(1);
  });

  it('a lost start response on a remote that does not dedup is found by contextId, not sent twice', async () => {
    h = await harness(
      { delivery: { stream: false, push: false, poll: false }, reconcile: { enabled: false } },
      { idempotentStart: false },
    );
    h.remote.dedupMessageIds = false;
    h.remote.failNext('start-after'); // the job is created, the response is lost
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'x' }, { wait: 'started' });
    expect(envelope.remoteId).toBeNull();
    await h.advance(70_000);
    const after = await h.plane.get(T, envelope.id);
    expect(after.remoteId).toBe('r1');
    expect(h.remote.jobs.size).toBe(1);
  });

  it('same idempotency key and input returns the same envelope; a different input is a conflict', async () => {
    h = await harness();
    const a = await h.plane.create(
      {
        tenant: T,
        target: 'fake',
        input: { a: 1, b: 2 },
        idempotencyKey: 'k1',
      },
      { wait: 'started' },
    );
    const b = await h.plane.create(
      {
        tenant: T,
        target: 'fake',
        input: { b: 2, a: 1 },
        idempotencyKey: 'k1',
      },
      { wait: 'started' },
    );
    expect(b.created).toBe(false);
    expect(b.envelope.id).toBe(a.envelope.id);
    const err = await h.plane
      .create({ tenant: T, target: 'fake', input: { a: 2 }, idempotencyKey: 'k1' }, { wait: 'started' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskplaneError);
    expect((err as TaskplaneError).code).toBe('conflict');
    expect((err as TaskplaneError).field).toBe('idempotencyKey');
    expect(h.remote.jobs.size).toBe(1);
  });

  it('rejects an unknown target naming the field', async () => {
    h = await harness();
    const err = (await h.plane
      .create({ tenant: T, target: 'nope', input: 1 }, { wait: 'started' })
      .catch((e: unknown) => e)) as TaskplaneError;
    expect(err.code).toBe('invalid_argument');
    expect(err.field).toBe('target');
  });
});

describe('streams', () => {
  it('learns the outcome over the stream and reattaches after drops without resending', async () => {
    h = await harness({ delivery: { stream: true, push: false } });
    const { envelope } = await h.plane.create(
      { tenant: T, target: 'fake', input: 'work' },
      { wait: 'started' },
    );
    await h.settle();
    const rid = (await h.plane.get(T, envelope.id)).remoteId!;
    h.remote.set(rid, 'running');
    await h.settle();
    expect((await h.plane.get(T, envelope.id)).state).toBe('running');
    for (let i = 0; i < 3; i++) {
      h.remote.dropStreams();
      await h.advance(2_000);
    }
    h.remote.set(rid, 'succeeded', { artifacts: [{ artifactId: 'a1', content: { text: 'done' } }] });
    await h.advance(65_000);
    const done = await h.plane.get(T, envelope.id);
    expect(done.state).toBe('succeeded');
    expect(done.artifacts[0]?.hash).toMatch(/^sha256:/);
    expect(h.remote.calls.filter((c) => c.method === 'start')).toHaveLength(1);
    const s = await h.plane.signals();
    expect(s.streamDrops).toBe(3);
    expect(s.reattaches).toBeGreaterThanOrEqual(3);
    // Each drop until the reattached stream's first update is one stream recovery time, on the clock.
    const { streamRecovery, startLatency } = h.plane.latencyHistograms();
    expect(streamRecovery.count).toBeGreaterThanOrEqual(1);
    expect(streamRecovery.count).toBeLessThanOrEqual(3);
    expect(streamRecovery.sumMs).toBeGreaterThan(0);
    expect(startLatency.count).toBe(1);
  });

  it('surfaces pending input; wrong id and second answers are conflicts that change nothing', async () => {
    h = await harness({ delivery: { stream: true, push: false } });
    const { envelope } = await h.plane.create(
      { tenant: T, target: 'fake', input: 'work' },
      { wait: 'started' },
    );
    await h.settle();
    const rid = (await h.plane.get(T, envelope.id)).remoteId!;
    h.remote.set(rid, 'waiting_for_input', { inputRequest: { requestId: 'q1', prompt: 'Which edition?' } });
    await h.settle();
    const waiting = await h.plane.get(T, envelope.id);
    expect(waiting.state).toBe('waiting_for_input');
    expect(waiting.pendingInput).toMatchObject({ requestId: 'q1', prompt: 'Which edition?' });
    const wrong = (await h.plane
      .answer(T, envelope.id, { requestId: 'nope', value: 'x' })
      .catch((e: unknown) => e)) as TaskplaneError;
    expect(wrong.code).toBe('conflict');
    expect((await h.plane.get(T, envelope.id)).version).toBe(waiting.version);
    const answered = await h.plane.answer(T, envelope.id, { requestId: 'q1', value: 'second' });
    expect(answered.state).toBe('running');
    const again = (await h.plane
      .answer(T, envelope.id, { requestId: 'q1', value: 'x' })
      .catch((e: unknown) => e)) as TaskplaneError;
    expect(again.code).toBe('conflict');
    expect(h.remote.calls.filter((c) => c.method === 'answer')).toHaveLength(1);
    // The parked watcher was woken by the answer and hears the completion.
    h.remote.set(rid, 'succeeded');
    await h.advance(65_000);
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
  });
});

describe('stream refusals', () => {
  it('a subscribe refused while the job runs backs off instead of spinning', async () => {
    h = await harness({ delivery: { stream: true, push: false }, reconcile: { enabled: false } });
    for (let i = 0; i < 50; i++) h.remote.failNext('subscribe', 'failed_precondition');
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    h.remote.set(envelope.remoteId!, 'running');
    await h.advance(10_000);
    const subscribes = h.remote.calls.filter((c) => c.method === 'subscribe').length;
    // Backoff from 1 s doubling (full jitter) allows only a handful of attempts in 10 s.
    expect(subscribes).toBeGreaterThan(1);
    expect(subscribes).toBeLessThan(15);
  });
});

describe('cancel', () => {
  it('records intent, and the true outcome when the job completes after cancel was requested', async () => {
    h = await harness({ delivery: { stream: true, push: false } });
    const { envelope } = await h.plane.create(
      { tenant: T, target: 'fake', input: 'work' },
      { wait: 'started' },
    );
    await h.settle();
    const rid = (await h.plane.get(T, envelope.id)).remoteId!;
    h.remote.set(rid, 'running');
    const c = await h.plane.cancel(T, envelope.id, 'alice');
    expect(c.state).toBe('cancel_requested');
    expect(c.cancel).toMatchObject({ requestedBy: 'alice', outcome: null });
    expect(c.cancel?.acknowledgedAt).not.toBeNull();
    h.remote.set(rid, 'succeeded');
    await h.settle();
    const done = await h.plane.get(T, envelope.id);
    expect(done.state).toBe('succeeded');
    expect(done.cancel?.outcome).toBe('succeeded');
    const late = (await h.plane.cancel(T, envelope.id).catch((e: unknown) => e)) as TaskplaneError;
    expect(late.code).toBe('conflict');
  });
});

describe('timeout', () => {
  it('a job past its timeout is cancelled on the remote and its true outcome recorded', async () => {
    h = await harness({
      delivery: { stream: false, push: false, poll: false },
      reconcile: { intervalMs: 60_000 },
    });
    const { envelope } = await h.plane.create(
      { tenant: T, target: 'fake', input: 'w', timeoutMs: 30_000 },
      { wait: 'started' },
    );
    await h.advance(60_000);
    const after = await h.plane.get(T, envelope.id);
    expect(after.state).toBe('cancel_requested');
    expect(after.cancel?.requestedBy).toBe('timeout');
    expect(h.remote.calls.filter((c) => c.method === 'cancel')).toHaveLength(1);
    h.remote.set(envelope.remoteId!, 'cancelled');
    await h.advance(60_000);
    const done = await h.plane.get(T, envelope.id);
    expect([done.state, done.cancel?.outcome]).toEqual(['cancelled', 'cancelled']);
  });
});

describe('cancel before start', () => {
  it('a job cancelled before its start was confirmed is never started when the remote never got it', async () => {
    h = await harness({ delivery: { stream: false, push: false, poll: false } }, { idempotentStart: false });
    h.remote.failNext('start');
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    const c = await h.plane.cancel(T, envelope.id, 'bob');
    expect(c.state).toBe('cancel_requested');
    await h.advance(70_000);
    const after = await h.plane.get(T, envelope.id);
    expect(after.state).toBe('cancelled');
    expect(after.cancel?.outcome).toBe('cancelled');
    expect(h.remote.jobs.size).toBe(0);
  });
});

describe('push ingress', () => {
  const opts = { delivery: { stream: false, push: true, poll: false }, publicUrl: 'http://127.0.0.1:9/' };

  it('verifies the token, deduplicates deliveries, fetches state and observes', async () => {
    h = await harness(opts);
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    const rid = envelope.remoteId!;
    expect(envelope.subscription?.tokenHash).toMatch(/^sha256:/);
    h.remote.set(rid, 'succeeded');
    const push = h.remote.pushes[0]!;
    expect(push.url).toContain(`/v1/webhooks/fake/fake?envelope=${envelope.id}`);
    const forged = await h.plane
      .handleWebhook('fake', {
        headers: { authorization: 'Bearer forged' },
        rawBody: push.body,
        envelopeId: envelope.id,
      })
      .catch((e: unknown) => e);
    expect((forged as TaskplaneError).code).toBe('unauthenticated');
    expect((await h.plane.get(T, envelope.id)).state).toBe('accepted');
    const req = {
      headers: { authorization: `Bearer ${push.token}` },
      rawBody: push.body,
      envelopeId: envelope.id,
    };
    expect((await h.plane.handleWebhook('fake', req)).status).toBe('observed');
    expect((await h.plane.handleWebhook('fake', req)).status).toBe('duplicate');
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
    const s = await h.plane.signals();
    expect(s.duplicatesAbsorbed.webhook).toBe(1);
    expect(s.webhooksRejected).toBe(1);
  });

  it('a delayed webhook after a newer state does not move the envelope back', async () => {
    h = await harness({ ...opts, webhook: { fetchState: 'when-incomplete' } });
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    const rid = envelope.remoteId!;
    h.remote.set(rid, 'running');
    h.clock.setTimer(0, () => {});
    await h.advance(1000);
    h.remote.set(rid, 'succeeded');
    const [first, second] = h.remote.pushes;
    const deliver = (p: typeof first) =>
      h!.plane.handleWebhook('fake', {
        headers: { authorization: `Bearer ${p!.token}` },
        rawBody: p!.body,
        envelopeId: envelope.id,
      });
    await deliver(second);
    await deliver(first);
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
  });
});

describe('status messages', () => {
  it('a new message without a new state is an event of its own; with a new state it rides on that event', async () => {
    h = await harness({ delivery: { stream: true, push: false, poll: false } });
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    const rid = envelope.remoteId!;
    h.remote.set(rid, 'running', { statusMessage: 'reading the input' });
    await h.settle();
    h.remote.set(rid, 'running', { statusMessage: 'step 2 of 3' });
    await h.settle();
    h.remote.set(rid, 'running', { statusMessage: 'step 2 of 3' }); // said again: nothing new
    await h.settle();
    const events = await h.plane.events(T, { afterSeq: 0, envelopeId: envelope.id });
    const said = events.filter((e) => e.type === 'status_message' || e.type === 'state_changed');
    expect(said.map((e) => [e.type, e.data.message ?? null])).toEqual([
      ['state_changed', 'reading the input'],
      ['status_message', 'step 2 of 3'],
    ]);
    expect((await h.plane.get(T, envelope.id)).statusMessage).toBe('step 2 of 3');
  });
});

describe('push while a stream is attached', () => {
  const opts = { delivery: { stream: true, push: true, poll: false }, publicUrl: 'http://127.0.0.1:9/' };
  // A delivery that names the job but carries no versioned state (as OpenAI's and Claude's do).
  const bare = (push: { token: string; body: string }, envelopeId: string) => {
    const body = JSON.parse(push.body) as { snapshot: { remoteVersion: unknown } };
    body.snapshot.remoteVersion = null;
    return { headers: { authorization: `Bearer ${push.token}` }, rawBody: JSON.stringify(body), envelopeId };
  };
  const gets = () => h!.remote.calls.filter((c) => c.method === 'get').length;

  it('costs no request when the stream carries the change', async () => {
    h = await harness(opts);
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    await h.settle();
    expect(h.plane.watcherStates()[envelope.id]).toBe('attached');
    h.remote.set(envelope.remoteId!, 'running');
    await h.settle();
    const before = gets();
    expect((await h.plane.handleWebhook('fake', bare(h.remote.pushes.at(-1)!, envelope.id))).status).toBe(
      'observed',
    );
    await h.advance(5_000);
    expect(gets()).toBe(before);
    expect((await h.plane.get(T, envelope.id)).state).toBe('running');
  });

  it('fetches the state when the attached stream says nothing within the grace (open but silent)', async () => {
    h = await harness(opts);
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    await h.settle();
    expect(h.plane.watcherStates()[envelope.id]).toBe('attached');
    await h.advance(10_000); // a long quiet stretch of a healthy stream
    h.remote.silentStreams = true;
    h.remote.set(envelope.remoteId!, 'succeeded');
    const before = gets();
    expect((await h.plane.handleWebhook('fake', bare(h.remote.pushes.at(-1)!, envelope.id))).status).toBe(
      'observed',
    );
    expect((await h.plane.get(T, envelope.id)).state).not.toBe('succeeded');
    await h.advance(2_000);
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
    expect(gets()).toBe(before + 1);
  });
});

describe('reconciliation', () => {
  it('learns outcomes that push lost with one list call per target', async () => {
    h = await harness({
      delivery: { stream: false, push: true, poll: false },
      publicUrl: 'http://127.0.0.1:9',
    });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (await h.plane.create({ tenant: T, target: 'fake', input: i }, { wait: 'started' })).envelope.id,
      );
    for (const env of await Promise.all(ids.map((id) => h!.plane.get(T, id))))
      h.remote.set(env.remoteId!, 'succeeded');
    // every push is lost; the 10-minute reconciliation catches them
    await h.advance(600_000);
    for (const id of ids) expect((await h.plane.get(T, id)).state).toBe('succeeded');
    expect(h.remote.calls.filter((c) => c.method === 'list')).toHaveLength(1);
    expect(h.remote.calls.filter((c) => c.method === 'get')).toHaveLength(0);
    const s = await h.plane.signals();
    expect(s.requests.perTask).toBeLessThan(2);
  });

  it('resubmits a job the agent forgot with the same messageId and keeps tracking it on the same envelope', async () => {
    h = await harness({
      delivery: { stream: false, push: false, poll: false },
      reconcile: { defaultExpectedDurationMs: 60_000, orphanMarginMs: 0 },
    });
    h.remote.dedupMessageIds = false;
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    const firstRemote = envelope.remoteId;
    h.remote.forget();
    await h.advance(600_000);
    const after = await h.plane.get(T, envelope.id);
    expect(after.reconciliation?.result).toBe('resubmitted');
    expect(after.remoteId).not.toBe(firstRemote);
    expect(after.state).not.toBe('lost');
    expect(h.remote.jobsByMessageId(envelope.messageId!)).toHaveLength(1);
    h.remote.set(after.remoteId!, 'succeeded');
    await h.advance(600_000);
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
    const s = await h.plane.signals();
    expect(s.taskNotFoundOwn).toBe(1);
    expect(s.resubmitted).toBe(1);
  });

  it('escalates a lost job when the policy says so', async () => {
    h = await harness({
      delivery: { stream: false, push: false, poll: false },
      lostPolicy: 'escalate',
      reconcile: { defaultExpectedDurationMs: 60_000, orphanMarginMs: 0 },
    });
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    h.remote.forget();
    await h.advance(600_000);
    const after = await h.plane.get(T, envelope.id);
    expect(after.state).toBe('lost');
    expect(after.reconciliation?.result).toBe('escalated');
  });

  it('per-job get when the connector cannot list', async () => {
    h = await harness({ delivery: { stream: false, push: false, poll: false } }, { list: false });
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    h.remote.set(envelope.remoteId!, 'failed');
    await h.advance(600_000);
    expect((await h.plane.get(T, envelope.id)).state).toBe('failed');
    expect(h.remote.calls.filter((c) => c.method === 'get')).toHaveLength(1);
  });
});

describe('polling', () => {
  it('polls with backoff growth and learns the outcome', async () => {
    h = await harness({
      delivery: { stream: false, push: false, poll: true },
      reconcile: { enabled: false },
      poll: { intervalMs: 15_000, multiplier: 1, jitterRatio: 0 },
    });
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    await h.advance(60_000);
    expect(h.remote.calls.filter((c) => c.method === 'get')).toHaveLength(4);
    h.remote.set(envelope.remoteId!, 'succeeded');
    await h.advance(15_000);
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
    await h.advance(60_000);
    expect(h.remote.calls.filter((c) => c.method === 'get')).toHaveLength(5);
  });
});

describe('recovery and stop', () => {
  it('a restarted plane resumes watching every non-terminal envelope', async () => {
    h = await harness({ delivery: { stream: true, push: false } });
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    await h.settle();
    await h.restart();
    h.remote.set(envelope.remoteId!, 'succeeded');
    await h.advance(1000);
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
    expect(h.remote.calls.filter((c) => c.method === 'start')).toHaveLength(1);
  });

  it('a plane killed between writing the envelope and the start call starts the job once on restart', async () => {
    h = await harness({ delivery: { stream: true, push: false } });
    // The crash: the remote never hears of it (start fails), and the process dies before any retry.
    h.remote.failNext('start');
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    expect(envelope.remoteId).toBeNull();
    await h.restart();
    await h.advance(70_000);
    const after = await h.plane.get(T, envelope.id);
    expect(after.remoteId).not.toBeNull();
    expect(h.remote.jobsByMessageId(envelope.messageId!)).toHaveLength(1);
    h.remote.set(after.remoteId!, 'succeeded');
    await h.advance(65_000);
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
  });

  it('a restarted plane reconciles at once even while its dead predecessor still holds the lease', async () => {
    const opts = { delivery: { stream: false, push: true, poll: false }, publicUrl: 'http://127.0.0.1:9' };
    h = await harness(opts);
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    h.remote.set(envelope.remoteId!, 'succeeded'); // the push is lost
    await h.store.acquireLease('reconcile:fake', 'dead-plane', h.clock.now(), 600_000);
    await h.restart();
    await h.advance(1000);
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
  });

  // A watcher left running would hold stop() for ever: the bound below fails the test by name instead.
  for (const mode of ['stream', 'poll'] as const)
    it(`stop() ends every watcher and loop promptly (${mode})`, async () => {
      h = await harness({ delivery: { stream: mode === 'stream', push: false, poll: mode === 'poll' } });
      for (let i = 0; i < 3; i++)
        await h.plane.create({ tenant: T, target: 'fake', input: i }, { wait: 'started' });
      await h.settle();
      expect(Object.values(h.plane.watcherStates())).toContain(mode === 'stream' ? 'attached' : 'polling');
      await h.plane.stop();
      expect(h.plane.watcherStates()).toEqual({});
    }, 10_000);
});

describe('acceptance', () => {
  it('records accepted or rejected with reasons apart from the task state', async () => {
    h = await harness({ delivery: { stream: true, push: false } });
    const schema = { type: 'object', required: ['text'], properties: { text: { type: 'string' } } };
    const good = await h.plane.create(
      { tenant: T, target: 'fake', input: 1, acceptance: { schema } },
      { wait: 'started' },
    );
    const bad = await h.plane.create(
      { tenant: T, target: 'fake', input: 2, acceptance: { schema } },
      { wait: 'started' },
    );
    await h.settle();
    h.remote.set(good.envelope.remoteId!, 'succeeded', {
      artifacts: [{ artifactId: 'a', content: { text: 'ok' } }],
    });
    h.remote.set(bad.envelope.remoteId!, 'succeeded', {
      artifacts: [{ artifactId: 'a', content: { nope: 1 } }],
    });
    await h.settle();
    const g = await h.plane.get(T, good.envelope.id);
    const b = await h.plane.get(T, bad.envelope.id);
    expect([g.state, g.acceptance?.status]).toEqual(['succeeded', 'accepted']);
    expect([b.state, b.acceptance?.status]).toEqual(['succeeded', 'rejected']);
    expect(b.acceptance?.reasons.join(' ')).toContain('text');
  });
});

describe('tenancy', () => {
  it("another tenant's task is not found", async () => {
    h = await harness();
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 1 }, { wait: 'started' });
    await expect(h.plane.get('tenant-b', envelope.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(h.plane.cancel('tenant-b', envelope.id)).rejects.toMatchObject({ code: 'not_found' });
    expect((await h.plane.list('tenant-b')).items).toHaveLength(0);
  });
});

describe('streaming start (one call starts and streams)', () => {
  it('spends one request per task without faults, and reattaches with observe after a drop', async () => {
    h = await harness({ delivery: { stream: true, push: false } }, {}, 1, { startStream: true });
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    expect(envelope.remoteId).not.toBeNull();
    const rid = envelope.remoteId!;
    h.remote.set(rid, 'running');
    await h.settle();
    expect((await h.plane.get(T, envelope.id)).state).toBe('running');
    expect(h.plane.requestsFor(envelope.id)).toBe(1);
    h.remote.dropStreams();
    await h.advance(2_000);
    h.remote.set(rid, 'succeeded');
    await h.advance(65_000);
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
    expect(h.plane.requestsFor(envelope.id)).toBe(2);
    expect(h.remote.calls.map((c) => c.method)).toEqual(['startStream', 'subscribe']);
  });

  it('a streaming start that fails before the first frame is recovered with the same messageId', async () => {
    h = await harness({ delivery: { stream: true, push: false } }, {}, 1, { startStream: true });
    h.remote.failNext('start');
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    expect(envelope.remoteId).toBeNull();
    await h.advance(70_000);
    const after = await h.plane.get(T, envelope.id);
    expect(after.remoteId).not.toBeNull();
    expect(h.remote.jobsByMessageId(envelope.messageId!)).toHaveLength(1);
    h.remote.set(after.remoteId!, 'succeeded');
    await h.advance(65_000);
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
  });
});

describe('leases', () => {
  it('a regular round is skipped while another plane holds the target lease', async () => {
    h = await harness({ delivery: { stream: false, push: false, poll: false } });
    await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    await h.store.acquireLease('reconcile:fake', 'other-plane', h.clock.now(), 3_600_000);
    await h.advance(600_000);
    expect(h.remote.calls.filter((c) => c.method === 'list')).toHaveLength(0);
    await h.store.releaseLease('reconcile:fake', 'other-plane');
    await h.advance(600_000);
    expect(h.remote.calls.filter((c) => c.method === 'list')).toHaveLength(1);
  });
});
