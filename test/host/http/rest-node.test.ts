import { Agent, request } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../src/core/clock.ts';
import { createHostApp, createHostListener } from '../../../src/host/host-app.ts';
import { A2AError } from '../../../src/protocols/a2a/errors.ts';
import type { A2ARequestHandler, CallContext } from '../../../src/protocols/a2a/handler.ts';
import { restBinding, type RestBindingOptions } from '../../../src/protocols/a2a/rest-binding.ts';
import { restNodeBinding } from '../../../src/host/http/rest-node.ts';
import type { AgentCard } from '../../../src/protocols/a2a/types.ts';
import {
  CallLog,
  Sockets,
  TASK,
  authenticate,
  chunked,
  chunksOf,
  idleStream,
  item,
  openStream,
  sendRaw,
  streamEndingInError,
  untilAborted,
  type Raw,
} from './http-fixtures.ts';

/**
 * The node:http adapter of the HTTP+JSON binding against the web-standard one it stands in for (as
 * jsonrpc-node.test.ts does for JSON-RPC): the same answers byte for byte on every route and error, and
 * what only a socket can show (body limits while streaming, disconnects, keep-alives). Then the host's
 * listener, which sends /a2a/rest to that adapter, against the hono app it used to go through.
 */

const PUSH = { id: 'p1', taskId: 't1', url: 'https://example.com/hook' };

/** Every handler method answers with what it was asked, so a body shows how the request was decoded. */
class StubHandler extends CallLog {
  readonly handler = {
    agentCard: () => ({}) as AgentCard,
    sendMessage: async (req: unknown, ctx: CallContext) => {
      this.seen(ctx);
      return { task: { ...TASK, metadata: { req } } };
    },
    sendStreamingMessage: async (_req: unknown, ctx: CallContext) => {
      this.seen(ctx);
      return streamEndingInError();
    },
    getTask: async (req: { id: string }, ctx: CallContext) => {
      this.seen(ctx);
      if (req.id === 'wait') await untilAborted(ctx.signal);
      if (req.id === 'boom') throw new Error('internal detail the client must not see');
      if (req.id !== 't1') throw new A2AError('TaskNotFoundError', `Task not found: ${req.id}`);
      return { ...TASK, metadata: { req } };
    },
    listTasks: async (req: unknown, ctx: CallContext) => {
      this.seen(ctx);
      return { tasks: [TASK], nextPageToken: JSON.stringify(req), pageSize: 1, totalSize: 1 };
    },
    cancelTask: async (req: unknown, ctx: CallContext) => {
      this.seen(ctx);
      return { ...TASK, status: { state: 'TASK_STATE_CANCELED' }, metadata: { req } };
    },
    subscribeToTask: async (req: { id: string }, ctx: CallContext) => {
      this.seen(ctx);
      if (req.id === 'short')
        return (async function* () {
          yield [item('1')];
          yield [item('2', { statusUpdate: { taskId: 'short', status: { state: 'TASK_STATE_COMPLETED' } } })];
        })();
      return idleStream([item('1')], ctx.signal, () => this.release());
    },
    createTaskPushNotificationConfig: async (req: object, ctx: CallContext) => {
      this.seen(ctx);
      return { ...PUSH, ...req };
    },
    getTaskPushNotificationConfig: async (req: object, ctx: CallContext) => {
      this.seen(ctx);
      return { ...PUSH, ...req };
    },
    listTaskPushNotificationConfigs: async (req: unknown, ctx: CallContext) => {
      this.seen(ctx);
      return { configs: [PUSH], nextPageToken: JSON.stringify(req) };
    },
    deleteTaskPushNotificationConfig: async (_req: unknown, ctx: CallContext) => {
      this.seen(ctx);
    },
    getExtendedAgentCard: async (req: unknown, ctx: CallContext) => {
      this.seen(ctx);
      return { name: 'stub', description: JSON.stringify(req) };
    },
  } as unknown as A2ARequestHandler;
}

const REST = '/a2a/rest';
let stub: StubHandler;
let clock: VirtualClock;
let options: RestBindingOptions;
let internalErrors: unknown[];
const sockets = new Sockets();
let port: number;

beforeEach(async () => {
  stub = new StubHandler();
  clock = new VirtualClock(0);
  internalErrors = [];
  options = {
    handler: stub.handler,
    authenticate,
    clock,
    maxBodyBytes: 64 * 1024,
    basePath: REST,
    onInternalError: (err) => internalErrors.push(err),
  };
  const node = restNodeBinding(options);
  port = await sockets.listen((req, res) => node(req, res));
});
afterEach(() => sockets.closeAll());

