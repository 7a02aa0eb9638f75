import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { call, startTestHost } from './in-process.ts';

const hosts: RunningHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

const digest = (key: string) => createHash('sha256').update(key).digest('hex');

describe('host scopes are owner and tenant apart', () => {
  // An owner named `alice@x` can no longer be loaded from a key file (auth.ts), but a scope must not
  // depend on that: the store keeps owner and tenant as two values, so no name spells another scope.
  const keys = new Map([
    [digest('alice-key-0123456789'), 'alice'],
    [digest('joined-key-0123456789'), 'alice@x'],
  ]);
  const alice = { authorization: 'Bearer alice-key-0123456789' };
  const joined = { authorization: 'Bearer joined-key-0123456789' };
  const send = (messageId: string, extra: Record<string, unknown> = {}) => ({
    message: { messageId, role: 'ROLE_USER', parts: [{ text: 'hi' }] },
    configuration: { returnImmediately: true },
    ...extra,
  });

  it('owner alice in tenant x and owner alice@x see, cancel and dedup nothing of each other', async () => {
    const h = await startTestHost(new MemoryStore(), { auth: 'keys', keys });
    hosts.push(h);
    const mine = await call(h.url, 'SendMessage', send('m-1', { tenant: 'x' }), alice);
    const id = mine.body.result.task.id as string;
    // The same messageId from the joined name is a new task, not a replay of alice's.
    const theirs = await call(h.url, 'SendMessage', send('m-1'), joined);
    expect(theirs.body.result.task.id).not.toBe(id);
    const other = theirs.body.result.task.id as string;

    expect((await call(h.url, 'GetTask', { id }, joined)).body.error!.code).toBe(-32001);
    expect((await call(h.url, 'CancelTask', { id }, joined)).body.error!.code).toBe(-32001);
    expect((await call(h.url, 'ListTasks', {}, joined)).body.result.tasks.map((t: { id: string }) => t.id)).toEqual(
      [other],
    );
    expect((await call(h.url, 'GetTask', { id: other, tenant: 'x' }, alice)).body.error!.code).toBe(-32001);
    expect((await call(h.url, 'ListTasks', { tenant: 'x' }, alice)).body.result.tasks.map((t: { id: string }) => t.id)).toEqual(
      [id],
    );
    // A push config on the other scope's task would send its events to the caller's URL.
    const push = {
      taskId: id,
      url: 'https://hooks.example/steal',
    };
    expect((await call(h.url, 'CreateTaskPushNotificationConfig', push, joined)).body.error!.code).toBe(-32001);
    expect((await call(h.url, 'ListTaskPushNotificationConfigs', { taskId: id }, joined)).body.error!.code).toBe(
      -32001,
    );
    const created = await call(h.url, 'CreateTaskPushNotificationConfig', { ...push, tenant: 'x' }, alice);
    expect(created.body.result.taskId).toBe(id);
  });
});
