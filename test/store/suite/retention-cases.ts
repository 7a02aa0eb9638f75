import { expect } from 'vitest';
import type { Envelope } from '../../../src/core/envelope.ts';
import type { AgentTaskStore, EnvelopeStore } from '../../../src/store/store.ts';
import type { SuiteContext } from '../store-suite.ts';
import { ALICE, event, makeEnvelope, makeTask, outboxRow } from './fixtures.ts';

/** A finished envelope kept until `retentionUntil` (what the plane writes when a job ends). */
function finished(retentionUntil: number | null, overrides: Partial<Envelope> = {}): Envelope {
  return makeEnvelope({ state: 'succeeded', retentionUntil, updatedAt: 2000, ...overrides });
}

export function envelopeRetentionCases({ store, peer, test }: SuiteContext<EnvelopeStore>): void {
  test('purgeEnvelopes removes only terminal envelopes past retentionUntil, with their events and deliveries', async () => {
    const s = store();
    const due = finished(5000, { idempotencyKey: 'k-due' });
    const later = finished(9000);
    const open = makeEnvelope({ state: 'running', retentionUntil: 1000 });
    const kept = finished(null);
    for (const e of [due, later, open, kept]) {
      await s.createEnvelope(e, [event(e, 'created'), event(e, 'state_changed')]);
      await s.recordDelivery({ source: 'push', deliveryId: `d-${e.id}`, envelopeId: e.id, receivedAt: 1 });
    }
    const expired = await s.listExpiredEnvelopes(6000, 10);
    expect(expired).toEqual([{ id: due.id, tenant: due.tenant, retentionUntil: 5000 }]);
    // Ids that are not due, open, kept for ever or unknown are passed over, whatever the caller asks.
    const gone = await s.purgeEnvelopes([due.id, later.id, open.id, kept.id, 'tsk_nope'], 6000);
    expect(gone).toEqual([due.id]);
    expect(await s.getEnvelope(due.id)).toBeUndefined();
    expect(await s.findEnvelopeByIdempotencyKey(due.tenant, 'k-due')).toBeUndefined();
    expect(await s.listEvents({ afterSeq: 0, envelopeId: due.id })).toEqual([]);
    for (const e of [later, open, kept]) {
      expect((await s.getEnvelope(e.id))?.id).toBe(e.id);
      expect(await s.listEvents({ afterSeq: 0, envelopeId: e.id })).toHaveLength(2);
      // Their delivery records stay: a repeat is still a duplicate.
      expect(
        await s.recordDelivery({ source: 'push', deliveryId: `d-${e.id}`, envelopeId: e.id, receivedAt: 2 }),
      ).toBe(false);
    }
    // The purged envelope's delivery record went with it.
    expect(
      await s.recordDelivery({
        source: 'push',
        deliveryId: `d-${due.id}`,
        envelopeId: due.id,
        receivedAt: 2,
      }),
    ).toBe(true);
    expect(await s.countEnvelopesByState()).toEqual({ succeeded: 2, running: 1 });
    expect(await s.purgeEnvelopes([due.id], 6000)).toEqual([]);
  });

  test('listExpiredEnvelopes gives the earliest deadlines first, at most limit: purging goes batch by batch', async () => {
    const s = store();
    const deadlines = [4000, 1000, 3000, 5000, 2000];
    const made = deadlines.map((d) => finished(d));
    for (const e of made) await s.createEnvelope(e, [event(e, 'created')]);
    const first = await s.listExpiredEnvelopes(4500, 2);
    expect(first.map((e) => e.retentionUntil)).toEqual([1000, 2000]);
    const batches: number[] = [];
    for (;;) {
      const batch = await s.listExpiredEnvelopes(4500, 2);
      if (batch.length === 0) break;
      batches.push(
        (
          await s.purgeEnvelopes(
            batch.map((e) => e.id),
            4500,
          )
        ).length,
      );
    }
    expect(batches).toEqual([2, 2]);
    const left = await s.listEnvelopes({ limit: 10 });
    expect(left.items.map((e) => e.retentionUntil)).toEqual([5000]);
  });

  test('an envelope whose deadline moved after it was listed is not purged', async () => {
    const s = store();
    const e = finished(1000);
    const { envelope } = await s.createEnvelope(e, []);
    const listed = await s.listExpiredEnvelopes(2000, 10);
    expect(listed.map((x) => x.id)).toEqual([e.id]);
    await s.updateEnvelope({ ...envelope, retentionUntil: 10_000 }, envelope.version, []);
    expect(await s.purgeEnvelopes([e.id], 2000)).toEqual([]);
    expect((await s.getEnvelope(e.id))?.retentionUntil).toBe(10_000);
  });

  test('event seqs are never handed out again after the newest event was purged', async () => {
    const s = store();
    const e = finished(1000);
    await s.createEnvelope(e, [event(e, 'created'), event(e, 'state_changed')]);
    const before = await s.listEvents({ afterSeq: 0 });
    const highest = Math.max(...before.map((x) => x.seq));
    expect(await s.purgeEnvelopes([e.id], 1000)).toEqual([e.id]);
    const next = makeEnvelope();
    await s.createEnvelope(next, [event(next, 'created')]);
    const after = await s.listEvents({ afterSeq: 0 });
    expect(after).toHaveLength(1);
    expect(after[0]!.seq).toBeGreaterThan(highest);
  });

  test('two stores purging the same envelopes at once delete each exactly once', async () => {
    const a = store();
    const b = await peer();
    const made = Array.from({ length: 12 }, (_, i) => finished(1000 + i));
    for (const e of made) await a.createEnvelope(e, [event(e, 'created')]);
    const ids = made.map((e) => e.id);
    const [x, y] = await Promise.all([a.purgeEnvelopes(ids, 5000), b.purgeEnvelopes(ids, 5000)]);
    expect([...x, ...y].sort()).toEqual([...ids].sort());
    expect(await a.listExpiredEnvelopes(5000, 100)).toEqual([]);
  });
}

