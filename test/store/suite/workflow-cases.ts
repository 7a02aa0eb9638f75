import { expect } from 'vitest';
import { TaskplaneError, VersionConflictError } from '../../../src/core/errors.ts';
import type { EnvelopeStore, WorkflowBudgetRecord } from '../../../src/store/store.ts';
import type { SuiteContext } from '../store-suite.ts';
import { event, makeEnvelope, uid } from './fixtures.ts';

function budget(workflowId: string, overrides: Partial<WorkflowBudgetRecord> = {}): WorkflowBudgetRecord {
  return {
    tenant: 't1',
    workflowId,
    limits: { tasks: 2, usage: { cents: 100 } },
    cancelRunning: false,
    exceeded: [],
    createdAt: 1000,
    updatedAt: 1000,
    version: 0,
    ...overrides,
  };
}

/** Workflows: the workflowId filter, the guarded create, usage sums and budget records. */
export function workflowCases({ store, peer, test }: SuiteContext<EnvelopeStore>): void {
  test('lists the envelopes of one workflow of one tenant, paged', async () => {
    const wf = uid('wf');
    const mine = [1, 2, 3].map((i) => makeEnvelope({ workflowId: wf, updatedAt: 1000 + i }));
    const others = [
      makeEnvelope({ workflowId: uid('wf') }),
      makeEnvelope({ workflowId: null }),
      makeEnvelope({ workflowId: wf, tenant: 't2' }),
    ];
    for (const e of [...mine, ...others]) await store().createEnvelope(e, []);
    const first = await store().listEnvelopes({ tenant: 't1', workflowId: wf, limit: 2 });
    expect(first.items.map((e) => e.id)).toEqual([mine[2]!.id, mine[1]!.id]);
    const second = await store().listEnvelopes({
      tenant: 't1',
      workflowId: wf,
      limit: 2,
      cursor: first.nextCursor!,
    });
    expect(second.items.map((e) => e.id)).toEqual([mine[0]!.id]);
    expect(second.nextCursor).toBeUndefined();
  });

  test('a guarded create refuses past the workflow task limit and writes nothing', async () => {
    const wf = uid('wf');
    const a = makeEnvelope({ workflowId: wf, idempotencyKey: uid('k') });
    expect((await store().createEnvelope(a, [event(a, 'created')], { workflowTaskLimit: 1 })).created).toBe(
      true,
    );
    const b = makeEnvelope({ workflowId: wf });
    const refused = await store()
      .createEnvelope(b, [event(b, 'created')], { workflowTaskLimit: 1 })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TaskplaneError);
    expect((refused as TaskplaneError).code).toBe('failed_precondition');
    expect((refused as TaskplaneError).field).toBe('budget.tasks');
    expect(await store().getEnvelope(b.id)).toBeUndefined();
    expect(await store().listEvents({ afterSeq: 0, envelopeId: b.id })).toEqual([]);
    // The idempotent repeat of the one admitted still gets its envelope.
    const again = makeEnvelope({ workflowId: wf, idempotencyKey: a.idempotencyKey });
    const repeat = await store().createEnvelope(again, [], { workflowTaskLimit: 1 });
    expect(repeat).toMatchObject({ created: false, envelope: { id: a.id } });
    // Another tenant's workflow of the same name is its own.
    const other = makeEnvelope({ workflowId: wf, tenant: 't2' });
    expect((await store().createEnvelope(other, [], { workflowTaskLimit: 1 })).created).toBe(true);
  });

  test('two stores creating in one workflow at once: a task limit of 1 admits exactly one', async () => {
    const wf = uid('wf');
    const other = await peer();
    const results = await Promise.allSettled(
      [store(), other, store(), other].map((s) =>
        s.createEnvelope(makeEnvelope({ workflowId: wf }), [], { workflowTaskLimit: 1 }),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect((await store().listEnvelopes({ tenant: 't1', workflowId: wf })).items).toHaveLength(1);
  });

  test('lists only the envelopes whose verifier call is due', async () => {
    const due = makeEnvelope({
      acceptance: { status: 'pending', reasons: [], verification: { dueAt: 5000, attempts: 1 } },
    });
    const done = makeEnvelope({
      acceptance: { status: 'accepted', reasons: [], verification: { dueAt: null, attempts: 1 } },
    });
    for (const e of [due, done, makeEnvelope()]) await store().createEnvelope(e, []);
    const page = await store().listEnvelopes({ verificationDue: true });
    expect(page.items.map((e) => e.id)).toEqual([due.id]);
    // Cleared by an update of the document, as the plane clears it once the verifier answered.
    const stored = (await store().getEnvelope(due.id))!;
    await store().updateEnvelope(
      { ...stored, acceptance: { ...stored.acceptance!, verification: { dueAt: null, attempts: 2 } } },
      stored.version,
      [],
    );
    expect((await store().listEnvelopes({ verificationDue: true })).items).toEqual([]);
  });

  test('sums usage and acceptance per target over a workflow', async () => {
    const wf = uid('wf');
    const made = [
      makeEnvelope({
        workflowId: wf,
        target: 'a',
        state: 'succeeded',
        usage: { cents: 30, total_tokens: 100 },
        acceptance: { status: 'accepted', reasons: [] },
        createdAt: 900,
      }),
      makeEnvelope({
        workflowId: wf,
        target: 'a',
        state: 'succeeded',
        usage: { cents: 20 },
        acceptance: { status: 'rejected', reasons: ['no'] },
        createdAt: 1200,
      }),
      makeEnvelope({ workflowId: wf, target: 'b', state: 'running', usage: { cents: 5 } }),
      makeEnvelope({ workflowId: wf, target: 'b', state: 'succeeded', usage: null }),
      makeEnvelope({ workflowId: uid('wf'), target: 'a', usage: { cents: 1000 } }),
    ];
    for (const e of made) await store().createEnvelope(e, []);
    const sums = await store().summarizeUsage({ tenant: 't1', workflowId: wf });
    expect(sums).toEqual([
      {
        target: 'a',
        tasks: 2,
        finished: 2,
        accepted: 1,
        rejected: 1,
        succeededUnchecked: 0,
        usage: { cents: 50, total_tokens: 100 },
        firstCreatedAt: 900,
      },
      {
        target: 'b',
        tasks: 2,
        finished: 1,
        accepted: 0,
        rejected: 0,
        succeededUnchecked: 1,
        usage: { cents: 5 },
        firstCreatedAt: 1000,
      },
    ]);
  });

  test('a workflow budget is inserted once and replaced only at its version', async () => {
    const wf = uid('wf');
    expect(await store().getWorkflowBudget('t1', wf)).toBeUndefined();
    const first = await store().putWorkflowBudget(budget(wf), null);
    expect(first.version).toBe(1);
    await expect(store().putWorkflowBudget(budget(wf), null)).rejects.toBeInstanceOf(VersionConflictError);
    const second = await store().putWorkflowBudget(
      budget(wf, { limits: { tasks: 5 }, exceeded: [{ budget: 'tasks', limit: 5, used: 5, at: 2000 }] }),
      1,
    );
    expect(second.version).toBe(2);
    await expect(store().putWorkflowBudget(budget(wf), 1)).rejects.toBeInstanceOf(VersionConflictError);
    expect(await store().getWorkflowBudget('t1', wf)).toEqual(second);
    expect(await store().getWorkflowBudget('t2', wf)).toBeUndefined();
  });
}
