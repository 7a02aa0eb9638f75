import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { jsonRpcTransport, restTransport, type StreamFrame } from '../../src/connectors/a2a/transports.ts';
import { TaskplaneError } from '../../src/core/errors.ts';
import { SSE_DRAIN_MS } from '../../src/connectors/sse-reader.ts';
import { connectionsInUse } from '../support/http-pool.ts';

/**
 * Event streams without a caller's fetch go over node:http (src/connectors/http-stream.ts): the same
 * frames, errors and abort behaviour as over fetch, against a plain HTTP server that records what it got.
 */
type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(handler: Handler): Promise<string> {
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => handler(req, body, res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const sse = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream' });
const rpcFrame = (id: number, result: unknown) =>
  `id: ${id}\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result })}\n\n`;
const task = { id: 't1', contextId: 'c1', status: { state: 'TASK_STATE_WORKING' } };

async function collect(frames: AsyncIterable<StreamFrame>): Promise<StreamFrame[]> {
  const out: StreamFrame[] = [];
  for await (const f of frames) out.push(f);
  return out;
}

describe('A2A event streams over node:http', () => {
  it('sends the JSON-RPC request with the A2A headers and reads frames split across writes, with their ids', async () => {
    let seen: { headers: IncomingMessage['headers']; body: string; method?: string } | undefined;
    const url = await serve((req, body, res) => {
      seen = { headers: req.headers, body, method: req.method };
      sse(res);
      const first = rpcFrame(1, { task });
      res.write(first.slice(0, 10));
      setImmediate(() => {
        res.write(first.slice(10));
        res.end(rpcFrame(2, { statusUpdate: { taskId: 't1', status: { state: 'TASK_STATE_COMPLETED' } } }));
      });
    });
    const t = jsonRpcTransport({ url, timeoutMs: 5000, headers: { authorization: 'Bearer k' } });
    const frames = await collect(t.stream('SubscribeToTask', { id: 't1' }, new AbortController().signal));
    expect(frames.map((f) => f.eventId)).toEqual(['1', '2']);
    expect(frames[0]!.frame).toEqual({ task });
    expect(seen!.method).toBe('POST');
    expect(seen!.headers['a2a-version']).toBe('1.0');
    expect(seen!.headers.accept).toBe('text/event-stream');
    expect(seen!.headers.authorization).toBe('Bearer k');
    expect(seen!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(seen!.body)).toMatchObject({ method: 'SubscribeToTask', params: { id: 't1' } });
  });

  it('a JSON-RPC error answered instead of a stream is the protocol error, not a transport failure', async () => {
    const url = await serve((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code: -32001, message: 'Task not found' } }));
    });
    const t = jsonRpcTransport({ url, timeoutMs: 5000 });
    const err = await collect(
      t.stream('SubscribeToTask', { id: 'nope' }, new AbortController().signal),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskplaneError);
    expect((err as TaskplaneError).code).toBe('not_found');
  });

  it('an HTTP+JSON error is read from its google.rpc.Status body', async () => {
    const url = await serve((_req, _body, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: {
            code: 404,
            status: 'NOT_FOUND',
            message: 'no such task',
            details: [
              {
                '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
                reason: 'TASK_NOT_FOUND',
                domain: 'a2a-protocol.org',
              },
            ],
          },
        }),
      );
    });
    const t = restTransport({ url, timeoutMs: 5000 });
    const err = await collect(
      t.stream('SubscribeToTask', { id: 'nope' }, new AbortController().signal),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskplaneError);
    expect((err as TaskplaneError).code).toBe('not_found');
  });

  it('a frame that is not JSON fails the stream after the frames before it, even in the same write', async () => {
    const url = await serve((_req, _body, res) => {
      sse(res);
      // Events without data (a comment, a bare id) are skipped, not failures.
      res.end(`: hello\n\n${rpcFrame(1, { task })}id: 2\n\ndata: {not json\n\n${rpcFrame(3, { task })}`);
    });
    for (const t of [jsonRpcTransport({ url, timeoutMs: 5000 }), restTransport({ url, timeoutMs: 5000 })]) {
      const frames: StreamFrame[] = [];
      const err = await (async () => {
        for await (const f of t.stream('SubscribeToTask', { id: 't1' }, new AbortController().signal))
          frames.push(f);
      })().catch((e: unknown) => e);
      expect(frames.map((f) => f.eventId)).toEqual(['1']);
      expect(err).toBeInstanceOf(TaskplaneError);
      expect(err).toMatchObject({ code: 'remote_error', message: 'remote: invalid SSE frame' });
    }
  });

  it('follows a 307 to the new address with the same method and body, as fetch would', async () => {
    let bodyAtTarget = '';
    const target = await serve((_req, body, res) => {
      bodyAtTarget = body;
      sse(res);
      res.end(rpcFrame(1, { task }));
    });
    const url = await serve((_req, _body, res) => {
      res.writeHead(307, { location: target + '/a2a' });
      res.end();
    });
    const t = jsonRpcTransport({ url, timeoutMs: 5000 });
    const frames = await collect(t.stream('SubscribeToTask', { id: 't1' }, new AbortController().signal));
    expect(frames).toHaveLength(1);
    expect(JSON.parse(bodyAtTarget)).toMatchObject({ method: 'SubscribeToTask' });
  });

  it('aborting the signal ends the stream as unavailable and closes the connection', async () => {
    let closed!: () => void;
    const serverSawClose = new Promise<void>((r) => (closed = r));
    const url = await serve((_req, _body, res) => {
      sse(res);
      res.write(rpcFrame(1, { task }));
      res.on('close', () => closed());
    });
    const controller = new AbortController();
    const t = jsonRpcTransport({ url, timeoutMs: 5000 });
    const frames: StreamFrame[] = [];
    const err = await (async () => {
      for await (const f of t.stream('SubscribeToTask', { id: 't1' }, controller.signal)) {
        frames.push(f);
        controller.abort(new Error('stop'));
      }
    })().catch((e: unknown) => e);
    expect(frames).toHaveLength(1);
    expect(err).toBeInstanceOf(TaskplaneError);
    expect((err as TaskplaneError).code).toBe('unavailable');
    await serverSawClose;
  });

  it('a consumer that stops reading early lets go of the connection once the stream had its time to end', async () => {
    let closed = false;
    const url = await serve((_req, _body, res) => {
      sse(res);
      res.write(rpcFrame(1, { task }) + rpcFrame(2, { task }));
      res.on('close', () => (closed = true));
    });
    const t = jsonRpcTransport({ url, timeoutMs: 5000 });
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    try {
      for await (const f of t.stream('SubscribeToTask', { id: 't1' }, new AbortController().signal)) {
        expect(f.eventId).toBe('1');
        break;
      }
      // The server never ends this stream: it is destroyed when the drain time is up, not before.
      const settle = async () => {
        for (const until = performance.now() + 50; performance.now() < until;)
          await new Promise((r) => setImmediate(r));
      };
      await settle();
      vi.advanceTimersByTime(SSE_DRAIN_MS - 1);
      await settle();
      expect(closed).toBe(false);
      vi.advanceTimersByTime(1);
      await vi.waitFor(() => expect(closed).toBe(true));
    } finally {
      vi.useRealTimers();
    }
  });

  it('a stream stopped at its terminal event gives its connection back: the next stream to the agent reuses it', async () => {
    const connections: Socket[] = [];
    const url = await serve((_req, _body, res) => {
      sse(res);
      res.write(rpcFrame(1, { task }));
      res.write(rpcFrame(2, { statusUpdate: { taskId: 't1', status: { state: 'TASK_STATE_COMPLETED' } } }));
      // The server ends the stream a moment after the terminal event, as A2A servers do.
      setTimeout(() => res.end(), 20);
    });
    servers.at(-1)!.on('connection', (socket: Socket) => connections.push(socket));
    const t = jsonRpcTransport({ url, timeoutMs: 5000 });
    for (let round = 0; round < 3; round++) {
      const ids: (string | null)[] = [];
      for await (const f of t.stream('SubscribeToTask', { id: 't1' }, new AbortController().signal)) {
        ids.push(f.eventId);
        if (JSON.stringify(f.frame).includes('TASK_STATE_COMPLETED')) break;
      }
      expect(ids).toEqual(['1', '2']);
      // The connection is back in the pool once the server's end has been read.
      await vi.waitFor(() => expect(connectionsInUse(url)).toBe(0));
    }
    expect(connections).toHaveLength(1);
  });

  it('a refused connection is unavailable and marked not sent; a dropped stream is unavailable', async () => {
    const url = await serve(() => undefined);
    const port = new URL(url).port;
    await new Promise((r) => servers.pop()!.close(r));
    const refused = await collect(
      jsonRpcTransport({ url: `http://127.0.0.1:${port}`, timeoutMs: 5000 }).stream(
        'SubscribeToTask',
        { id: 't1' },
        new AbortController().signal,
      ),
    ).catch((e: unknown) => e);
    expect((refused as TaskplaneError).code).toBe('unavailable');
    expect((refused as TaskplaneError).details).toMatchObject({ notSent: true });

    const dropping = await serve((req, _body, res) => {
      sse(res);
      res.write(rpcFrame(1, { task }));
      setImmediate(() => req.socket.destroy());
    });
    const frames: StreamFrame[] = [];
    const dropped = await (async () => {
      for await (const f of jsonRpcTransport({ url: dropping, timeoutMs: 5000 }).stream(
        'SubscribeToTask',
        { id: 't1' },
        new AbortController().signal,
      ))
        frames.push(f);
    })().catch((e: unknown) => e);
    expect(frames).toHaveLength(1);
    expect((dropped as TaskplaneError).code).toBe('unavailable');
  });

  it('no response head within the timeout is a timeout', async () => {
    const url = await serve(() => undefined); // never answers
    const err = await collect(
      jsonRpcTransport({ url, timeoutMs: 50 }).stream(
        'SubscribeToTask',
        { id: 't1' },
        new AbortController().signal,
      ),
    ).catch((e: unknown) => e);
    expect((err as TaskplaneError).code).toBe('timeout');
  });

  // The consumer is busy elsewhere (no next() pending) when the plane stops, with nothing more written
  // or with frames already parsed ahead of it: either way its next read fails. (An abort that lands
  // after the body ended is covered against the official SDK's server: test/server/targets.test.ts.)
  for (const [ahead, written] of [
    ['nothing', rpcFrame(1, { task })],
    ['frames', rpcFrame(1, { task }) + rpcFrame(2, { task }) + rpcFrame(3, { task })],
  ] as const)
    it(`an abort while nobody is reading ends the stream as unavailable at its next read (${ahead} parsed ahead)`, async () => {
      const url = await serve((_req, _body, res) => {
        sse(res);
        res.write(written);
      });
      const controller = new AbortController();
      const frames = jsonRpcTransport({ url, timeoutMs: 5000 })
        .stream('SubscribeToTask', { id: 't1' }, controller.signal)
        [Symbol.asyncIterator]();
      expect((await frames.next()).value).toMatchObject({ eventId: '1' });
      controller.abort(new Error('plane stopped'));
      await new Promise((r) => setImmediate(r));
      const err = await frames.next().catch((e: unknown) => e);
      expect((err as TaskplaneError).code).toBe('unavailable');
    });

  it('a reader slower than its server gets every frame, in order, as the server writes hundreds', async () => {
    // More frames waiting than the reader parses ahead: it pauses the body, then resumes it as it reads.
    const count = 500;
    const url = await serve((_req, _body, res) => {
      sse(res);
      const update = { statusUpdate: { taskId: 't1', status: { state: 'TASK_STATE_WORKING' } } };
      const write = (from: number) => {
        let batch = '';
        for (let i = from; i < from + 50; i++) batch += rpcFrame(i, update);
        if (from + 50 > count) return void res.end(batch);
        res.write(batch);
        setImmediate(write, from + 50);
      };
      write(1);
    });
    const ids: string[] = [];
    for await (const f of jsonRpcTransport({ url, timeoutMs: 5000 }).stream(
      'SubscribeToTask',
      { id: 't1' },
      new AbortController().signal,
    )) {
      ids.push(f.eventId!);
      await new Promise((r) => setImmediate(r));
    }
    expect(ids).toEqual(Array.from({ length: count }, (_, i) => String(i + 1)));
  });
});
