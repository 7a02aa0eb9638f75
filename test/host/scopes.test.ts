import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { TaskplaneError } from '../../src/core/errors.ts';
import { parseKeys } from '../../src/host/auth.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { spawnTaskplane } from '../support/process.ts';
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
    expect(
      (await call(h.url, 'ListTasks', {}, joined)).body.result.tasks.map((t: { id: string }) => t.id),
    ).toEqual([other]);
    expect((await call(h.url, 'GetTask', { id: other, tenant: 'x' }, alice)).body.error!.code).toBe(-32001);
    expect(
      (await call(h.url, 'ListTasks', { tenant: 'x' }, alice)).body.result.tasks.map(
        (t: { id: string }) => t.id,
      ),
    ).toEqual([id]);
    // A push config on the other scope's task would send its events to the caller's URL.
    const push = {
      taskId: id,
      url: 'https://hooks.example/steal',
    };
    expect((await call(h.url, 'CreateTaskPushNotificationConfig', push, joined)).body.error!.code).toBe(
      -32001,
    );
    expect(
      (await call(h.url, 'ListTaskPushNotificationConfigs', { taskId: id }, joined)).body.error!.code,
    ).toBe(-32001);
    const created = await call(h.url, 'CreateTaskPushNotificationConfig', { ...push, tenant: 'x' }, alice);
    expect(created.body.result.taskId).toBe(id);
  });
});

describe('host keys at load', () => {
  const KEY_A = 'alice-key-0123456789';
  const KEY_B = 'bob-key-0123456789ab';

  /** The config error parseKeys throws for `text`, which must never contain a key from it. */
  function refusal(text: string): TaskplaneError {
    try {
      parseKeys(text);
    } catch (err) {
      expect(err).toBeInstanceOf(TaskplaneError);
      const e = err as TaskplaneError;
      expect(e.code).toBe('config');
      expect(e.field).toBe('keys');
      for (const entry of text.split(/[,\n]/)) {
        const key = entry.slice(entry.indexOf(':') + 1).trim();
        if (key.length >= 4) expect(e.message).not.toContain(key);
      }
      return e;
    }
    throw new Error(`parseKeys accepted ${JSON.stringify(text)}`);
  }

  it.each([
    ['@, the old scope separator', `alice:${KEY_A},alice@x:${KEY_B}`, 2],
    ['a slash', `team/alice:${KEY_A}`, 1],
    ['a space', `alice:${KEY_A}\nbob smith:${KEY_B}`, 2],
    ['a control character', `alice\u0001:${KEY_A}`, 1],
    ['a DEL', `alice\u007f:${KEY_A}`, 1],
    ['a zero-width format character', `ali\u200Bce:${KEY_A}`, 1],
  ])('an owner name with %s is refused, naming the entry by position', (_what, text, position) => {
    expect(refusal(text).message).toMatch(new RegExp(`entry ${position}\\b.*owner`));
  });

  it('a key listed twice is a startup error naming both entries, even for one owner', () => {
    expect(refusal(`alice:${KEY_A}\n# rotated\nbob:${KEY_B}\nalice:${KEY_A}`).message).toMatch(
      /entry 3: .*same key as entry 1/,
    );
    expect(refusal(`alice:${KEY_A},bob:${KEY_A}`).message).toMatch(/entry 2: .*same key as entry 1/);
  });

  it('a key shorter than 16 characters or with whitespace or control characters is refused by position', () => {
    expect(refusal(`alice:${KEY_A},bob:short-key`).message).toMatch(/entry 2: .*16 characters/);
    expect(refusal(`alice:${KEY_A},bob:${KEY_B}\u0000x`).message).toMatch(/entry 2: /);
    expect(refusal(`alice:${KEY_A},bob:bob key 0123456789ab`).message).toMatch(/entry 2: /);
  });

  it('accepts well-formed entries: one owner may hold several keys', () => {
    const keys = parseKeys(`# team keys\nalice:${KEY_A}\nalice:${KEY_B}\nsvc.bot-1_x:${KEY_A}x`);
    expect([...keys.values()].sort()).toEqual(['alice', 'alice', 'svc.bot-1_x']);
  });
});

describe('taskplane host --auth keys', () => {
  it('exits with one line naming the entry when a key is listed twice, and never prints the key', async () => {
    const key = 'dup-key-0123456789ab';
    const proc = await spawnTaskplane(['host', '--port', '0', '--db', 'memory:', '--auth', 'keys'], {
      env: { TASKPLANE_HOST_KEYS: `alice:${key},bob:${key}` },
    });
    const exit = await proc.exited;
    expect(exit.code).toBe(2);
    expect(proc.stderr.trim()).toBe(
      'taskplane: host keys: entry 2: has the same key as entry 1; each key must be listed once',
    );
    expect(proc.stdout + proc.stderr).not.toContain(key);
  });
});
