import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import { PushOutbox } from '../../src/host/push-outbox.ts';
import type { PushRequest, PushResult } from '../../src/host/push-sender.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import type { AgentTaskRecord } from '../../src/store/store.ts';

const logger = pino({ level: 'silent' });

async function seed(store: MemoryStore, taskId: string, payloads: number, now: number) {
  const record: AgentTaskRecord = {
    id: taskId,
    owner: 'o',
    tenant: '',
    contextId: 'c',
    state: 'TASK_STATE_WORKING',
    statusTimestamp: now,
    task: {},
    executorState: null,
    createdAt: now,
    updatedAt: now,
    version: 1,
  };
  await store.putPushConfig({
    id: 'cfg',
    taskId,
    owner: 'o',
    tenant: '',
    url: 'http://hook/',
    token: null,
    authentication: { scheme: 'Bearer', credentials: 's3cret' },
    createdAt: now,
  });
  const outbox = Array.from({ length: payloads }, (_, i) => ({
    taskId,
    configId: 'cfg',
    deliveryId: `${taskId}-d${i}`,
    payload: { statusUpdate: { n: i } },
    nextAttemptAt: now,
  }));
  await store.createAgentTask(record, `${taskId}-m`, [], outbox);
}

/** The worker with the host's defaults (5 s base, 8 attempts, 15 s timeout) sending through `fake`. */
function outboxWith(
  store: MemoryStore,
  clock: VirtualClock,
  fake: ReturnType<typeof fakeSender>,
  owner = 'w',
): PushOutbox {
  return new PushOutbox({
    store,
    clock,
    logger,
    owner,
    baseMs: 5000,
    attempts: 8,
    timeoutMs: 15_000,
    send: fake.send,
  });
}

/** A scripted receiver: fails while `down`, records every attempt with its (virtual) time. */
function fakeSender(clock: VirtualClock) {
  const attempts: Array<{ at: number; req: PushRequest }> = [];
  const state = { down: true };
  const send = async (req: PushRequest): Promise<PushResult> => {
    attempts.push({ at: clock.now(), req });
    return state.down ? { ok: false, error: 'HTTP 503', retryable: true } : { ok: true, status: 204 };
  };
  return { attempts, state, send };
}

