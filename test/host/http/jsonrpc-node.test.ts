import { Agent, request } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../src/core/clock.ts';
import { A2AError } from '../../../src/protocols/a2a/errors.ts';
import type { A2ARequestHandler, CallContext } from '../../../src/protocols/a2a/handler.ts';
import { jsonRpcBinding, type BindingOptions } from '../../../src/protocols/a2a/jsonrpc-binding.ts';
import { jsonRpcNodeBinding } from '../../../src/host/http/jsonrpc-node.ts';
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
 * The node:http adapter of the JSON-RPC binding against the web-standard one it stands in for: the same
 * answers byte for byte, and what only a socket can show (body limits while streaming, disconnects,
 * keep-alives, backpressure).
 */

class StubHandler extends CallLog {
  pulled = 0;

  readonly handler = {
    agentCard: () => ({}) as AgentCard,
    getTask: async (req: { id: string }, ctx: CallContext) => {
      this.seen(ctx);
      if (req.id === 'wait') await untilAborted(ctx.signal);
      if (req.id !== 't1') throw new A2AError('TaskNotFoundError', `Task not found: ${req.id}`);
      return TASK;
    },
    sendMessage: async (_req: unknown, ctx: CallContext) => {
      this.seen(ctx);
      return { task: TASK };
    },
    sendStreamingMessage: async (_req: unknown, ctx: CallContext) => {
      this.seen(ctx);
      return streamEndingInError();
    },
    subscribeToTask: async (req: { id: string }, ctx: CallContext) => {
      this.seen(ctx);
      if (req.id === 'flood') {
        const big = { task: { ...TASK, metadata: { pad: 'x'.repeat(64 * 1024) } } };
        const pull = () => this.pulled++;
        return (async function* () {
          for (let i = 0; i < 256; i++) {
            pull();
            yield [item(String(i), big)];
          }
        })();
      }
      return idleStream([item('1')], ctx.signal, () => this.release());
    },
  } as unknown as A2ARequestHandler;
}

let stub: StubHandler;
let clock: VirtualClock;
let options: BindingOptions;
let base: string;
const sockets = new Sockets();

beforeEach(async () => {
  stub = new StubHandler();
  clock = new VirtualClock(0);
  options = { handler: stub.handler, authenticate, clock, maxBodyBytes: 64 * 1024 };
  const node = jsonRpcNodeBinding(options);
  base = `http://127.0.0.1:${await sockets.listen((req, res) => node(req, res))}/a2a/jsonrpc`;
});
afterEach(() => sockets.closeAll());

/** One POST to the binding over a real socket (see `sendRaw`). */
function send(query: string, headers: Record<string, string>, chunks: string[], agent?: Agent): Promise<Raw> {
  return sendRaw(`${base}${query}`, 'POST', headers, chunks, agent);
}

const rpc = (method: string, params?: unknown, id: unknown = 1) =>
  JSON.stringify({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) });
const V = { 'A2A-Version': '1.0' };

