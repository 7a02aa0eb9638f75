import { afterEach, describe, expect, it } from 'vitest';
import { TaskplaneError } from '../../src/core/errors.ts';
import type { Envelope } from '../../src/core/envelope.ts';
import { harness, type Harness } from './harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T = 'tenant-a';

describe('timeouts act on their own timer', () => {
  it('cancels at createdAt + timeoutMs, long before the next reconciliation round', async () => {
    h = await harness({ reconcile: { intervalMs: 600_000 } });
    const { envelope } = await h.plane.create(
      { tenant: T, target: 'fake', input: 'w', timeoutMs: 5_000 },
      { wait: 'started' },
    );
    await h.advance(4_000);
    expect((await h.plane.get(T, envelope.id)).state).toBe('accepted');
    await h.advance(1_500);
    const after = await h.plane.get(T, envelope.id);
    expect(after.state).toBe('cancel_requested');
    expect(after.cancel?.requestedBy).toBe('timeout');
    expect(h.remote.calls.filter((c) => c.method === 'cancel')).toHaveLength(1);
  });

  it('a timer is re-armed from the envelope after a plane restart, and never fires for a finished job', async () => {
    h = await harness({ reconcile: { intervalMs: 600_000 } });
    const { envelope: slow } = await h.plane.create(
      {
        tenant: T,
        target: 'fake',
        input: 'slow',
        timeoutMs: 10_000,
      },
      { wait: 'started' },
    );
    const { envelope: quick } = await h.plane.create(
      {
        tenant: T,
        target: 'fake',
        input: 'quick',
        timeoutMs: 10_000,
      },
      { wait: 'started' },
    );
    h.remote.set(quick.remoteId!, 'succeeded');
    await h.advance(2_000);
    await h.restart();
    await h.advance(9_000);
    expect((await h.plane.get(T, slow.id)).cancel?.requestedBy).toBe('timeout');
    expect((await h.plane.get(T, quick.id)).cancel).toBeNull();
    expect(h.remote.calls.filter((c) => c.method === 'cancel')).toHaveLength(1);
  });
});

describe('budgets', () => {
  it('a job whose budget is used up may not be answered or resubmitted, and the envelope says why', async () => {
    // No list: reconciliation reads every job not heard of within its interval.
    h = await harness({ delivery: { stream: false, push: false, poll: false } }, { list: false });
    const { envelope } = await h.plane.create(
      {
        tenant: T,
        target: 'fake',
        input: 'w',
        budget: { limit: 100, unit: 'tokens' },
      },
      { wait: 'started' },
    );
    const rid = envelope.remoteId!;
    h.remote.set(rid, 'waiting_for_input', { inputRequest: { requestId: 'q1', prompt: 'go on?' } });
    await h.plane.observe(
      envelope.id,
      { ...h.remote.snapshot(h.remote.jobs.get(rid)!), usage: { tokens: 120 } },
      'poll',
    );
    const refused = await h.plane
      .answer(T, envelope.id, { requestId: 'q1', value: 'yes' })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TaskplaneError);
    expect((refused as TaskplaneError).code).toBe('failed_precondition');
    expect((refused as TaskplaneError).message).toMatch(/budget exhausted: used 120 of 100 tokens/);
    expect(h.remote.calls.filter((c) => c.method === 'answer')).toHaveLength(0);
    const events = await h.plane.events(T, { afterSeq: 0, envelopeId: envelope.id });
    expect(events.find((e) => e.type === 'budget_refused')?.data).toMatchObject({ action: 'answer' });
    expect((await h.plane.get(T, envelope.id)).pendingInput?.answeredAt).toBeNull();

    // The agent forgets the job: resubmitting would be new spend, so it is escalated with the reason.
    h.remote.forget();
    // A round's interval after the last word from the job (the observation above).
    await h.advance(600_000);
    await h.plane.reconcileNow();
    const lost = await h.plane.get(T, envelope.id);
    expect(lost.state).toBe('lost');
    expect(lost.reconciliation?.note).toMatch(/not resubmitted: job budget exhausted/);
    expect(h.remote.calls.filter((c) => c.method === 'start')).toHaveLength(1);
  });

  it('a tenant whose budget is used up cannot start new jobs; other tenants can', async () => {
    h = await harness({ budgets: { tenants: { [T]: { limit: 50, unit: 'tokens' } } } });
    const { envelope } = await h.plane.create(
      { tenant: T, target: 'fake', input: 'first' },
      { wait: 'started' },
    );
    await h.plane.observe(
      envelope.id,
      { ...h.remote.snapshot(h.remote.jobs.get(envelope.remoteId!)!), usage: { tokens: 50 } },
      'poll',
    );
    const refused = await h.plane
      .create({ tenant: T, target: 'fake', input: 'second' }, { wait: 'started' })
      .catch((e: unknown) => e);
    expect((refused as TaskplaneError).code).toBe('failed_precondition');
    expect((refused as TaskplaneError).field).toBe('budget');
    expect((await h.plane.list(T)).items).toHaveLength(1);
    await expect(
      h.plane.create({ tenant: 'other', target: 'fake', input: 'fine' }, { wait: 'started' }),
    ).resolves.toMatchObject({
      created: true,
    });
  });
});

