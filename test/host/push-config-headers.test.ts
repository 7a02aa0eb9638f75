import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import { SeededRandom } from '../../src/core/random.ts';
import { PushConfigs } from '../../src/host/push-configs.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { A2AError } from '../../src/protocols/a2a/errors.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { call, startTestHost } from './in-process.ts';

/**
 * A push config's token, auth scheme and credentials go out as HTTP headers on every delivery. One
 * that cannot be sent as a header (CR/LF, control characters, non-ASCII, padding) is refused when it
 * is created, with InvalidParams naming the field, instead of failing every delivery later.
 */
const hosts: RunningHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

const BAD: Array<[string, Record<string, unknown>, string]> = [
  ['a token with CR LF', { token: 'abc\r\nX-Injected: 1' }, 'token'],
  ['a token with a bare LF', { token: 'abc\ndef' }, 'token'],
  ['a token with a NUL', { token: 'abc\u0000' }, 'token'],
  ['a token with non-ASCII', { token: 'tökén' }, 'token'],
  ['a token with a trailing space', { token: 'abc ' }, 'token'],
  ['a scheme with CR LF', { authentication: { scheme: 'Bearer\r\nX: 1' } }, 'authentication.scheme'],
  ['a scheme with a space', { authentication: { scheme: 'Bearer x' } }, 'authentication.scheme'],
  [
    'credentials with CR LF',
    { authentication: { scheme: 'Bearer', credentials: 's3cret\r\nHost: evil' } },
    'authentication.credentials',
  ],
  [
    'credentials with a DEL',
    { authentication: { scheme: 'Bearer', credentials: 's3cret\u007f' } },
    'authentication.credentials',
  ],
  [
    'credentials with a leading tab',
    { authentication: { scheme: 'Bearer', credentials: '\ts3cret' } },
    'authentication.credentials',
  ],
];

describe('push config header fields are checked at creation', () => {
  it.each(BAD)('CreateTaskPushNotificationConfig refuses %s', async (_label, fields, field) => {
    const store = new MemoryStore();
    const h = await startTestHost(store);
    hosts.push(h);
    const task = (
      await call(h.url, 'SendMessage', {
        message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ data: { steps: 0, askInput: 'Which?' } }] },
        configuration: { returnImmediately: true },
      })
    ).body.result.task.id as string;
    const res = await call(h.url, 'CreateTaskPushNotificationConfig', {
      taskId: task,
      url: 'http://127.0.0.1:9/hook',
      ...fields,
    });
    expect(res.body.error?.code).toBe(-32602);
    expect(res.body.error?.message).toContain(`params.${field}`);
    expect(await store.listPushConfigs(task)).toEqual([]);
  });

  it.each(BAD)(
    'SendMessage with an inline config refuses %s and starts no task',
    async (_label, fields, field) => {
      const store = new MemoryStore();
      const h = await startTestHost(store);
      hosts.push(h);
      const res = await call(h.url, 'SendMessage', {
        message: { messageId: 'm2', role: 'ROLE_USER', parts: [{ data: { steps: 0 } }] },
        configuration: {
          returnImmediately: true,
          taskPushNotificationConfig: { url: 'http://127.0.0.1:9/hook', ...fields },
        },
      });
      expect(res.body.error?.code).toBe(-32602);
      expect(res.body.error?.message).toContain(`configuration.taskPushNotificationConfig.${field}`);
      expect((await call(h.url, 'ListTasks', {})).body.result.tasks).toEqual([]);
    },
  );

  it.each(BAD)('PushConfigs.create refuses %s when called from code', async (_label, fields, field) => {
    const configs = new PushConfigs(new MemoryStore(), new VirtualClock(0), new SeededRandom(1));
    const err = await configs
      .create('t1', { owner: 'o', tenant: '' }, { url: 'http://127.0.0.1:9/hook', ...fields })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(A2AError);
    expect((err as A2AError).message).toMatch(new RegExp(`^${field.replace('.', '\\.')}:`));
  });

  it('accepts ordinary tokens and credentials (inner spaces allowed in credentials)', async () => {
    const configs = new PushConfigs(new MemoryStore(), new VirtualClock(0), new SeededRandom(1));
    const made = await configs.create(
      't1',
      { owner: 'o', tenant: '' },
      {
        url: 'http://127.0.0.1:9/hook',
        token: 'tok_AZaz09-._~+/=',
        authentication: { scheme: 'Digest', credentials: 'username="a", realm="b"' },
      },
    );
    expect(made).toMatchObject({ token: 'tok_AZaz09-._~+/=', authentication: { scheme: 'Digest' } });
  });
});