describe('push outbox (virtual clock)', () => {
  it('retries with backoff 5 s doubling, keeps the delivery id, dead-letters after 8 attempts', async () => {
    const clock = new VirtualClock(1_000_000);
    const store = new MemoryStore();
    await seed(store, 't1', 1, clock.now());
    const fake = fakeSender(clock);
    const outbox = outboxWith(store, clock, fake);
    for (let i = 0; i < 20 && fake.attempts.length < 8; i++) {
      await outbox.runOnce();
      const next = (await store.listOutbox({ taskId: 't1' }))[0]!;
      if (next.status === 'dead') break;
      await clock.runUntil(next.nextAttemptAt);
    }
    const gaps = fake.attempts.slice(1).map((a, i) => a.at - fake.attempts[i]!.at);
    expect(gaps).toEqual([5000, 10_000, 20_000, 40_000, 80_000, 160_000, 320_000]);
    expect(new Set(fake.attempts.map((a) => a.req.deliveryId))).toEqual(new Set(['t1-d0']));
    expect(fake.attempts[0]!.req.authorization).toBe('Bearer s3cret');
    const [row] = await store.listOutbox({ taskId: 't1' });
    expect(row).toMatchObject({ status: 'dead', attempts: 8, lastError: 'HTTP 503' });
  });

  it('delivers in order per task and config once the receiver is back (at least once, nothing lost)', async () => {
    const clock = new VirtualClock(0);
    const store = new MemoryStore();
    await seed(store, 't2', 5, clock.now());
    const fake = fakeSender(clock);
    const outbox = outboxWith(store, clock, fake);
    await outbox.runOnce(); // first attempt fails: receiver down
    await clock.advance(5000);
    fake.state.down = false;
    while ((await outbox.runOnce()) > 0) {
      /* drain */
    }
    const delivered = fake.attempts.filter((_, i) => i > 0).map((a) => a.req.deliveryId);
    expect(delivered).toEqual(['t2-d0', 't2-d1', 't2-d2', 't2-d3', 't2-d4']);
    expect((await store.listOutbox({ taskId: 't2', status: 'delivered' })).length).toBe(5);
  });

  it('a row whose lease expired (worker crashed mid-call) is sent again by another worker', async () => {
    const clock = new VirtualClock(0);
    const store = new MemoryStore();
    await seed(store, 't3', 1, clock.now());
    const [claimed] = await store.claimOutbox('crashed-worker', clock.now(), 45_000, 10);
    expect(claimed).toBeDefined();
    const fake = fakeSender(clock);
    fake.state.down = false;
    const outbox = outboxWith(store, clock, fake, 'w2');
    expect(await outbox.runOnce()).toBe(0);
    await clock.advance(45_000);
    expect(await outbox.runOnce()).toBe(1);
    expect(fake.attempts[0]!.req.deliveryId).toBe('t3-d0');
  });

  it('a delivery that throws is a failed attempt: retried on the schedule, dead-lettered, later events flow', async () => {
    const clock = new VirtualClock(0);
    const store = new MemoryStore();
    await seed(store, 't4', 2, clock.now());
    const attempts: Array<{ at: number; id: string }> = [];
    const outbox = new PushOutbox({
      store,
      clock,
      logger,
      owner: 'w',
      baseMs: 5000,
      attempts: 3,
      timeoutMs: 15_000,
      send: async (req) => {
        attempts.push({ at: clock.now(), id: req.deliveryId });
        if (req.deliveryId === 't4-d0') throw new TypeError('Invalid character in header content');
        return { ok: true, status: 204 };
      },
    });
    for (let i = 0; i < 10; i++) {
      await outbox.runOnce();
      const open = await store.listOutbox({ taskId: 't4', status: 'pending' });
      if (open.length === 0) break;
      await clock.runUntil(open[0]!.nextAttemptAt); // the head of the pair
    }
    expect(attempts).toEqual([
      { at: 0, id: 't4-d0' },
      { at: 5000, id: 't4-d0' },
      { at: 15_000, id: 't4-d0' },
      { at: 15_000, id: 't4-d1' },
    ]);
    const rows = await store.listOutbox({ taskId: 't4' });
    expect(rows.map((r) => [r.deliveryId, r.status, r.attempts])).toEqual([
      ['t4-d0', 'dead', 3],
      ['t4-d1', 'delivered', 1],
    ]);
    expect(rows[0]!.lastError).toMatch(/Invalid character in header content/);
  });

  it('a row whose lease kept expiring is dead-lettered once its attempts are spent, not sent again', async () => {
    const clock = new VirtualClock(0);
    const store = new MemoryStore();
    await seed(store, 't5', 2, clock.now());
    // Each claim counts as an attempt; a worker that dies mid-call never records its outcome.
    for (let i = 0; i < 8; i++) {
      expect((await store.claimOutbox(`crashed-${i}`, clock.now(), 45_000, 10)).length).toBe(1);
      await clock.advance(45_000);
    }
    const fake = fakeSender(clock);
    fake.state.down = false;
    const outbox = outboxWith(store, clock, fake);
    while ((await outbox.runOnce()) > 0) {
      /* drain */
    }
    expect(fake.attempts.map((a) => a.req.deliveryId)).toEqual(['t5-d1']);
    const rows = await store.listOutbox({ taskId: 't5' });
    expect(rows.map((r) => [r.deliveryId, r.status])).toEqual([
      ['t5-d0', 'dead'],
      ['t5-d1', 'delivered'],
    ]);
    expect(rows[0]!.lastError).toMatch(/lease expired/);
  });

  it('a store failure while delivering does not stop the other rows of the round', async () => {
    const clock = new VirtualClock(0);
    const store = new MemoryStore();
    await seed(store, 't6', 1, clock.now());
    await seed(store, 't7', 1, clock.now());
    const realGet = store.getPushConfig.bind(store);
    store.getPushConfig = async (taskId, id) => {
      if (taskId === 't6') throw new Error('connection reset');
      return realGet(taskId, id);
    };
    const fake = fakeSender(clock);
    fake.state.down = false;
    const outbox = outboxWith(store, clock, fake);
    expect(await outbox.runOnce()).toBe(2);
    expect(fake.attempts.map((a) => a.req.deliveryId)).toEqual(['t7-d0']);
    const [t6] = await store.listOutbox({ taskId: 't6' });
    expect(t6).toMatchObject({ status: 'pending', attempts: 1, nextAttemptAt: 5000 });
  });
});
