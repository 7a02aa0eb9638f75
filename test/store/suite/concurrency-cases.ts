import { expect } from 'vitest';
import { VersionConflictError } from '../../../src/core/errors.ts';
import type { EnvelopeEvent } from '../../../src/core/envelope.ts';
import type { AgentTaskStore, ChangeNotice, EnvelopeStore } from '../../../src/store/store.ts';
import type { SuiteContext } from '../store-suite.ts';
import { ALICE, event, makeEnvelope, makeTask } from './fixtures.ts';

export function envelopeConcurrencyCases({ store, peer, test }: SuiteContext<EnvelopeStore>): void {
  test('a reader tailing listEvents while two instances write concurrently sees every event once', async () => {
    const other = await peer();
    const writers = [store(), other];
    const expected = new Set<string>();
    let writing = true;
    const seen: EnvelopeEvent[] = [];
    const tail = (async () => {
      let afterSeq = 0;
      for (;;) {
        const done = !writing; // read the flag before the page: the final page is taken after all commits
        const page = await store().listEvents({ afterSeq, limit: 50 });
        seen.push(...page);
        afterSeq = page[page.length - 1]?.seq ?? afterSeq;
        if (done && page.length === 0) return;
        // Yield to I/O so writers progress (SQLite reads are synchronous); not a timed sleep.
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        const writer = writers[w % 2]!;
        for (let i = 0; i < 10; i++) {
          const env = makeEnvelope({ id: `race-${w}-${i}` });
          expected.add(`${env.id}:created`).add(`${env.id}:updated`);
          await writer.createEnvelope(env, [event(env, 'created')]);
          await writer.updateEnvelope({ ...env, state: 'running' }, 1, [event(env, 'updated')]);
        }
      }),
    );
    writing = false;
    await tail;
    const keys = seen.map((e) => `${e.envelopeId}:${e.type}`);
    expect(new Set(keys)).toEqual(expected);
    expect(keys).toHaveLength(expected.size);
    const seqs = seen.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  });

  test('a stale write among concurrent writes fails alone; its neighbours commit', async () => {
    const envs = [makeEnvelope(), makeEnvelope(), makeEnvelope()];
    for (const env of envs) await store().createEnvelope(env, []);
    const [a, b, c] = envs as [(typeof envs)[0], (typeof envs)[0], (typeof envs)[0]];
    const results = await Promise.allSettled([
      store().updateEnvelope({ ...a, state: 'running' }, 1, [event(a, 'ok-a')]),
      store().updateEnvelope({ ...b, state: 'running' }, 7, [event(b, 'stale-b')]),
      store().updateEnvelope({ ...c, state: 'running' }, 1, [event(c, 'ok-c')]),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(VersionConflictError);
    expect((await store().listEvents({ afterSeq: 0 })).map((e) => e.type)).toEqual(['ok-a', 'ok-c']);
    expect((await store().getEnvelope(b.id))!.version).toBe(1);
  });

  test('a write failing on a constraint among concurrent writes fails alone with conflict', async () => {
    const taken = makeEnvelope();
    await store().createEnvelope(taken, []);
    const y = makeEnvelope();
    const z = makeEnvelope();
    const results = await Promise.allSettled([
      store().createEnvelope(y, [event(y, 'created-y')]),
      store().createEnvelope({ ...makeEnvelope(), id: taken.id }, [event(taken, 'created-dup')]),
      store().createEnvelope(z, [event(z, 'created-z')]),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: 'conflict' });
    expect((await store().listEvents({ afterSeq: 0 })).map((e) => e.type)).toEqual([
      'created-y',
      'created-z',
    ]);
  });

  test('concurrent creates with one idempotency key create one envelope', async () => {
    const other = await peer();
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => {
        const env = makeEnvelope({ idempotencyKey: 'once' });
        return (i % 2 ? other : store()).createEnvelope(env, [event(env, 'created')]);
      }),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.envelope.id)).size).toBe(1);
    expect(await store().listEvents({ afterSeq: 0 })).toHaveLength(1);
  });

  test('a closed store refuses writes with unavailable', async () => {
    const other = await peer();
    if (other === store()) return; // one shared object: closing it would end the test's store too
    await other.close();
    await expect(other.putSettingIfAbsent('k', 'v')).rejects.toMatchObject({ code: 'unavailable' });
  });
}

