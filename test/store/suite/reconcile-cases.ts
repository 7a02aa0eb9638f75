import { expect } from 'vitest';
import type { Envelope } from '../../../src/core/envelope.ts';
import { isReconcileDue } from '../../../src/store/store-query.ts';
import type { EnvelopeStore, ReconcileDueQuery } from '../../../src/store/store.ts';
import type { SuiteContext } from '../store-suite.ts';
import { event, makeEnvelope } from './fixtures.ts';

/**
 * The reads a reconciliation round makes instead of loading every open job (plane/reconciler.ts): the
 * same answers on every backend, the SQL ones from migration 12's generated columns and indexes.
 */
export function reconcileCases({ store, test }: SuiteContext<EnvelopeStore>): void {
  const put = async (overrides: Partial<Envelope>): Promise<Envelope> => {
    const env = makeEnvelope(overrides);
    await store().createEnvelope(env, [event(env, 'created')]);
    return env;
  };
  const ids = (envs: readonly Envelope[]) => envs.map((e) => e.id).sort();

  test('openTargets and openJobsOfTarget see only open jobs: targets, tenants, the oldest creation', async () => {
    await put({ target: 'a', tenant: 't2', remoteId: 'r1', createdAt: 5_000 });
    await put({ target: 'a', tenant: 't1', remoteId: 'r2', createdAt: 3_000, state: 'running' });
    await put({ target: 'a', tenant: 't3', remoteId: 'r3', createdAt: 1_000, state: 'succeeded' });
    await put({ target: 'b', tenant: 't1', remoteId: null, createdAt: 9_000, state: 'unknown' });
    await put({ target: 'c', tenant: 't1', remoteId: 'r4', createdAt: 1_000, state: 'failed' });
    expect((await store().openTargets()).sort()).toEqual(['a', 'b']);
    const a = await store().openJobsOfTarget('a');
    expect({ ...a, tenants: [...a.tenants].sort() }).toEqual({
      tenants: ['t1', 't2'],
      oldestCreatedAt: 3_000,
    });
    expect(await store().openJobsOfTarget('b')).toEqual({ tenants: ['t1'], oldestCreatedAt: 9_000 });
    expect(await store().openJobsOfTarget('c')).toEqual({ tenants: [], oldestCreatedAt: null });
  });

  test('findOpenEnvelopesByRemote matches open jobs of the target by remote id, unstarted ones by context', async () => {
    const r1 = await put({ target: 'a', remoteId: 'r1', contextId: 'c9' });
    const r2 = await put({ target: 'a', remoteId: 'r2', state: 'waiting_for_input' });
    await put({ target: 'a', remoteId: 'r3', state: 'succeeded' });
    await put({ target: 'b', remoteId: 'r4' });
    const unstarted = await put({ target: 'a', remoteId: null, contextId: 'c1' });
    await put({ target: 'a', remoteId: null, contextId: 'c2', state: 'failed' });
    const found = await store().findOpenEnvelopesByRemote(
      'a',
      ['r1', 'r2', 'r3', 'r4', 'nope'],
      ['c1', 'c2', 'c9'],
    );
    expect(ids(found)).toEqual(ids([r1, r2, unstarted]));
    expect(found.find((e) => e.id === r2.id)).toEqual({ ...r2, version: 1 });
    expect(await store().findOpenEnvelopesByRemote('a', [], [])).toEqual([]);
    const many = Array.from({ length: 501 }, (_, i) => `r${i}`);
    await expect(store().findOpenEnvelopesByRemote('a', many, [])).rejects.toMatchObject({
      code: 'invalid_argument',
    });
  });

  test('listReconcileDue returns the open jobs whose own deadlines have come, and default-duration orphans', async () => {
    const q: ReconcileDueQuery = { now: 100_000, defaultOrphanCreatedBefore: 50_000 };
    const long = 1_000_000_000;
    const cancel = (acknowledgedAt: number | null) => ({
      requestedAt: 91_000,
      requestedBy: null,
      acknowledgedAt,
      outcome: null,
      pending: acknowledgedAt === null ? ('delivery' as const) : ('outcome' as const),
    });
    const ask = { requestId: 'q1', prompt: 'ok?', askedAt: 91_000 };
    const answer = { messageId: 'm1', value: 'yes' };
    const due = [
      // Started long ago, states no expected duration: the configured default makes it an orphan.
      await put({ remoteId: 'r1', createdAt: 40_000, updatedAt: 100 }),
      // Its own expected duration has passed.
      await put({ remoteId: 'r2', createdAt: 90_000, expectedDurationMs: 5_000, updatedAt: 200 }),
      // Its timeout has passed.
      await put({
        remoteId: 'r3',
        createdAt: 90_000,
        timeoutMs: 5_000,
        expectedDurationMs: long,
        updatedAt: 300,
      }),
      // A cancel the remote has not acknowledged.
      await put({
        remoteId: 'r4',
        createdAt: 90_000,
        state: 'cancel_requested',
        cancel: cancel(null),
        expectedDurationMs: long,
        updatedAt: 400,
      }),
      // A start that has not answered.
      await put({ remoteId: null, createdAt: 99_000, updatedAt: 500 }),
      // A recorded answer (maybe in doubt), on the only request or on one of several.
      await put({
        remoteId: 'r6',
        createdAt: 90_000,
        state: 'waiting_for_input',
        pendingInput: { ...ask, answeredAt: 95_000, answer },
        expectedDurationMs: long,
        updatedAt: 600,
      }),
      await put({
        remoteId: 'r7',
        createdAt: 90_000,
        state: 'waiting_for_input',
        pendingInput: {
          ...ask,
          answeredAt: null,
          requests: [
            { ...ask, answeredAt: null },
            { ...ask, requestId: 'q2', answeredAt: 96_000, answer },
          ],
        },
        expectedDurationMs: long,
        updatedAt: 700,
      }),
    ];
    const quiet = [
      // Running within every deadline.
      await put({ remoteId: 'q1', createdAt: 90_000 }),
      // Long ago, but it says it runs longer.
      await put({ remoteId: 'q2', createdAt: 40_000, expectedDurationMs: long }),
      // Timed out, but its cancel is acknowledged: it waits for the remote's final word.
      await put({
        remoteId: 'q3',
        createdAt: 90_000,
        timeoutMs: 5_000,
        state: 'cancel_requested',
        cancel: cancel(92_000),
        expectedDurationMs: long,
      }),
      // Waiting for an answer nobody gave yet; a schema that names the field changes nothing.
      await put({
        remoteId: 'q4',
        createdAt: 90_000,
        state: 'waiting_for_input',
        pendingInput: {
          ...ask,
          answeredAt: null,
          schema: { properties: { answeredAt: { type: 'number' } } },
        },
        expectedDurationMs: long,
      }),
      // Finished, and another target's.
      await put({ remoteId: 'q5', createdAt: 1_000, timeoutMs: 1, state: 'succeeded' }),
      await put({ remoteId: 'q6', createdAt: 1_000, target: 'agent-b' }),
    ];
    for (const env of [...due, ...quiet])
      expect(env.target !== 'agent-a' ? false : isReconcileDue(env, q)).toBe(due.includes(env));
    const listed = await store().listReconcileDue('agent-a', q);
    expect(listed.map((e) => e.id)).toEqual(due.map((e) => e.id));
    expect(listed[1]).toEqual({ ...due[1], version: 1 });

    // The deadlines follow the document: a job that ends leaves, one whose answer is recorded joins.
    const ended = { ...due[0]!, state: 'succeeded' as const, updatedAt: 800 };
    await store().updateEnvelope(ended, 1, []);
    const answered = {
      ...quiet[3]!,
      pendingInput: { ...quiet[3]!.pendingInput!, answeredAt: 97_000, answer },
      updatedAt: 900,
    };
    await store().updateEnvelope(answered, 1, []);
    expect((await store().listReconcileDue('agent-a', q)).map((e) => e.id)).toEqual([
      ...due.slice(1).map((e) => e.id),
      answered.id,
    ]);
  });
}
