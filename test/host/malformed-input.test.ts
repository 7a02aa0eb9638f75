import { connect } from 'node:net';
import { request } from 'node:http';
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

/** One request written as it is on a socket (fetch refuses such a Host), read until the host closes. */
function rawRequest(head: string[], body = ''): Promise<{ status: number; type: string; body: string }> {
  const port = Number(new URL(h.url).port);
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.end(
        [...head, `content-length: ${Buffer.byteLength(body)}`, 'connection: close', '', body].join('\r\n'),
      ),
    );
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (text += c));
    socket.on('error', reject);
    socket.on('end', () => {
      const split = text.indexOf('\r\n\r\n');
      const lines = text.slice(0, split).split('\r\n');
      const type = lines.find((l) => /^content-type:/i.test(l))?.replace(/^content-type:\s*/i, '') ?? '';
      resolve({ status: Number(lines[0]!.split(' ')[1]), type, body: text.slice(split + 4) });
    });
  });
}

describe('Host header', () => {
  const listTasks = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} });
  const targets: Array<[string, string, string, string?]> = [
    ['JSON-RPC (node adapter)', 'POST', '/a2a/jsonrpc', listTasks],
    ['HTTP+JSON (node adapter)', 'GET', '/a2a/rest/tasks'],
    ['HTTP+JSON through hono', 'GET', '/a2a/rest/tasks/a"b'],
    ['HEAD through hono', 'HEAD', '/a2a/rest/tasks'],
    ['the agent card (hono)', 'GET', '/.well-known/agent-card.json'],
  ];

  // Each used to get a 500 from hono (the URL failed when a binding built it), an empty 400, or a 200
  // from the node adapters, depending on the route. RFC 9112 §3.2: an invalid Host gets 400.
  it.each(['1.2.3.256', '1.2.3.4.5', 'exa mple', 'xn--a', 'a@b', 'localhost:99999'])(
    'a Host that cannot form a URL (%s) gets 400 saying so on every route, never 500',
    async (host) => {
      for (const [label, method, path, body] of targets) {
        const r = await rawRequest(
          [
            `${method} ${path} HTTP/1.1`,
            `host: ${host}`,
            'a2a-version: 1.0',
            'content-type: application/json',
          ],
          body,
        );
        expect([label, r.status, r.type]).toEqual([label, 400, 'application/json']);
        if (method !== 'HEAD')
          expect(JSON.parse(r.body)).toEqual({
            error: { code: 400, status: 'INVALID_ARGUMENT', message: 'Invalid Host header', details: [] },
          });
      }
    },
  );

  it('two Host lines get 400 on every route (RFC 9112 §3.2), even when both name this host', async () => {
    for (const [label, method, path, body] of targets) {
      const r = await rawRequest(
        [
          `${method} ${path} HTTP/1.1`,
          'host: 127.0.0.1',
          'Host: 127.0.0.1',
          'a2a-version: 1.0',
          'content-type: application/json',
        ],
        body,
      );
      expect([label, r.status]).toEqual([label, 400]);
    }
  });

  it.each(['127.0.0.1', 'localhost:8080', 'LocalHost', '[::1]:8080'])(
    'a Host that forms a URL (%s) is served on both paths',
    async (host) => {
      const head = ['a2a-version: 1.0', 'content-type: application/json', `host: ${host}`];
      expect((await rawRequest(['POST /a2a/jsonrpc HTTP/1.1', ...head], listTasks)).status).toBe(200);
      expect((await rawRequest(['GET /.well-known/agent-card.json HTTP/1.1', ...head])).status).toBe(200);
    },
  );
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

describe('a body the host does not read closes the connection', () => {
  /** POSTs a chunked body that keeps coming until the answer; the answer's status and Connection header. */
  function endlessPost(path: string): Promise<{ status: number; connection: string | undefined }> {
    const url = new URL(h.url);
    return new Promise((resolve, reject) => {
      const req = request({
        host: url.hostname,
        port: url.port,
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...V },
      });
      const chunk = Buffer.alloc(16 * 1024, 0x20);
      let answered = false;
      req.on('response', (res) => {
        answered = true;
        resolve({ status: res.statusCode!, connection: res.headers.connection });
        res.resume();
        req.destroy();
      });
      req.on('error', (err) => (answered ? undefined : reject(err)));
      const pump = () => {
        while (!answered && req.write(chunk));
        if (!answered) req.once('drain', pump);
      };
      pump();
    });
  }

  it('on the routes hono serves (no such route: 404) as on the bindings (413)', async () => {
    expect(await endlessPost('/nope')).toEqual({ status: 404, connection: 'close' });
    expect(await endlessPost('/.well-known/agent-card.json')).toMatchObject({ connection: 'close' });
    expect(await endlessPost('/a2a/jsonrpc')).toEqual({ status: 413, connection: 'close' });
  });
});
