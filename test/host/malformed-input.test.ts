import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { startTestHost, type Wire } from './in-process.ts';

/** Bad input gets the right error and never takes the host down. */
let h: RunningHost;
beforeAll(async () => {
  h = await startTestHost(new MemoryStore(), { maxBodyBytes: 64 * 1024 });
});
afterAll(() => h.close());

const V = { 'A2A-Version': '1.0' };

async function rpcRaw(body: string, headers: Record<string, string> = V) {
  const res = await fetch(`${h.url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return {
    status: res.status,
    json: (await res.json()) as { id: unknown; error: { code: number; message: string; data: Wire[] } },
  };
}

async function restRaw(method: string, path: string, body?: string) {
  const res = await fetch(`${h.url}/a2a/rest${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...V },
    ...(body !== undefined ? { body } : {}),
  });
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    json: (await res.json()) as { error: { code: number; status: string; message: string; details: Wire[] } },
  };
}

const okMessage = { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'x' }] };

describe('JSON-RPC binding', () => {
  it.each([
    ['malformed JSON', '{"jsonrpc": "2.0", "id": 1, "method": ', -32700],
    ['a JSON string', '"hello"', -32600],
    ['a batch', '[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]', -32600],
    ['missing jsonrpc', '{"id":1,"method":"GetTask","params":{"id":"x"}}', -32600],
    ['an object id', '{"jsonrpc":"2.0","id":{},"method":"GetTask"}', -32600],
    ['a numeric method', '{"jsonrpc":"2.0","id":1,"method":5}', -32600],
    ['an unknown method', '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}', -32601],
    ['array params', '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}', -32602],
    ['a missing id param', '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}', -32602],
    [
      'parts of the wrong type',
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: { message: { ...okMessage, parts: 'x' } },
      }),
      -32602,
    ],
    [
      'a bad role enum',
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: { message: { ...okMessage, role: 'ROLE_ROOT' } },
      }),
      -32602,
    ],
    ['a bad status enum', '{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"status":"DONE"}}', -32602],
    [
      'a historyLength string',
      '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x","historyLength":"many"}}',
      -32602,
    ],
    ['an unknown task', '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}', -32001],
  ])('%s → %i', async (_label, body, code) => {
    const { status, json } = await rpcRaw(body);
    expect(status).toBe(200);
    expect(json.error.code).toBe(code);
    expect(json.error.data[0]['@type']).toBe('type.googleapis.com/google.rpc.ErrorInfo');
  });

  it('names the field in invalid params', async () => {
    const { json } = await rpcRaw(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'a',
        method: 'SendMessage',
        params: { message: { ...okMessage, parts: [] } },
      }),
    );
    expect(json.id).toBe('a');
    expect(json.error.data[1].fieldViolations[0].field).toBe('message.parts');
  });

  it('an oversized body → 413 with -32600 before it is read whole', async () => {
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { ...okMessage, parts: [{ text: 'x'.repeat(100_000) }] } },
    });
    const { status, json } = await rpcRaw(big);
    expect(status).toBe(413);
    expect(json.error.code).toBe(-32600);
    expect(json.error.data[0].reason).toBe('PAYLOAD_TOO_LARGE');
  });

  it('version 2.0 → -32009', async () => {
    const { json } = await rpcRaw('{"jsonrpc":"2.0","id":1,"method":"ListTasks"}', { 'A2A-Version': '2.0' });
    expect(json.error.code).toBe(-32009);
  });
});

describe('HTTP+JSON binding', () => {
  it('malformed JSON → 400 INVALID_ARGUMENT as google.rpc.Status in application/a2a+json', async () => {
    const r = await restRaw('POST', '/message:send', '{"message":');
    expect(r.status).toBe(400);
    expect(r.type).toContain('application/a2a+json');
    expect(r.json.error).toMatchObject({
      code: 400,
      status: 'INVALID_ARGUMENT',
      details: [{ reason: 'PARSE_ERROR' }],
    });
  });

  it.each([
    ['GET', '/nothing/here', undefined, 404],
    ['DELETE', '/tasks', undefined, 404],
    ['POST', '/message:send', '{"message":{"messageId":"m","role":"ROLE_USER"}}', 400],
    ['POST', '/message:send', '[]', 400],
    ['GET', '/tasks?status=FINISHED', undefined, 400],
    ['GET', '/tasks?pageSize=1000', undefined, 400],
    ['GET', '/tasks?statusTimestampAfter=noon', undefined, 400],
    ['GET', '/tasks/x?historyLength=-2', undefined, 400],
    ['GET', '/tasks/%E0%A4%A', undefined, 400],
    ['GET', '/tasks/unknown', undefined, 404],
    ['POST', '/tasks/unknown:cancel', undefined, 404],
    ['POST', '/tasks/unknown:explode', undefined, 404],
    ['POST', '/tasks/unknown/pushNotificationConfigs', '{"url":"ftp://x"}', 404],
  ])('%s %s (body %s) → %i', async (method, path, body, status) => {
    const r = await restRaw(method, path, body);
    expect(r.status).toBe(status);
    expect(r.json.error.details[0].domain).toBe('a2a-protocol.org');
  });

  it('an oversized body → 413', async () => {
    const r = await restRaw(
      'POST',
      '/message:send',
      JSON.stringify({ message: { ...okMessage, parts: [{ text: 'y'.repeat(70_000) }] } }),
    );
    expect(r.status).toBe(413);
  });

  it('bad field types name the field', async () => {
    const r = await restRaw(
      'POST',
      '/message:send',
      JSON.stringify({ message: { ...okMessage, messageId: 42 } }),
    );
    expect(r.json.error.details[1].fieldViolations[0].field).toBe('message.messageId');
  });
});

it('the host is still serving after all of that', async () => {
  const res = await fetch(`${h.url}/.well-known/agent-card.json`);
  expect(res.status).toBe(200);
  const { json } = await rpcRaw(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { ...okMessage, messageId: 'alive' } },
    }),
  );
  expect(json.error).toBeUndefined();
});