describe('budgets.cancelRunning (failure matrix row 11)', () => {
  it('parallel jobs that together pass the tenant budget are cancelled while running; without the option they run on', async () => {
    for (const cancelRunning of [true, false]) {
      h = await harness({ budgets: { tenants: { [T]: { limit: 100, unit: 'usd_micros' } }, cancelRunning } });
      const jobs: Envelope[] = [];
      for (const input of ['a', 'b', 'c'])
        jobs.push((await h.plane.create({ tenant: T, target: 'fake', input }, { wait: 'started' })).envelope);
      h.remote.set(jobs[0]!.remoteId!, 'running');
      h.remote.set(jobs[1]!.remoteId!, 'running');
      const report = (i: number, used: number) =>
        h!.plane.observe(
          jobs[i]!.id,
          { ...h!.remote.snapshot(h!.remote.jobs.get(jobs[i]!.remoteId!)!), usage: { usd_micros: used } },
          'poll',
        );
      // Each alone is within the budget; together they pass it.
      await report(0, 60);
      await h.settle();
      expect((await h.plane.get(T, jobs[0]!.id)).state).not.toBe('cancel_requested');
      await report(1, 50);
      await h.settle();
      const states = await Promise.all(jobs.map(async (j) => (await h!.plane.get(T, j.id)).state));
      if (cancelRunning) {
        expect(states.every((s) => s === 'cancel_requested' || s === 'cancelled')).toBe(true);
        expect(h.remote.calls.filter((c) => c.method === 'cancel')).toHaveLength(3);
        const events = await h.plane.events(T, { afterSeq: 0, envelopeId: jobs[2]!.id });
        expect(events.find((e) => e.type === 'budget_refused')?.data).toMatchObject({
          action: 'run',
          reason: 'tenant budget exhausted: used 110 of 100 usd_micros',
        });
        expect(events.find((e) => e.type === 'cancel_requested')?.data).toMatchObject({ actor: 'budget' });
      } else {
        expect(states.some((s) => s === 'cancel_requested' || s === 'cancelled')).toBe(false);
        expect(h.remote.calls.filter((c) => c.method === 'cancel')).toHaveLength(0);
      }
      await h.close();
      h = undefined;
    }
  });

  it("a job's own budget cancels just that job once its usage passes it", async () => {
    h = await harness({ budgets: { cancelRunning: true } });
    const { envelope } = await h.plane.create(
      { tenant: T, target: 'fake', input: 'x', budget: { limit: 10, unit: 'tokens' } },
      { wait: 'started' },
    );
    const { envelope: other } = await h.plane.create(
      { tenant: T, target: 'fake', input: 'y' },
      { wait: 'started' },
    );
    await h.plane.observe(
      envelope.id,
      { ...h.remote.snapshot(h.remote.jobs.get(envelope.remoteId!)!), usage: { tokens: 12 } },
      'poll',
    );
    await h.settle();
    expect(['cancel_requested', 'cancelled']).toContain((await h.plane.get(T, envelope.id)).state);
    expect(['cancel_requested', 'cancelled']).not.toContain((await h.plane.get(T, other.id)).state);
  });
});