describe('the node adapter answers as the web-standard binding does', () => {
  const cases: Array<[string, string, Record<string, string>, string]> = [
    ['GetTask', '', V, rpc('GetTask', { id: 't1' })],
    ['an unknown task', '', V, rpc('GetTask', { id: 'x' }, 'a')],
    [
      'SendMessage with a tenant',
      '',
      V,
      rpc('SendMessage', {
        tenant: 'acme',
        message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] },
      }),
    ],
    ['malformed JSON', '', V, '{"jsonrpc":'],
    ['an empty body', '', V, ''],
    ['a batch', '', V, `[${rpc('GetTask', { id: 't1' })}]`],
    ['an unknown method', '', V, rpc('tasks/get', { id: 't1' })],
    ['an inherited method name', '', V, rpc('constructor', {})],
    ['array params', '', V, rpc('GetTask', [1])],
    ['no version', '', {}, rpc('GetTask', { id: 't1' })],
    ['version 2.0', '', { 'A2A-Version': '2.0' }, rpc('GetTask', { id: 't1' })],
    ['version 1.0.3', '', { 'A2A-Version': '1.0.3' }, rpc('GetTask', { id: 't1' })],
    ['version " 1.0 "', '', { 'A2A-Version': ' 1.0 ' }, rpc('GetTask', { id: 't1' })],
    ['the version in the query', '?A2A-Version=1.0', {}, rpc('GetTask', { id: 't1' })],
    ['a 2.0 query', '?A2A-Version=2.0', {}, rpc('GetTask', { id: 't1' })],
    ['a header over the query', '?A2A-Version=1.0', { 'A2A-Version': '0.3' }, rpc('GetTask', { id: 't1' })],
    ['a refused credential', '', { ...V, authorization: 'Bearer nope' }, rpc('GetTask', { id: 't1' })],
    ['an oversized body', '', V, rpc('SendMessage', { pad: 'y'.repeat(70_000) })],
    [
      'a stream',
      '',
      V,
      rpc(
        'SendStreamingMessage',
        { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'hi' }] } },
        's',
      ),
    ],
  ];

  it.each(cases)('%s', async (_label, query, headers, body) => {
    const web = await jsonRpcBinding(options)(
      new Request(`http://localhost/a2a/jsonrpc${query}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      }),
    );
    const node = await send(query, { 'content-type': 'application/json', ...headers }, [body]);
    expect(node.status).toBe(web.status);
    for (const name of ['content-type', 'cache-control', 'x-accel-buffering', 'www-authenticate'])
      expect([name, node.headers[name] ?? null]).toEqual([name, web.headers.get(name)]);
    expect(node.body).toBe(await web.text());
    if (web.headers.get('content-type') === 'application/json')
      expect(node.headers['content-length']).toBe(String(Buffer.byteLength(node.body)));
  });

  it('hands the handler the same call context', async () => {
    const headers = {
      ...V,
      authorization: 'Bearer k',
      'A2A-Extensions': ' urn:a, urn:b,',
      'Last-Event-ID': '7',
    };
    const body = rpc('GetTask', { id: 't1', tenant: 'acme' });
    await jsonRpcBinding(options)(
      new Request('http://localhost/a2a/jsonrpc', { method: 'POST', headers, body }),
    );
    await send('', headers, [body]);
    const [web, node] = stub.contexts.map(({ owner, tenant, extensions, lastEventId }) => ({
      owner,
      tenant,
      extensions,
      lastEventId,
    }));
    expect(web).toEqual({ owner: 'alice', tenant: 'acme', extensions: ['urn:a', 'urn:b'], lastEventId: '7' });
    expect(node).toEqual(web);
  });
});

describe('the node adapter on a socket', () => {
  const big = rpc('SendMessage', { pad: 'z'.repeat(100_000) });

  it('an oversized chunked body → 413 while it streams, and the connection is closed instead of read to its end', async () => {
    const agent = sockets.keepAliveAgent();
    const chunks = chunked(big);
    const refused = await send('', V, chunks, agent);
    expect(refused.status).toBe(413);
    expect(refused.headers.connection).toBe('close');
    expect(JSON.parse(refused.body).error).toMatchObject({
      code: -32600,
      data: [{ reason: 'PAYLOAD_TOO_LARGE' }],
    });
    const next = await send('', V, [rpc('GetTask', { id: 't1' })], agent);
    expect(next.reusedSocket).toBe(false);
    expect(JSON.parse(next.body).result.id).toBe('t1');
  });

  it('an oversized declared body → 413 unread, and the connection is closed', async () => {
    const agent = sockets.keepAliveAgent();
    const refused = await send('', { ...V, 'content-length': String(Buffer.byteLength(big)) }, [big], agent);
    expect(refused.status).toBe(413);
    expect(refused.headers.connection).toBe('close');
    expect(stub.contexts).toHaveLength(0);
    const next = await send('', V, [rpc('GetTask', { id: 't1' })], agent);
    expect(next.reusedSocket).toBe(false);
    expect(next.status).toBe(200);
  });

  it('a client that goes away during a call aborts its signal', async () => {
    const req = request(base, { method: 'POST', headers: V });
    req.on('error', () => undefined);
    req.end(rpc('GetTask', { id: 'wait' }));
    await stub.called(1);
    const signal = stub.contexts[0]!.signal;
    const aborted = new Promise<void>((r) => signal.addEventListener('abort', () => r()));
    req.destroy();
    await aborted;
    // The reason hono gives for the same event: handlers see one reason whichever adapter served them.
    expect(signal.reason).toBe('Client connection prematurely closed.');
  });

  it('an idle stream gets a keep-alive comment every 15 s and a disconnect releases it (virtual clock)', async () => {
    const res = await openStream(base, 'POST', V, rpc('SubscribeToTask', { id: 'idle' }, 'sub'));
    expect(res.headers['content-type']).toBe('text/event-stream');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['x-accel-buffering']).toBe('no');
    const nextChunk = chunksOf(res);
    expect(await nextChunk(1)).toMatch(/^id: 1\ndata: \{"jsonrpc":"2.0","id":"sub","result":\{"task"/);
    await clock.advance(15_000);
    expect(await nextChunk(2)).toBe(': keep-alive\n\n');
    const released = stub.releasedOne();
    res.destroy();
    await released;
    expect(stub.released).toBe(1);
  });

  it('a slow SSE reader holds the source back (the pump waits for drain)', async () => {
    const res = await openStream(base, 'POST', V, rpc('SubscribeToTask', { id: 'flood' }));
    res.pause();
    // Poll the in-process counter until the pump stalls (bounded; no event says "waiting for drain").
    let last = -1;
    for (let stable = 0; stable < 5;) {
      await new Promise((r) => setTimeout(r, 20));
      stable = stub.pulled === last ? stable + 1 : 0;
      last = stub.pulled;
    }
    // 256 frames of 64 KiB are 16 MiB; loopback socket buffers hold a few MiB at most.
    expect(stub.pulled).toBeLessThan(256);
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => (text += c));
    res.resume();
    await new Promise((r) => res.on('end', r));
    expect(stub.pulled).toBe(256);
    expect(text.split('\n\n').length - 1).toBe(256);
  });
});