/** One request to the server on `to` (the adapter's by default), its target sent as it is. */
function send(
  method: string,
  path: string,
  headers: Record<string, string>,
  chunks: string[] = [],
  agent?: Agent,
  to = port,
): Promise<Raw> {
  return sendRaw({ port: to, path }, method, headers, chunks, agent);
}

const V = { 'A2A-Version': '1.0' };
const J = { 'content-type': 'application/json', ...V };
const message = JSON.stringify({ message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] } });
const COMPARED = ['content-type', 'cache-control', 'x-accel-buffering', 'www-authenticate', 'content-length'];

/** The node adapter's answer to one request, checked against the web adapter's. */
async function expectSameAnswer(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Raw> {
  const web = await restBinding(options)(
    new Request(`http://localhost${path}`, { method, headers, ...(body !== undefined ? { body } : {}) }),
  );
  const node = await send(method, path, headers, body !== undefined ? [body] : []);
  const webBody = await web.text();
  expect(node.status).toBe(web.status);
  // A web Response carries no length; the node adapter writes one with every whole body (checked below).
  for (const name of COMPARED.slice(0, 4))
    expect([name, node.headers[name] ?? null]).toEqual([name, web.headers.get(name)]);
  expect(node.body).toBe(webBody);
  if (node.headers['content-type'] === 'application/a2a+json')
    expect(node.headers['content-length']).toBe(String(Buffer.byteLength(node.body)));
  if (node.status === 204) {
    expect(node.headers['content-length']).toBeUndefined();
    expect(node.headers['transfer-encoding']).toBeUndefined();
  }
  return node;
}

describe('the REST node adapter answers as the web-standard binding does', () => {
  const routes: Array<[string, string, string, Record<string, string>, string?]> = [
    ['SendMessage', 'POST', '/message:send', J, message],
    ['SendMessage under a tenant', 'POST', '/acme/message:send', J, message],
    [
      'SendMessage with a body tenant and a path tenant',
      'POST',
      '/acme/message:send',
      J,
      `{"tenant":"x",${message.slice(1)}`,
    ],
    ['SendStreamingMessage (an SSE stream ending in an error event)', 'POST', '/message:stream', J, message],
    ['GetTask', 'GET', '/tasks/t1', V],
    ['GetTask with historyLength', 'GET', '/tasks/t1?historyLength=3', V],
    ['GetTask under a tenant', 'GET', '/acme/tasks/t1?historyLength=0', V],
    ['GetTask with a percent-encoded id', 'GET', '/tasks/t%31', V],
    ['ListTasks', 'GET', '/tasks', V],
    [
      'ListTasks with filters',
      'GET',
      '/tasks?pageSize=5&pageToken=abc&contextId=c%201&status=TASK_STATE_WORKING&historyLength=2&includeArtifacts=true&statusTimestampAfter=2025-01-01T00:00:00Z',
      V,
    ],
    ['ListTasks with snake_case filters and a + in a value', 'GET', '/tasks?page_size=2&context_id=a+b', V],
    ['ListTasks under a tenant', 'GET', '/acme/tasks?pageSize=1', V],
    ['CancelTask without a body', 'POST', '/tasks/t1:cancel', V],
    ['CancelTask with metadata', 'POST', '/tasks/t1:cancel', J, '{"metadata":{"why":"test"}}'],
    ['SubscribeToTask on GET', 'GET', '/tasks/short:subscribe', V],
    ['SubscribeToTask on POST', 'POST', '/acme/tasks/short:subscribe', V],
    [
      'CreateTaskPushNotificationConfig',
      'POST',
      '/tasks/t1/pushNotificationConfigs',
      J,
      '{"id":"p2","url":"https://example.com/h"}',
    ],
    [
      'CreateTaskPushNotificationConfig with the path task in the body',
      'POST',
      '/acme/tasks/t1/pushNotificationConfigs',
      J,
      '{"taskId":"t1","url":"https://example.com/h"}',
    ],
    ['ListTaskPushNotificationConfigs', 'GET', '/tasks/t1/pushNotificationConfigs?pageSize=2', V],
    ['GetTaskPushNotificationConfig', 'GET', '/tasks/t1/pushNotificationConfigs/p1', V],
    ['DeleteTaskPushNotificationConfig (204)', 'DELETE', '/acme/tasks/t1/pushNotificationConfigs/p1', V],
    ['GetExtendedAgentCard', 'GET', '/extendedAgentCard', V],
    ['GetExtendedAgentCard under a tenant', 'GET', '/acme/extendedAgentCard', V],
    ['a trailing slash and doubled slashes', 'GET', '//tasks//t1/', V],
  ];
  const errors: Array<[string, string, string, Record<string, string>, string?]> = [
    ['an unknown route (404)', 'GET', '/nope', V],
    ['the interface URL itself', 'GET', '', V],
    ['an unknown tenant route', 'GET', '/acme/nope/more', V],
    ['an unknown task verb', 'POST', '/tasks/t1:pause', V],
    ['GET on a POST route (no 405: MethodNotFound, as before)', 'GET', '/message:send', V],
    ['DELETE on a task', 'DELETE', '/tasks/t1', V],
    ['PUT on the task list', 'PUT', '/tasks', J, '{}'],
    ['OPTIONS', 'OPTIONS', '/tasks/t1', V],
    ['an unknown task (404)', 'GET', '/tasks/x', V],
    ['an internal error (no detail leaks)', 'GET', '/tasks/boom', V],
    ['malformed JSON', 'POST', '/message:send', J, '{"message":'],
    ['a JSON array body', 'POST', '/message:send', J, '[1]'],
    ['an empty body', 'POST', '/message:send', J, ''],
    ['a bad message', 'POST', '/message:send', J, '{"message":{"parts":"x"}}'],
    ['a bad historyLength', 'GET', '/tasks/t1?historyLength=abc', V],
    ['a bad pageSize', 'GET', '/tasks?pageSize=-1', V],
    ['a bad status filter', 'GET', '/tasks?status=NOPE', V],
    ['bad percent-encoding in the path', 'GET', '/tasks/%E0%A4%A', V],
    [
      'a push config for another task',
      'POST',
      '/tasks/t1/pushNotificationConfigs',
      J,
      '{"taskId":"t2","url":"https://example.com/h"}',
    ],
    [
      'a push config for another task (snake_case)',
      'POST',
      '/tasks/t1/pushNotificationConfigs',
      J,
      '{"task_id":"t2","url":"https://example.com/h"}',
    ],
    ['no version', 'GET', '/tasks/t1', {}],
    ['version 2.0', 'GET', '/tasks/t1', { 'A2A-Version': '2.0' }],
    ['version 1.0.3', 'GET', '/tasks/t1', { 'A2A-Version': '1.0.3' }],
    ['version " 1.0 "', 'GET', '/tasks/t1', { 'A2A-Version': ' 1.0 ' }],
    ['an empty version header', 'GET', '/tasks/t1', { 'A2A-Version': '' }],
    ['the version in the query', 'GET', '/tasks/t1?A2A-Version=1.0&historyLength=1', {}],
    ['a 2.0 query', 'GET', '/tasks?A2A-Version=2.0', {}],
    ['a header over the query', 'GET', '/tasks/t1?A2A-Version=1.0', { 'A2A-Version': '0.3' }],
    ['bad JSON and no version (the body is read first)', 'POST', '/message:send', {}, '{'],
    ['a refused credential (401)', 'GET', '/tasks/t1', { ...V, authorization: 'Bearer nope' }],
    [
      'a refused credential on a stream',
      'POST',
      '/message:stream',
      { ...J, authorization: 'Bearer nope' },
      message,
    ],
    ['an oversized body (413)', 'POST', '/message:send', J, JSON.stringify({ pad: 'y'.repeat(70_000) })],
  ];

  it.each([...routes, ...errors])('%s', async (_label, method, path, headers, body) => {
    await expectSameAnswer(method, `${REST}${path}`, headers, body);
  });

  it.each([
    ['a quote the parser percent-encodes', '/tasks/a"b'],
    ['braces', '/tasks/{t1}'],
    ['a dot segment', '/tasks/./t1'],
    ['a double-dot segment', '/tasks/x/../t1'],
    ['an encoded dot segment', '/tasks/x/%2E%2e/t1'],
    ['a fragment', '/tasks/t1#frag'],
    ['a query with a quote', '/tasks?contextId=a"b'],
  ])('a target URL parsing rewrites: %s', async (_label, path) => {
    await expectSameAnswer('GET', `${REST}${path}`, V);
  });

  it('hands the handler the same call context', async () => {
    const headers = {
      ...V,
      authorization: 'Bearer k',
      'A2A-Extensions': ' urn:a, urn:b,',
      'Last-Event-ID': '7',
    };
    await restBinding(options)(new Request(`http://localhost${REST}/acme/tasks/t1`, { headers }));
    await send('GET', `${REST}/acme/tasks/t1`, headers);
    await restBinding(options)(new Request(`http://localhost${REST}/tasks/t1`, { headers: V }));
    await send('GET', `${REST}/tasks/t1`, V);
    const [web, node, webPlain, nodePlain] = stub.contexts.map(
      ({ owner, tenant, extensions, lastEventId }) => ({ owner, tenant, extensions, lastEventId }),
    );
    expect(web).toEqual({ owner: 'alice', tenant: 'acme', extensions: ['urn:a', 'urn:b'], lastEventId: '7' });
    expect(node).toEqual(web);
    expect(webPlain).toEqual({
      owner: 'anonymous',
      tenant: undefined,
      extensions: [],
      lastEventId: undefined,
    });
    expect(nodePlain).toEqual(webPlain);
  });

  it('reports internal errors on both adapters, never to the client', async () => {
    const node = await expectSameAnswer('GET', `${REST}/tasks/boom`, V);
    expect(node.status).toBe(500);
    expect(node.body).not.toContain('internal detail');
    expect(internalErrors).toHaveLength(2);
  });
});

describe('the REST node adapter on a socket', () => {
  const big = JSON.stringify({ pad: 'z'.repeat(100_000) });

  it('an oversized chunked body → 413 while it streams, and the connection is closed instead of read to its end', async () => {
    const agent = sockets.keepAliveAgent();
    const chunks = chunked(big);
    const refused = await send('POST', `${REST}/message:send`, J, chunks, agent);
    expect(refused.status).toBe(413);
    expect(refused.headers.connection).toBe('close');
    expect(JSON.parse(refused.body).error).toMatchObject({
      code: 413,
      details: [{ reason: 'PAYLOAD_TOO_LARGE' }],
    });
    const next = await send('GET', `${REST}/tasks/t1`, V, [], agent);
    expect(next.reusedSocket).toBe(false);
    expect(JSON.parse(next.body).id).toBe('t1');
  });

  it('an oversized declared body → 413 unread, and the connection is closed', async () => {
    const agent = sockets.keepAliveAgent();
    const headers = { ...J, 'content-length': String(Buffer.byteLength(big)) };
    const refused = await send('POST', `${REST}/message:send`, headers, [big], agent);
    expect(refused.status).toBe(413);
    expect(refused.headers.connection).toBe('close');
    expect(stub.contexts).toHaveLength(0);
    const next = await send('GET', `${REST}/tasks/t1`, V, [], agent);
    expect(next.reusedSocket).toBe(false);
    expect(next.status).toBe(200);
  });

  it('a body on a route that takes none is not read: the 404 closes the connection', async () => {
    const agent = sockets.keepAliveAgent();
    const refused = await send('POST', `${REST}/nope`, J, chunked(big), agent);
    expect(refused.status).toBe(404);
    expect(refused.headers.connection).toBe('close');
    const next = await send('GET', `${REST}/tasks/t1`, V, [], agent);
    expect(next.reusedSocket).toBe(false);
    expect(next.status).toBe(200);
  });

  it('a client that goes away during a call aborts its signal', async () => {
    const req = request({ host: '127.0.0.1', port, path: `${REST}/tasks/wait`, headers: V });
    req.on('error', () => undefined);
    req.end();
    await stub.called(1);
    const signal = stub.contexts[0]!.signal;
    const aborted = new Promise<void>((r) => signal.addEventListener('abort', () => r()));
    req.destroy();
    await aborted;
    // The reason hono gives for the same event: handlers see one reason whichever adapter served them.
    expect(signal.reason).toBe('Client connection prematurely closed.');
  });

  it.each(['GET', 'POST'])(
    'an idle %s :subscribe stream gets a keep-alive comment every 15 s and a disconnect releases it (virtual clock)',
    async (method) => {
      const res = await openStream({ port, path: `${REST}/acme/tasks/idle:subscribe` }, method, V);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/event-stream');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['x-accel-buffering']).toBe('no');
      const nextChunk = chunksOf(res);
      expect(await nextChunk(1)).toBe(`id: 1\ndata: ${JSON.stringify({ task: TASK })}\n\n`);
      expect(stub.contexts[0]!.tenant).toBe('acme');
      await clock.advance(15_000);
      expect(await nextChunk(2)).toBe(': keep-alive\n\n');
      const released = stub.releasedOne();
      res.destroy();
      await released;
      expect(stub.released).toBe(1);
    },
  );
});

describe('the host listener sends /a2a/rest to the node adapter, answering as the hono app did', () => {
  let hostPort: number;
  let honoPort: number;

  beforeEach(async () => {
    const hostOptions = {
      handler: stub.handler,
      authenticate,
      clock,
      logger: pino({ level: 'silent' }),
      maxBodyBytes: 64 * 1024,
    };
    hostPort = await sockets.listen(createHostListener(hostOptions));
    const hono = getRequestListener(createHostApp(hostOptions).fetch);
    honoPort = await sockets.listen((req, res) => void hono(req, res));
  });

  it.each<[string, string, string, Record<string, string>, string?]>([
    ['GetTask', 'GET', '/tasks/t1?historyLength=2', V],
    ['GetTask under a tenant', 'GET', '/acme/tasks/t1', V],
    ['ListTasks', 'GET', '/tasks?pageSize=5&status=TASK_STATE_WORKING', V],
    ['SendMessage', 'POST', '/message:send', J, message],
    ['a stream', 'POST', '/message:stream', J, message],
    ['SubscribeToTask', 'GET', '/tasks/short:subscribe', V],
    ['DeleteTaskPushNotificationConfig (204)', 'DELETE', '/tasks/t1/pushNotificationConfigs/p1', V],
    ['the interface URL with a query', 'GET', '?x=1', V],
    ['an unknown route', 'GET', '/nope', V],
    ['malformed JSON', 'POST', '/message:send', J, '{'],
    ['no version', 'GET', '/tasks/t1', {}],
    ['a refused credential', 'GET', '/tasks/t1', { ...V, authorization: 'Bearer nope' }],
    ['an oversized body', 'POST', '/message:send', J, JSON.stringify({ pad: 'y'.repeat(70_000) })],
    ['HEAD (hono: the GET route without a body)', 'HEAD', '/tasks/t1', V],
    ['a dot segment out of the interface URL', 'GET', '/../jsonrpc', V],
    ['an encoded dot segment', 'GET', '/tasks/%2e%2e/%2e%2e/tasks/t1', V],
    ['a backslash (hono: 400)', 'GET', '/tasks\\t1', V],
    ['a quote', 'GET', '/tasks/a"b', V],
    ['an uppercase Host', 'GET', '/tasks/t1', { ...V, host: 'LocalHost:8080' }],
    ['an IPv6 Host', 'GET', '/tasks/t1', { ...V, host: '[::1]:8080' }],
  ])('%s', async (_label, method, path, headers, body) => {
    const chunks = body !== undefined ? [body] : [];
    const before = await send(method, `${REST}${path}`, headers, chunks, undefined, honoPort);
    const after = await send(method, `${REST}${path}`, headers, chunks, undefined, hostPort);
    expect(after.status).toBe(before.status);
    // hono gives a stream that has ended by its second read a Content-Length; the adapter always
    // streams SSE chunked (as the JSON-RPC adapter does). The bytes of the body are the same.
    const sse = before.headers['content-type'] === 'text/event-stream';
    for (const name of sse ? COMPARED.slice(0, 4) : COMPARED)
      expect([name, after.headers[name]]).toEqual([name, before.headers[name]]);
    expect(after.body).toBe(before.body);
  });

  // The listener refuses these itself, on every path, with a body saying why (host-app.ts `refuseHost`).
  it.each([
    ['a malformed Host', 'a b'],
    ['a Host with a port out of range', 'localhost:99999'],
  ])('%s gets 400 as from hono, with a body naming the Host', async (_label, host) => {
    const before = await send('GET', `${REST}/tasks/t1`, { ...V, host }, [], undefined, honoPort);
    const after = await send('GET', `${REST}/tasks/t1`, { ...V, host }, [], undefined, hostPort);
    expect(before.status).toBe(400);
    expect(after.status).toBe(400);
    expect(after.headers['content-type']).toBe('application/json');
    expect(JSON.parse(after.body)).toEqual({
      error: { code: 400, status: 'INVALID_ARGUMENT', message: 'Invalid Host header', details: [] },
    });
    expect(stub.contexts).toHaveLength(0);
  });

  it('a prefix of the interface URL is not under it', async () => {
    const r = await send('GET', `${REST}x/tasks/t1`, V, [], undefined, hostPort);
    expect(r.status).toBe(404);
    expect(r.body).toBe('404 Not Found');
    expect(stub.contexts).toHaveLength(0);
  });
});