export function agentTaskConcurrencyCases({ store, peer, test }: SuiteContext<AgentTaskStore>): void {
  test('agent-task writes issued together: a stale update and a taken id fail alone, neighbours commit once', async () => {
    // On SQLite these share one transaction; a failing write makes the batch run again with a savepoint
    // per write (write-batcher.ts), so this also checks that nothing of the first run leaks out.
    const status = (taskId: string, state: string) => ({
      taskId,
      at: 2000,
      payload: { statusUpdate: { taskId, status: { state } } },
    });
    const [updated, stale, taken] = [makeTask(), makeTask(), makeTask()];
    for (const [i, t] of [updated, stale, taken].entries())
      await store().createAgentTask(t, `m-${i}`, [], []);
    const notices: ChangeNotice[] = [];
    const off = store().onChange((n) => notices.push(n));
    const fresh = [makeTask(), makeTask()];
    const results = await Promise.allSettled([
      store().createAgentTask(fresh[0]!, 'm-a', [status(fresh[0]!.id, 'TASK_STATE_SUBMITTED')], []),
      store().updateAgentTask(
        { ...updated, state: 'TASK_STATE_WORKING' },
        1,
        [status(updated.id, 'TASK_STATE_WORKING'), status(updated.id, 'TASK_STATE_COMPLETED')],
        [],
      ),
      store().updateAgentTask({ ...stale, state: 'TASK_STATE_FAILED' }, 7, [status(stale.id, 'STALE')], []),
      store().createAgentTask({ ...makeTask(), id: taken.id }, 'm-b', [status(taken.id, 'TAKEN')], []),
      store().createAgentTask(fresh[1]!, 'm-c', [status(fresh[1]!.id, 'TASK_STATE_SUBMITTED')], []),
    ]);
    off();
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'rejected',
      'fulfilled',
    ]);
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(VersionConflictError);
    expect((results[3] as PromiseRejectedResult).reason).toMatchObject({ code: 'conflict' });
    // The failed writes changed nothing: no event, no version, the messageId of the taken id is free.
    expect(await store().listAgentTaskEvents(stale.id, 0)).toEqual([]);
    expect(await store().listAgentTaskEvents(taken.id, 0)).toEqual([]);
    expect((await store().getAgentTask(stale.id))!.version).toBe(1);
    expect(await store().findAgentTaskByMessageId(ALICE, 'm-b')).toBeUndefined();
    // The neighbours committed, and what they returned is what is stored.
    const update = (
      results[1] as PromiseFulfilledResult<Awaited<ReturnType<AgentTaskStore['updateAgentTask']>>>
    ).value;
    expect(update.task).toEqual(await store().getAgentTask(updated.id));
    expect(update.events).toEqual(await store().listAgentTaskEvents(updated.id, 0));
    expect(await store().findAgentTaskByMessageId(ALICE, 'm-c')).toBe(fresh[1]!.id);
    for (const t of fresh) expect(await store().listAgentTaskEvents(t.id, 0)).toHaveLength(1);
    // One notice per committed write with events, carrying its last seq; none for the failed ones.
    const lastSeq = async (id: string) => (await store().listAgentTaskEvents(id, 0)).at(-1)!.seq;
    const expected = [];
    for (const t of [fresh[0]!, updated, fresh[1]!]) {
      expected.push({ kind: 'agentTask', id: t.id, seq: await lastSeq(t.id) });
    }
    const bySeq = (x: { seq: number }, y: { seq: number }) => x.seq - y.seq;
    expect(notices.sort(bySeq)).toEqual(expected.sort(bySeq));
  });

  test('concurrent SendMessage retries with one (owner, messageId) create one task', async () => {
    const other = await peer();
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 ? other : store()).createAgentTask(makeTask(), 'm-once', [], []),
      ),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.task.id)).size).toBe(1);
    expect((await store().listAgentTasks(ALICE)).totalSize).toBe(1);
  });
}
