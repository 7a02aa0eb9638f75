import { expect } from 'vitest';
import { VersionConflictError } from '../../../src/core/errors.ts';
import type {
  AgentTaskQuery,
  AgentTaskStore,
  ChangeNotice,
  PushConfigRecord,
} from '../../../src/store/store.ts';
import type { SuiteContext } from '../store-suite.ts';
import { ALICE, BOB, makeTask, nextChange, outboxRow } from './fixtures.ts';

const statusEvent = (taskId: string, state: string, at = 1000) => ({
  taskId,
  at,
  payload: { statusUpdate: { taskId, status: { state } } },
});

export function hostCases({ store, peer, test }: SuiteContext<AgentTaskStore>): void {
  test('createAgentTask is idempotent on (owner, messageId) and not across owners', async () => {
    const task = makeTask({ version: 3 });
    const res = await store().createAgentTask(
      task,
      'm-1',
      [statusEvent(task.id, 'TASK_STATE_SUBMITTED')],
      [],
    );
    expect(res).toEqual({ created: true, task: { ...task, version: 1 } });
    const again = await store().createAgentTask(makeTask(), 'm-1', [], []);
    expect(again).toEqual({ created: false, task: { ...task, version: 1 } });
    expect(await store().findAgentTaskByMessageId(ALICE, 'm-1')).toBe(task.id);
    const bobs = await store().createAgentTask(makeTask({ owner: 'bob' }), 'm-1', [], []);
    expect(bobs.created).toBe(true);
    expect(await store().findAgentTaskByMessageId(BOB, 'm-1')).toBe(bobs.task.id);
    expect(await store().getAgentTask(task.id, BOB)).toBeUndefined();
    expect((await store().getAgentTask(task.id, ALICE))?.id).toBe(task.id);
    expect((await store().getAgentTask(task.id))?.id).toBe(task.id);
    expect(await store().listAgentTaskEvents(task.id, 0)).toHaveLength(1);
  });

  test('an acknowledged task gives its messageId up to the next create, once; only its scope acknowledges', async () => {
    const task = makeTask();
    await store().createAgentTask(task, 'm-ack', [], []);
    await store().acknowledgeAgentTask(task.id, BOB);
    await store().acknowledgeAgentTask('no-such-task', ALICE);
    expect((await store().createAgentTask(makeTask(), 'm-ack', [], [])).created).toBe(false);
    await store().acknowledgeAgentTask(task.id, ALICE);
    await store().acknowledgeAgentTask(task.id, ALICE); // again: nothing changes
    // Two concurrent resends after the acknowledgement: one new task, the other its retry.
    const [a, b] = await Promise.all([
      store().createAgentTask(makeTask(), 'm-ack', [], []),
      store().createAgentTask(makeTask(), 'm-ack', [], []),
    ]);
    expect([a.created, b.created].sort()).toEqual([false, true]);
    expect(a.task.id).toBe(b.task.id);
    expect(a.task.id).not.toBe(task.id);
    expect(await store().findAgentTaskByMessageId(ALICE, 'm-ack')).toBe(a.task.id);
    expect((await store().getAgentTask(task.id))?.id).toBe(task.id);
    // A follow-up's pair on an acknowledged task stays a duplicate (never taken over).
    const current = (await store().getAgentTask(task.id))!;
    const first = await store().updateAgentTask(current, current.version, [], [], 'm-follow');
    expect(first.duplicate).toBe(false);
    const retry = await store().updateAgentTask(first.task, first.task.version, [], [], 'm-follow');
    expect(retry.duplicate).toBe(true);
  });

  test('putDirectReply keeps the first reply per scope and messageId, a copy taken at the call', async () => {
    const inTenant = { owner: 'alice', tenant: 'x' };
    const reply = { messageId: 'r-1', role: 'ROLE_AGENT', parts: [{ text: 'pong' }] };
    expect(await store().getDirectReply(inTenant, 'm-1')).toBeUndefined();
    const stored = await store().putDirectReply(inTenant, 'm-1', reply, 1000);
    expect(stored).toEqual(reply);
    reply.parts[0]!.text = 'changed after the call';
    const retry = await store().putDirectReply(inTenant, 'm-1', { messageId: 'r-2' }, 2000);
    expect(retry).toEqual({ messageId: 'r-1', role: 'ROLE_AGENT', parts: [{ text: 'pong' }] });
    expect(await store().getDirectReply(inTenant, 'm-1')).toEqual(retry);
    // Another scope, the same messageId: its own reply.
    expect(await store().getDirectReply({ owner: 'alice@x', tenant: '' }, 'm-1')).toBeUndefined();
    expect(await store().getDirectReply({ owner: 'alice', tenant: '' }, 'm-1')).toBeUndefined();
    const other = await store().putDirectReply(
      { owner: 'alice', tenant: '' },
      'm-1',
      { messageId: 'r-3' },
      3000,
    );
    expect(other).toEqual({ messageId: 'r-3' });
    // A reply is no task.
    expect(await store().findAgentTaskByMessageId(inTenant, 'm-1')).toBeUndefined();
    expect((await store().listAgentTasks(inTenant)).totalSize).toBe(0);
  });

  test('a scope is owner and tenant apart: owner alice in tenant x is not owner alice@x', async () => {
    const inTenant = { owner: 'alice', tenant: 'x' };
    const joined = { owner: 'alice@x', tenant: '' };
    const a = makeTask({ ...inTenant, id: 'task-in-tenant' });
    const b = makeTask({ ...joined, id: 'task-joined' });
    expect((await store().createAgentTask(a, 'm-1', [], [])).created).toBe(true);
    // The same messageId in the other scope is a new task, not a duplicate of the first.
    expect(await store().createAgentTask(b, 'm-1', [], [])).toEqual({ created: true, task: b });
    expect(await store().findAgentTaskByMessageId(inTenant, 'm-1')).toBe(a.id);
    expect(await store().findAgentTaskByMessageId(joined, 'm-1')).toBe(b.id);
    expect(await store().getAgentTask(a.id, joined)).toBeUndefined();
    expect(await store().getAgentTask(b.id, inTenant)).toBeUndefined();
    expect(await store().getAgentTask(a.id, { owner: 'alice', tenant: '' })).toBeUndefined();
    expect(await store().getAgentTask(a.id, inTenant)).toEqual(a);
    expect((await store().listAgentTasks(inTenant)).tasks.map((t) => t.id)).toEqual([a.id]);
    expect((await store().listAgentTasks(joined)).tasks.map((t) => t.id)).toEqual([b.id]);
    expect((await store().listAgentTasks({ owner: 'alice', tenant: '' })).totalSize).toBe(0);
    // An update keeps the stored scope and records its messageId in that scope only.
    const moved = await store().updateAgentTask({ ...a, ...joined }, 1, [], [], 'm-2');
    expect(moved.task).toMatchObject(inTenant);
    expect(await store().getAgentTask(a.id)).toMatchObject({ ...inTenant, version: 2 });
    expect(await store().findAgentTaskByMessageId(inTenant, 'm-2')).toBe(a.id);
    expect(await store().findAgentTaskByMessageId(joined, 'm-2')).toBeUndefined();
    const config: PushConfigRecord = {
      id: 'c1',
      taskId: a.id,
      ...inTenant,
      url: 'https://hooks.example/1',
      token: null,
      authentication: null,
      createdAt: 1,
    };
    await store().putPushConfig(config);
    expect(await store().getPushConfig(a.id, 'c1')).toEqual(config);
    expect(await store().listPushConfigs(a.id)).toEqual([config]);
  });

  test('updateAgentTask is CAS, records messageId and refuses a duplicate messageId', async () => {
    const task = makeTask();
    await store().createAgentTask(task, 'm-1', [], []);
    const working = { ...task, state: 'TASK_STATE_WORKING', executorState: { step: 1 } };
    const res = await store().updateAgentTask(
      working,
      1,
      [statusEvent(task.id, 'TASK_STATE_WORKING')],
      [],
      'm-2',
    );
    expect(res.duplicate).toBe(false);
    expect(res.task).toMatchObject({ version: 2, state: 'TASK_STATE_WORKING', executorState: { step: 1 } });
    expect(res.events).toHaveLength(1);
    expect(await store().findAgentTaskByMessageId(ALICE, 'm-2')).toBe(task.id);
    const dup = await store().updateAgentTask({ ...working, state: 'TASK_STATE_FAILED' }, 2, [], [], 'm-2');
    expect(dup).toEqual({ duplicate: true, task: res.task, events: [] });
    const dupOfCreate = await store().updateAgentTask(
      { ...working, state: 'TASK_STATE_FAILED' },
      2,
      [],
      [],
      'm-1',
    );
    expect(dupOfCreate.duplicate).toBe(true);
    await expect(store().updateAgentTask(working, 1, [], [])).rejects.toBeInstanceOf(VersionConflictError);
    expect((await store().getAgentTask(task.id))!.version).toBe(2);
    expect(await store().listAgentTaskEvents(task.id, 0)).toHaveLength(1);
  });

  test('listAgentTaskEvents returns events after a seq, in order, per task', async () => {
    const a = makeTask();
    const b = makeTask();
    await store().createAgentTask(a, 'ma', [statusEvent(a.id, 'S1')], []);
    await store().createAgentTask(b, 'mb', [statusEvent(b.id, 'S1')], []);
    await store().updateAgentTask(a, 1, [statusEvent(a.id, 'S2'), statusEvent(a.id, 'S3')], []);
    const events = await store().listAgentTaskEvents(a.id, 0);
    expect(events.map((e) => (e.payload.statusUpdate as { status: { state: string } }).status.state)).toEqual(
      ['S1', 'S2', 'S3'],
    );
    expect(await store().listAgentTaskEvents(a.id, events[0]!.seq)).toEqual(events.slice(1));
    expect(await store().listAgentTaskEvents(a.id, 0, 1)).toEqual(events.slice(0, 1));
  });

  test('listAgentTasks totalSize follows creates and state changes, per scope and per state', async () => {
    const inTenant = { owner: 'alice', tenant: 'acme' };
    const created = [];
    for (let i = 0; i < 5; i++)
      created.push(
        (await store().createAgentTask(makeTask({ id: `count-${i}`, ...inTenant }), `cm-${i}`, [], [])).task,
      );
    await store().createAgentTask(makeTask({ id: 'count-bob', ...BOB }), 'cm-b', [], []);
    // The same message again creates nothing, and counts nothing.
    await store().createAgentTask(makeTask({ id: 'count-dup', ...inTenant }), 'cm-0', [], []);
    for (const t of created.slice(0, 2))
      await store().updateAgentTask({ ...t, state: 'TASK_STATE_COMPLETED' }, t.version, [], []);
    // A write that keeps the state moves no count.
    const kept = created[2]!;
    await store().updateAgentTask({ ...kept, updatedAt: kept.updatedAt + 1 }, kept.version, [], []);
    const total = async (q: Partial<AgentTaskQuery> = {}) =>
      (await store().listAgentTasks({ ...inTenant, pageSize: 1, ...q })).totalSize;
    expect(await total()).toBe(5);
    expect(await total({ state: 'TASK_STATE_COMPLETED' })).toBe(2);
    expect(await total({ state: 'TASK_STATE_SUBMITTED' })).toBe(3);
    expect(await total({ state: 'TASK_STATE_FAILED' })).toBe(0);
    expect((await store().listAgentTasks({ ...BOB })).totalSize).toBe(1);
    expect((await store().listAgentTasks({ owner: 'alice', tenant: '' })).totalSize).toBe(0);
  });

  test('listAgentTasks scopes by owner, filters, pages by cursor with totalSize, newest status first', async () => {
    for (let i = 0; i < 6; i++) {
      const task = makeTask({
        id: `task-${i}`,
        statusTimestamp: 1000 + (i % 3),
        contextId: i < 4 ? 'ctx-1' : 'ctx-2',
        state: i === 5 ? 'TASK_STATE_COMPLETED' : 'TASK_STATE_WORKING',
      });
      await store().createAgentTask(task, `m-${i}`, [], []);
    }
    await store().createAgentTask(makeTask({ id: 'task-bob', owner: 'bob' }), 'm-b', [], []);
    const first = await store().listAgentTasks({ ...ALICE, pageSize: 4 });
    expect(first.tasks.map((t) => t.id)).toEqual(['task-5', 'task-2', 'task-4', 'task-1']);
    expect(first.totalSize).toBe(6);
    const second = await store().listAgentTasks({ ...ALICE, pageSize: 4, cursor: first.nextCursor! });
    expect(second.tasks.map((t) => t.id)).toEqual(['task-3', 'task-0']);
    expect(second.nextCursor).toBeUndefined();
    expect(second.totalSize).toBe(6);
    const ctx = await store().listAgentTasks({ ...ALICE, contextId: 'ctx-2' });
    expect(ctx.tasks.map((t) => t.id)).toEqual(['task-5', 'task-4']);
    const working = await store().listAgentTasks({
      ...ALICE,
      state: 'TASK_STATE_WORKING',
      statusTimestampAfter: 1001,
    });
    expect(working.tasks.map((t) => t.id)).toEqual(['task-2', 'task-4', 'task-1']);
    expect(working.totalSize).toBe(3);
    expect((await store().listAgentTasks({ owner: 'carol', tenant: '' })).totalSize).toBe(0);
    const active = await store().listActiveAgentTasks();
    expect(active.map((t) => t.id).sort()).toEqual([
      'task-0',
      'task-1',
      'task-2',
      'task-3',
      'task-4',
      'task-bob',
    ]);
  });

  test('push configs: put upserts, get/list/delete, delete of an absent config is fine', async () => {
    const config: PushConfigRecord = {
      id: 'c1',
      taskId: 'task-1',
      owner: 'alice',
      tenant: '',
      url: 'https://hooks.example/1',
      token: 'tok',
      authentication: { scheme: 'Bearer', credentials: 'secret' },
      createdAt: 1,
    };
    expect(await store().putPushConfig(config)).toEqual(config);
    await store().putPushConfig({ ...config, id: 'c2', createdAt: 2, token: null, authentication: null });
    expect(await store().getPushConfig('task-1', 'c1')).toEqual(config);
    await store().putPushConfig({ ...config, url: 'https://hooks.example/changed' });
    expect((await store().getPushConfig('task-1', 'c1'))!.url).toBe('https://hooks.example/changed');
    expect((await store().listPushConfigs('task-1')).map((c) => c.id)).toEqual(['c1', 'c2']);
    expect(await store().listPushConfigs('task-2')).toEqual([]);
    await store().deletePushConfig('task-1', 'c1');
    await store().deletePushConfig('task-1', 'c1');
    expect(await store().getPushConfig('task-1', 'c1')).toBeUndefined();
    expect((await store().listPushConfigs('task-1')).map((c) => c.id)).toEqual(['c2']);
  });

  test('push configs keep the A2A version they were registered over (absent: 1.0)', async () => {
    const config: PushConfigRecord = {
      id: 'v03',
      taskId: 'task-3',
      owner: 'alice',
      tenant: '',
      url: 'https://hooks.example/3',
      token: null,
      authentication: null,
      createdAt: 1,
      protocolVersion: '0.3',
    };
    await store().putPushConfig(config);
    const { protocolVersion: _version, ...plain } = config;
    await store().putPushConfig({ ...plain, id: 'v10' });
    expect((await store().getPushConfig('task-3', 'v03'))?.protocolVersion).toBe('0.3');
    expect((await store().listPushConfigs('task-3')).map((c) => c.protocolVersion)).toEqual([
      '0.3',
      undefined,
    ]);
  });

  test('outbox delivers in order per (task, config): only the oldest undelivered row is claimable', async () => {
    const task = makeTask({ updatedAt: 500 });
    const rows = [outboxRow(task.id, 'c1', 1), outboxRow(task.id, 'c1', 2), outboxRow(task.id, 'c2', 1)];
    await store().createAgentTask(task, 'm', [], rows);
    const claimed = await store().claimOutbox('w1', 1000, 30_000, 10);
    expect(claimed.map((r) => r.deliveryId)).toEqual([`${task.id}:c1:1`, `${task.id}:c2:1`]);
    expect(claimed[0]).toMatchObject({
      status: 'leased',
      attempts: 1,
      leaseOwner: 'w1',
      leaseExpiresAt: 31_000,
    });
    expect(claimed[0]).toMatchObject({
      createdAt: 500,
      deliveredAt: null,
      lastError: null,
      payload: { n: 1 },
    });
    expect(await store().claimOutbox('w2', 1000, 30_000, 10)).toEqual([]);
    await store().completeOutbox(claimed[0]!.id, 'w1', 1100);
    const next = await store().claimOutbox('w2', 1200, 30_000, 10);
    expect(next.map((r) => r.deliveryId)).toEqual([`${task.id}:c1:2`]);
    const delivered = await store().listOutbox({ status: 'delivered', taskId: task.id });
    expect(delivered).toMatchObject([{ id: claimed[0]!.id, deliveredAt: 1100, leaseOwner: null }]);
    await store().updateAgentTask(task, 1, [], [outboxRow(task.id, 'c2', 2)]);
    expect((await store().listOutbox({ taskId: task.id })).map((r) => r.status)).toEqual([
      'delivered',
      'leased',
      'leased',
      'pending',
    ]);
  });

  test('outbox respects nextAttemptAt, reclaims expired leases and ignores the old owner', async () => {
    const task = makeTask();
    await store().createAgentTask(task, 'm', [], [outboxRow(task.id, 'c1', 1, 2000)]);
    expect(await store().claimOutbox('w1', 1999, 100, 10)).toEqual([]);
    const [row] = await store().claimOutbox('w1', 2000, 100, 10);
    expect(row).toBeDefined();
    expect(await store().claimOutbox('w2', 2099, 100, 10)).toEqual([]);
    const [again] = await store().claimOutbox('w2', 2100, 100, 10);
    expect(again).toMatchObject({ id: row!.id, attempts: 2, leaseOwner: 'w2', leaseExpiresAt: 2200 });
    await store().completeOutbox(row!.id, 'w1', 2150);
    await store().failOutbox(row!.id, 'w1', 'late', 9999);
    expect((await store().listOutbox({ taskId: task.id }))[0]).toMatchObject({
      status: 'leased',
      leaseOwner: 'w2',
    });
    await store().failOutbox(row!.id, 'w2', 'HTTP 503', 5000);
    expect((await store().listOutbox({ taskId: task.id }))[0]).toMatchObject({
      status: 'pending',
      nextAttemptAt: 5000,
      lastError: 'HTTP 503',
      leaseOwner: null,
      leaseExpiresAt: null,
    });
    expect(await store().claimOutbox('w3', 4999, 100, 10)).toEqual([]);
    expect(await store().claimOutbox('w3', 5000, 100, 10)).toMatchObject([{ attempts: 3 }]);
  });

  test('outbox dead-letters a row and lets the next one for the same config go', async () => {
    const task = makeTask();
    await store().createAgentTask(task, 'm', [], [outboxRow(task.id, 'c1', 1), outboxRow(task.id, 'c1', 2)]);
    const [first] = await store().claimOutbox('w1', 1000, 100, 1);
    await store().failOutbox(first!.id, 'w1', 'gave up', null);
    expect(await store().listOutbox({ status: 'dead' })).toMatchObject([
      { id: first!.id, lastError: 'gave up' },
    ]);
    const [second] = await store().claimOutbox('w1', 1000, 100, 1);
    expect(second?.deliveryId).toBe(`${task.id}:c1:2`);
    expect(await store().listOutbox({ status: 'pending' })).toEqual([]);
  });

  test('requeueDeadOutbox gives dead rows (of one task, or all) a fresh set of attempts', async () => {
    const a = makeTask();
    const b = makeTask();
    await store().createAgentTask(a, 'ma', [], [outboxRow(a.id, 'c1', 1)]);
    await store().createAgentTask(b, 'mb', [], [outboxRow(b.id, 'c1', 1)]);
    for (const row of await store().claimOutbox('w1', 1000, 100, 10))
      await store().failOutbox(row.id, 'w1', 'HTTP 410', null);
    expect(await store().listOutbox({ status: 'dead' })).toHaveLength(2);

    expect(await store().requeueDeadOutbox(2000, a.id)).toBe(1);
    expect(await store().listOutbox({ status: 'pending' })).toMatchObject([
      { taskId: a.id, attempts: 0, nextAttemptAt: 2000, lastError: 'HTTP 410' },
    ]);
    expect(await store().claimOutbox('w2', 1999, 100, 10)).toEqual([]);
    expect(await store().claimOutbox('w2', 2000, 100, 10)).toMatchObject([{ taskId: a.id, attempts: 1 }]);

    expect(await store().requeueDeadOutbox(3000)).toBe(1);
    expect(await store().listOutbox({ status: 'dead' })).toEqual([]);
    expect(await store().requeueDeadOutbox(3000)).toBe(0);
  });

  test('concurrent claimers never claim the same outbox row', async () => {
    const other = await peer();
    for (let t = 0; t < 4; t++) {
      const task = makeTask();
      const rows = Array.from({ length: 5 }, (_, c) => outboxRow(task.id, `c${c}`, 1));
      await store().createAgentTask(task, `m-${t}`, [], rows);
    }
    const [a, b] = await Promise.all([
      store().claimOutbox('w1', 1000, 1000, 15),
      other.claimOutbox('w2', 1000, 1000, 15),
    ]);
    const ids = [...a, ...b].map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(20);
  });

  test('onChange wakes listeners after agent-task events commit', async () => {
    const writer = store();
    const listener = writer.capabilities.crossProcessNotify ? await peer() : writer;
    const task = makeTask();
    const seen = nextChange<ChangeNotice>(
      (l) => listener.onChange(l),
      (c) => c.id === task.id,
    );
    await writer.createAgentTask(task, 'm', [statusEvent(task.id, 'TASK_STATE_SUBMITTED')], []);
    const change = await seen;
    expect(change.kind).toBe('agentTask');
    expect((await listener.listAgentTaskEvents(task.id, change.seq - 1)).length).toBe(1);
  });
}
