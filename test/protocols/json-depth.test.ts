import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { call, startTestHost, type Wire } from '../host/in-process.ts';

/** Both host bindings refuse deeply nested JSON as an invalid request, before anything recurses over it. */

let host: RunningHost;
const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
const message = (metadata: string) =>
  `{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"x":${metadata}}}`;

beforeAll(async () => {
  host = await startTestHost(new MemoryStore(), { maxJsonDepth: 16 });
});
afterAll(async () => {
  await host?.close();
});

async function rpc(body: string) {
  const res = await fetch(`${host.url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'A2A-Version': '1.0' },
    body,
  });
  return { status: res.status, body: (await res.json()) as Wire };
}

async function rest(path: string, body: string) {
  const res = await fetch(`${host.url}/a2a/rest${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'A2A-Version': '1.0' },
    body,
  });
  return { status: res.status, body: (await res.json()) as Wire };
}

async function taskCount(): Promise<number> {
  const { body } = await call(host.url, 'ListTasks', {});
  return (body.result.tasks as unknown[]).length;
}

describe('JSON nesting limit on the host', () => {
  it('JSON-RPC: a deeply nested request is -32600 with a null id, never an internal error, and no task is made', async () => {
    for (const depth of [17, 20_000, 500_000]) {
      const { status, body } = await rpc(
        `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":${message(deep(depth))}}}`,
      );
      expect(status).toBe(200);
      expect(body.error.code).toBe(-32600);
      expect(body.id).toBeNull();
    }
    expect(await taskCount()).toBe(0);
  });

  it('HTTP+JSON: a deeply nested body is 400 INVALID_ARGUMENT on every body route', async () => {
    for (const path of [
      '/message:send',
      '/message:stream',
      '/tasks/t1:cancel',
      '/tasks/t1/pushNotificationConfigs',
    ]) {
      const { status, body } = await rest(path, `{"message":${message(deep(20_000))}}`);
      expect(status, path).toBe(400);
      expect(body.error.status, path).toBe('INVALID_ARGUMENT');
    }
    expect(await taskCount()).toBe(0);
  });

  it('nesting within the limit is served', async () => {
    const { body } = await rpc(
      `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":${message(deep(10))}}}`,
    );
    expect(body.error).toBeUndefined();
    expect(body.result.task.id).toBeTypeOf('string');
  });
});
