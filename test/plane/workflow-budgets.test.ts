import { afterEach, describe, expect, it } from 'vitest';
import { TaskplaneError } from '../../src/core/errors.ts';
import { harness, type Harness } from './harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T = 'tenant-a';
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as TaskplaneError,
  );

async function reportUsage(h: Harness, envelopeId: string, usage: Record<string, number>) {
  const env = await h.plane.get(T, envelopeId);
  await h.plane.observe(
    envelopeId,
    { ...h.remote.snapshot(h.remote.jobs.get(env.remoteId!)!), usage },
    'poll',
  );
  await h.settle();
}

describe('workflow budgets: task count', () => {
  it('refuses the create past the count, naming the budget; another workflow is not affected', async () => {
    h = await harness();
    await h.plane.setWorkflowBudget(T, 'wf-1', { tasks: 2 });
    for (const input of ['a', 'b'])
      await h.plane.create({ tenant: T, target: 'fake', input, workflowId: 'wf-1' });
    const refused = await refusal(
      h.plane.create({ tenant: T, target: 'fake', input: 'c', workflowId: 'wf-1' }),
    );
    expect(refused?.code).toBe('failed_precondition');
    expect(refused?.field).toBe('budget.tasks');
    expect(refused?.message).toMatch(/workflow budget exhausted: tasks/);
    expect((await h.plane.list(T, { workflowId: 'wf-1' })).items).toHaveLength(2);
    await expect(
      h.plane.create({ tenant: T, target: 'fake', input: 'c', workflowId: 'wf-2' }),
    ).resolves.toMatchObject({ created: true });
    // An idempotent repeat of an admitted task is still answered with it.
    await h.plane.setWorkflowBudget(T, 'wf-3', { tasks: 1 });
    const first = await h.plane.create({
      tenant: T,
      target: 'fake',
      input: 'x',
      workflowId: 'wf-3',
      idempotencyKey: 'k',
    });
    const again = await h.plane.create({
      tenant: T,
      target: 'fake',
      input: 'x',
      workflowId: 'wf-3',
      idempotencyKey: 'k',
    });
    expect(again).toEqual({ envelope: expect.objectContaining({ id: first.envelope.id }), created: false });
  });

  it('parallel creates cannot both take the last place', async () => {
    h = await harness();
    await h.plane.setWorkflowBudget(T, 'wf', { tasks: 1 });
    const results = await Promise.allSettled(
      [1, 2, 3, 4, 5].map((i) => h!.plane.create({ tenant: T, target: 'fake', input: i, workflowId: 'wf' })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect((await h.plane.workflow(T, 'wf')).tasks).toBe(1);
  });

  it("a child task created later joins its parent's workflow and counts against its budget", async () => {
    h = await harness();
    await h.plane.setWorkflowBudget(T, 'wf', { tasks: 2 });
    const { envelope: parent } = await h.plane.create({
      tenant: T,
      target: 'fake',
      input: 'p',
      workflowId: 'wf',
    });
    const { envelope: child } = await h.plane.create({
      tenant: T,
      target: 'fake',
      input: 'c',
      parentId: parent.id,
    });
    expect(child.workflowId).toBe('wf');
    expect(child.parentId).toBe(parent.id);
    const grandchild = await refusal(
      h.plane.create({ tenant: T, target: 'fake', input: 'g', parentId: child.id }),
    );
    expect(grandchild?.field).toBe('budget.tasks');
    // A parent of another tenant is no parent at all.
    const stranger = await refusal(
      h.plane.create({ tenant: 'other', target: 'fake', input: 'x', parentId: parent.id }),
    );
    expect(stranger?.field).toBe('parentId');
  });
});

describe('workflow budgets: usage', () => {
  it('parallel tasks that together pass a usage cap are cancelled when asked, and the overshoot is kept', async () => {
    h = await harness();
    await h.plane.setWorkflowBudget(T, 'wf', { usage: { cents: 100 }, cancelRunning: true });
    const a = (
      await h.plane.create({ tenant: T, target: 'fake', input: 'a', workflowId: 'wf' }, { wait: 'started' })
    ).envelope;
    const b = (
      await h.plane.create({ tenant: T, target: 'fake', input: 'b', workflowId: 'wf' }, { wait: 'started' })
    ).envelope;
    const other = (await h.plane.create({ tenant: T, target: 'fake', input: 'o' }, { wait: 'started' }))
      .envelope;
    await reportUsage(h, a.id, { cents: 60 });
    expect((await h.plane.get(T, a.id)).cancel).toBeNull();
    await reportUsage(h, b.id, { cents: 70 });
    for (const id of [a.id, b.id]) {
      const env = await h.plane.get(T, id);
      expect(env.cancel?.requestedBy).toBe('budget');
      const events = await h.plane.events(T, { afterSeq: 0, envelopeId: id });
      expect(events.find((e) => e.type === 'budget_refused')?.data).toMatchObject({
        action: 'run',
        workflowId: 'wf',
        reason: expect.stringMatching(/usage\.cents \(workflow wf used 130 of 100\)/),
      });
    }
    expect((await h.plane.get(T, other.id)).cancel).toBeNull();
    const view = await h.plane.workflow(T, 'wf');
    expect(view.budget).toMatchObject({
      used: { usage: { cents: 130 }, tasks: 2 },
      overshoot: { 'usage.cents': 30 },
      exhausted: ['usage.cents'],
      exceeded: [{ budget: 'usage.cents', limit: 100, used: 130 }],
    });
    const refused = await refusal(
      h.plane.create({ tenant: T, target: 'fake', input: 'c', workflowId: 'wf' }),
    );
    expect(refused?.field).toBe('budget.usage.cents');
    expect(refused?.message).toMatch(/usage\.cents \(workflow wf used 130 of 100\)/);
  });

  it('without cancelRunning the running tasks go on, and the passing is still recorded', async () => {
    h = await harness();
    await h.plane.setWorkflowBudget(T, 'wf', { usage: { total_tokens: 1000 } });
    const a = (
      await h.plane.create({ tenant: T, target: 'fake', input: 'a', workflowId: 'wf' }, { wait: 'started' })
    ).envelope;
    await reportUsage(h, a.id, { total_tokens: 1500 });
    expect((await h.plane.get(T, a.id)).cancel).toBeNull();
    const budget = (await h.plane.workflow(T, 'wf')).budget!;
    expect(budget.exceeded).toMatchObject([{ budget: 'usage.total_tokens', limit: 1000, used: 1500 }]);
    expect(budget.overshoot).toEqual({ 'usage.total_tokens': 500 });
  });

  it('setting a budget below what a workflow already used records it at once', async () => {
    h = await harness();
    const a = (
      await h.plane.create({ tenant: T, target: 'fake', input: 'a', workflowId: 'wf' }, { wait: 'started' })
    ).envelope;
    await reportUsage(h, a.id, { cents: 40 });
    await h.plane.setWorkflowBudget(T, 'wf', { usage: { cents: 10 }, cancelRunning: true });
    await h.settle();
    expect((await h.plane.get(T, a.id)).cancel?.requestedBy).toBe('budget');
    expect((await h.plane.workflow(T, 'wf')).budget?.exceeded).toHaveLength(1);
  });
});

describe('workflow budgets: wall time', () => {
  it('cancels open tasks at the deadline from the first task, also after a restart, and refuses new ones', async () => {
    h = await harness({ reconcile: { intervalMs: 600_000 } });
    await h.plane.setWorkflowBudget(T, 'wf', { wallTimeMs: 10_000, cancelRunning: true });
    const a = (
      await h.plane.create({ tenant: T, target: 'fake', input: 'a', workflowId: 'wf' }, { wait: 'started' })
    ).envelope;
    await h.advance(4_000);
    await h.restart();
    const b = (
      await h.plane.create({ tenant: T, target: 'fake', input: 'b', workflowId: 'wf' }, { wait: 'started' })
    ).envelope;
    await h.advance(5_000);
    expect((await h.plane.get(T, a.id)).cancel).toBeNull();
    await h.advance(1_500);
    for (const id of [a.id, b.id]) expect((await h.plane.get(T, id)).cancel?.requestedBy).toBe('budget');
    const refused = await refusal(
      h.plane.create({ tenant: T, target: 'fake', input: 'c', workflowId: 'wf' }),
    );
    expect(refused?.field).toBe('budget.wallTimeMs');
  });
});

describe('workflow budgets: input', () => {
  it('names the field of a bad budget', async () => {
    h = await harness();
    const bad = async (body: unknown) => (await refusal(h!.plane.setWorkflowBudget(T, 'wf', body)))?.field;
    expect(await bad({})).toBe('budget');
    expect(await bad({ tasks: 0 })).toBe('tasks');
    expect(await bad({ tasks: 1.5 })).toBe('tasks');
    expect(await bad({ usage: { cents: -1 } })).toBe('usage.cents');
    expect(await bad({ usage: [] })).toBe('usage');
    expect(await bad({ wallTimeMs: 'soon' })).toBe('wallTimeMs');
    expect(await bad({ tasks: 1, cancelRunning: 'yes' })).toBe('cancelRunning');
    expect(await refusal(h.plane.workflow(T, 'nothing-here'))).toMatchObject({ code: 'not_found' });
  });
});

describe('cost per accepted completion', () => {
  it('is everything the workflow spent over the tasks accepted, per target and in all', async () => {
    h = await harness();
    const made = [];
    for (const input of ['a', 'b', 'c'])
      made.push(
        (
          await h.plane.create(
            {
              tenant: T,
              target: 'fake',
              input,
              workflowId: 'wf',
              acceptance: { schema: { type: 'object' } },
            },
            { wait: 'started' },
          )
        ).envelope,
      );
    for (const [i, env] of made.entries()) {
      const job = h.remote.jobs.get(env.remoteId!)!;
      await h.plane.observe(
        env.id,
        {
          ...h.remote.snapshot(job),
          state: 'succeeded',
          nativeState: 'COMPLETED',
          remoteVersion: job.ts + 1,
          stateTimestamp: job.ts + 1,
          result: i === 2 ? 'not an object' : { ok: true },
          usage: { cents: 10 * (i + 1) },
        },
        'poll',
      );
    }
    await h.settle();
    const view = await h.plane.workflow(T, 'wf');
    expect(view).toMatchObject({ tasks: 3, accepted: 2, rejected: 1, usage: { cents: 60 } });
    expect(view.costPerAcceptedCompletion).toEqual({ cents: 30 });
    expect(view.targets).toMatchObject([
      { target: 'fake', accepted: 2, costPerAcceptedCompletion: { cents: 30 } },
    ]);
    expect(view.budget).toBeNull();
  });
});