const status = (taskId: string, state: string) => ({
  taskId,
  at: 1000,
  payload: { statusUpdate: { taskId, status: { state } } },
});

export function agentTaskRetentionCases({ store, test }: SuiteContext<AgentTaskStore>): void {
  test('purgeAgentTasks removes finished tasks last written before the cutoff with everything of theirs', async () => {
    const s = store();
    const old = makeTask({ state: 'TASK_STATE_COMPLETED', updatedAt: 1000 });
    const recent = makeTask({ state: 'TASK_STATE_FAILED', updatedAt: 9000 });
    const running = makeTask({ state: 'TASK_STATE_WORKING', updatedAt: 500 });
    for (const [t, m] of [
      [old, 'm-old'],
      [recent, 'm-recent'],
      [running, 'm-running'],
    ] as const) {
      await s.createAgentTask(t, m, [status(t.id, t.state)], [outboxRow(t.id, 'c1', 1)]);
      await s.putPushConfig({
        id: 'c1',
        taskId: t.id,
        ...ALICE,
        url: 'https://example.com/hook',
        token: null,
        authentication: null,
        createdAt: 1,
      });
      await s.acknowledgeAgentTask(t.id, ALICE);
    }
    const before = await s.listAgentTasks({ ...ALICE });
    expect(before.totalSize).toBe(3);
    const purged = await s.purgeAgentTasks(5000, 10);
    expect(purged.tasks).toEqual([old.id]);
    expect(await s.getAgentTask(old.id)).toBeUndefined();
    expect(await s.listPushConfigs(old.id)).toEqual([]);
    expect(await s.listOutbox({ taskId: old.id })).toEqual([]);
    expect(await s.findAgentTaskByMessageId(ALICE, 'm-old')).toBeUndefined();
    expect(await s.listAgentTaskEvents(old.id, 0)).toEqual([]);
    const after = await s.listAgentTasks({ ...ALICE });
    expect(after.totalSize).toBe(2);
    expect(after.tasks.map((t) => t.id).sort()).toEqual([recent.id, running.id].sort());
    for (const t of [recent, running]) {
      expect(await s.listAgentTaskEvents(t.id, 0)).toHaveLength(1);
      expect(await s.listPushConfigs(t.id)).toHaveLength(1);
      expect(await s.listOutbox({ taskId: t.id })).toHaveLength(1);
    }
    // The purged task's messageId is free: sending it again makes a new task.
    const again = await s.createAgentTask(makeTask(), 'm-old', [], []);
    expect(again.created).toBe(true);
    expect((await s.purgeAgentTasks(5000, 10)).tasks).toEqual([]);
  });

  test('purgeAgentTasks takes the oldest first, at most limit per call, and seqs stay unique', async () => {
    const s = store();
    const tasks = [4000, 1000, 3000, 2000].map((updatedAt) =>
      makeTask({ state: 'TASK_STATE_CANCELED', updatedAt }),
    );
    for (const t of tasks) await s.createAgentTask(t, `m-${t.id}`, [status(t.id, t.state)], []);
    const highest = Math.max(
      ...(await Promise.all(tasks.map((t) => s.listAgentTaskEvents(t.id, 0)))).flat().map((e) => e.seq),
    );
    const first = await s.purgeAgentTasks(10_000, 3);
    const byAge = [...tasks].sort((a, b) => a.updatedAt - b.updatedAt).map((t) => t.id);
    expect(first.tasks.sort()).toEqual(byAge.slice(0, 3).sort());
    expect((await s.purgeAgentTasks(10_000, 3)).tasks).toEqual(byAge.slice(3));
    // Nothing of theirs is left, not even the newest event of the store.
    for (const t of tasks) expect(await s.listAgentTaskEvents(t.id, 0)).toEqual([]);
    const fresh = makeTask();
    await s.createAgentTask(fresh, 'm-fresh', [status(fresh.id, 'TASK_STATE_SUBMITTED')], []);
    const [e] = await s.listAgentTaskEvents(fresh.id, 0);
    expect(e!.seq).toBeGreaterThan(highest);
  });

  test('purgeAgentTasks removes direct replies created before the cutoff', async () => {
    const s = store();
    await s.putDirectReply(ALICE, 'r-old', { text: 'old' }, 1000);
    await s.putDirectReply(ALICE, 'r-new', { text: 'new' }, 9000);
    expect((await s.purgeAgentTasks(5000, 10)).directReplies).toBe(1);
    expect(await s.getDirectReply(ALICE, 'r-old')).toBeUndefined();
    expect(await s.getDirectReply(ALICE, 'r-new')).toEqual({ text: 'new' });
  });
}
