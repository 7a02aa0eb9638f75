import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { TaskArtifactUpdateEvent } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor } from '@a2a-js/sdk/server';
import { A2AConnector, readAgentCard } from '../../src/connectors/a2a/a2a-connector.ts';
import type { RemoteSnapshot } from '../../src/connectors/connector.ts';
import { jsonRpcTransport, restTransport } from '../../src/connectors/a2a/transports.ts';
import { rpcCall } from '../../src/connectors/mcp/rpc.ts';
import { OpenAIConnector } from '../../src/connectors/openai/openai-connector.ts';
import { ClaudeConnector } from '../../src/connectors/claude/claude-connector.ts';
import { MAX_REMOTE_MESSAGE_BYTES } from '../../src/connectors/remote-limits.ts';
import { TaskplaneError } from '../../src/core/errors.ts';
import {
  publishStatus,
  publishSubmitted,
  startSdkA2APeer,
  type SdkA2APeer,
} from '../support/sdk-a2a-peer.ts';

/**
 * What the plane reads of one remote answer is bounded (src/connectors/remote-limits.ts): a JSON answer
 * or an event over MAX_REMOTE_MESSAGE_BYTES is given up as it passes the limit, the connection closed,
 * and the call fails `unavailable` (retryable: the remote may have done the work, so it is never an
 * outcome). Against plain HTTP servers that send more than the limit, with and without Content-Length,
 * and against the official @a2a-js/sdk server holding a task larger than the limit.
 */
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** What a server saw of one answer: the bytes it wrote, and the client closing the connection. */
interface Sent {
  written: number;
  closed: Promise<void>;
}

async function serve(answer: (req: IncomingMessage, res: ServerResponse, sent: Sent) => void): Promise<{
  url: string;
  sent: Sent[];
}> {
  const sent: Sent[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      let closed!: () => void;
      const s: Sent = { written: 0, closed: new Promise((r) => (closed = r)) };
      res.on('close', () => closed());
      sent.push(s);
      answer(req, res, s);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sent };
}

const OVER = MAX_REMOTE_MESSAGE_BYTES + 1024 * 1024;
const MID = 6 * 1024 * 1024;
const MiB = 'x'.repeat(1024 * 1024);

/** Writes `prefix`, then MiB after MiB up to `total` bytes, waiting for drain: stops once the client closes. */
function writeMiBs(res: ServerResponse, sent: Sent, prefix: string, total: number, suffix = ''): void {
  res.write(prefix);
  sent.written += prefix.length;
  const more = () => {
    while (sent.written < total && !res.destroyed) {
      sent.written += MiB.length;
      if (!res.write(MiB)) return void res.once('drain', more);
    }
    if (!res.destroyed) res.end(suffix);
  };
  more();
}

/** Writes `count` frames, waiting for drain, then `end`. */
function writeFrames(res: ServerResponse, count: number, frame: (i: number) => string, end = ''): void {
  let i = 0;
  const more = () => {
    while (i < count) if (!res.write(frame(++i))) return void res.once('drain', more);
    res.end(end);
  };
  more();
}

/** What a stream gave before it failed, and its failure. */
async function readUntilFailure<T>(stream: AsyncIterable<T>): Promise<{ items: T[]; err: unknown }> {
  const items: T[] = [];
  try {
    for await (const item of stream) items.push(item);
  } catch (err) {
    return { items, err };
  }
  return { items, err: undefined };
}

function expectTooLarge(err: unknown): void {
  expect(err).toBeInstanceOf(TaskplaneError);
  expect((err as TaskplaneError).code).toBe('unavailable');
  expect((err as TaskplaneError).retryable).toBe(true);
  expect((err as TaskplaneError).message).toContain(`over ${MAX_REMOTE_MESSAGE_BYTES} bytes`);
}

const never = () => new AbortController().signal;

/**
 * A server answering JSON of OVER bytes (`open` + filler + `close`), and `call` made to it: it must fail
 * as too large, and the server must see its connection closed. `declared`: the answer says its length
 * and sends only `open`, waiting; the call must fail from the Content-Length alone (or it would wait).
 */
async function refusedJson(
  open: string,
  close: string,
  call: (url: string) => Promise<unknown>,
  declared = false,
) {
  const { url, sent } = await serve((_req, res, s) => {
    if (declared) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(OVER) });
      res.write(open);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    writeMiBs(res, s, open, OVER, close);
  });
  expectTooLarge(await call(url).catch((e: unknown) => e));
  await sent[0]!.closed;
}

describe('a remote answer over the limit', () => {
  for (const declared of [true, false])
    it(`a JSON-RPC answer is given up ${declared ? 'at once by its Content-Length' : 'as it passes the limit'}`, () =>
      refusedJson(
        '{"jsonrpc":"2.0","id":1,"result":{"id":"t1","x":"',
        '"}}',
        (url) => jsonRpcTransport({ url, timeoutMs: 10_000 }).call('GetTask', { id: 't1' }, never()),
        declared,
      ));

  it('an HTTP+JSON answer is given up as it passes the limit', () =>
    refusedJson('{"id":"t1","x":"', '"}', (url) =>
      restTransport({ url, timeoutMs: 10_000 }).call('GetTask', { id: 't1' }, never()),
    ));

  it('an event that does not end within the limit fails the stream after the frames before it, and closes it', async () => {
    const { url, sent } = await serve((_req, res, s) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const first = `id: 1\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result: { task: { id: 't1', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } } } })}\n\n`;
      writeMiBs(res, s, `${first}data: {"x":"`, OVER, '"}\n\n');
    });
    const { items: frames, err } = await readUntilFailure(
      jsonRpcTransport({ url, timeoutMs: 10_000 }).stream('SubscribeToTask', { id: 't1' }, never()),
    );
    expect(frames.map((f) => f.eventId)).toEqual(['1']);
    expectTooLarge(err);
    expect((err as Error).message).toContain('without ending an event');
    await sent[0]!.closed;
  });

  it('many events each within the limit are all read, however long the stream', async () => {
    // The bound is per event: a stream that keeps ending its events is read to its end.
    const frame = (i: number) =>
      `id: ${i}\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result: { statusUpdate: { taskId: 't1', status: { state: 'TASK_STATE_WORKING', message: { parts: [{ text: MiB }] } } } } })}\n\n`;
    const count = Math.ceil(OVER / MiB.length) + 2;
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      writeFrames(res, count, frame);
    });
    let n = 0;
    for await (const f of jsonRpcTransport({ url, timeoutMs: 10_000 }).stream(
      'SubscribeToTask',
      { id: 't1' },
      never(),
    ))
      if (f.eventId === String(n + 1)) n++;
    expect(n).toBe(count);
  });

  it('an agent card is given up as it passes the limit', () =>
    refusedJson('{"name":"', '"}', (url) => readAgentCard(url, never())));

  it('an MCP answer is given up as it passes the limit', () =>
    refusedJson('{"jsonrpc":"2.0","id":1,"result":{"x":"', '"}}', (url) =>
      rpcCall(
        { url, headers: {}, timeoutMs: 10_000, fetch },
        'tasks/get',
        { taskId: 't1' },
        { protocolVersion: '2025-11-25', modern: false },
        never(),
      ),
    ));
});

describe('against the official @a2a-js/sdk server, a task with an artifact over the limit', () => {
  // The SDK agent works, then publishes one artifact larger than the limit, and completes. Its server
  // sends that artifact whole: in one stream event, and in every answer that returns the task.
  let peer: SdkA2APeer;
  // Asked `mid`, the artifact is 6 MiB instead: under the limit, over @grpc/grpc-js's default 4 MiB.
  const executor: AgentExecutor = {
    async execute(ctx, bus) {
      publishSubmitted(ctx, bus);
      publishStatus(ctx, bus, 'TASK_STATE_WORKING');
      const mid = ctx.userMessage.parts.some((p) => p.content?.$case === 'text' && p.content.value === 'mid');
      bus.publish(
        AgentEvent.artifactUpdate(
          TaskArtifactUpdateEvent.fromJSON({
            taskId: ctx.taskId,
            contextId: ctx.contextId,
            artifact: { artifactId: 'big', parts: [{ text: 'x'.repeat(mid ? MID : OVER) }] },
            lastChunk: true,
          }),
        ),
      );
      publishStatus(ctx, bus, 'TASK_STATE_COMPLETED');
      bus.finished();
    },
    async cancelTask(_taskId, bus) {
      bus.finished();
    },
  };
  beforeAll(async () => {
    peer = await startSdkA2APeer({ name: 'sdk peer, large artifact', executor });
  });
  afterAll(async () => {
    await peer?.close();
  });

  for (const binding of ['JSONRPC', 'HTTP+JSON'] as const)
    it(`over ${binding}: the stream fails at that event after the ones before it, and reading the task fails too`, async () => {
      const c = await A2AConnector.connect({ target: 'peer', baseUrl: peer.base, preferBinding: binding });
      const { items: seen, err } = await readUntilFailure(
        c.startStream!(
          { envelopeId: 'e1', messageId: `big-${binding}-${Date.now()}`, contextId: null, input: 'go' },
          never(),
        ),
      );
      expectTooLarge(err);
      expect(seen.map((x) => x.state)).toEqual(['accepted', 'running']);
      // The task is done on the agent, but no answer that says so can be read: never an outcome.
      expectTooLarge(await c.get(seen[0]!.remoteId, never()).catch((e: unknown) => e));
    });

  it('over gRPC: a message past the limit is refused as unavailable; one between 4 MiB and the limit reads whole', async () => {
    const c = await A2AConnector.connect({ target: 'peer', baseUrl: peer.base, preferBinding: 'GRPC' });
    const err = await c
      .start({ envelopeId: 'e2', messageId: `big-grpc-${Date.now()}`, contextId: null, input: 'go' }, never())
      .then((snap) => c.get(snap.remoteId, never()))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskplaneError);
    expect((err as TaskplaneError).code).toBe('unavailable');
    // 8: RESOURCE_EXHAUSTED, from the client's receive limit, set to the same 16 MiB.
    expect((err as TaskplaneError).message).toContain('gRPC 8 ');
    expect((err as TaskplaneError).message).toContain(`vs ${MAX_REMOTE_MESSAGE_BYTES}`);
    // Past @grpc/grpc-js's own default of 4 MiB, as over HTTP: read, not refused.
    const started = await c.start(
      { envelopeId: 'e3', messageId: `mid-grpc-${Date.now()}`, contextId: null, input: 'mid' },
      never(),
    );
    const task = await vi.waitFor(async () => {
      const t = await c.get(started.remoteId, never());
      expect(t.state).toBe('succeeded');
      return t;
    });
    expect(String(task.artifacts?.[0]?.content)).toHaveLength(MID);
  });
});

/**
 * The OpenAI and Anthropic connectors read through the vendors' SDKs, which bound nothing: their fetch
 * is bounded the same way (boundedFetch), and an SDK's failed parse comes out as the same error.
 */
describe("the vendors' SDKs read within the same bounds", () => {
  const openai = (url: string) =>
    new OpenAIConnector({ target: 'gpt', baseUrl: `${url}/v1`, apiKey: 'sk', model: 'm', maxRetries: 0 });
  const claude = (url: string) =>
    new ClaudeConnector({
      target: 'claude',
      baseUrl: url,
      apiKey: 'sk-ant',
      agentId: 'agent_1',
      environmentId: 'env_1',
      maxRetries: 0,
    });
  const start = { envelopeId: 'e', messageId: 'm', contextId: 'c', input: 'go' };

  for (const declared of [true, false]) {
    it(`OpenAI: a response read is given up ${declared ? 'at once by its Content-Length' : 'as it passes the limit'}`, () =>
      refusedJson(
        '{"id":"resp_1","object":"response","x":"',
        '"}',
        (url) => openai(url).get('resp_1', never()),
        declared,
      ));

    it(`Anthropic: a session create is given up ${declared ? 'at once by its Content-Length' : 'as it passes the limit'}`, () =>
      refusedJson(
        '{"id":"sesn_1","type":"session","x":"',
        '"}',
        (url) => claude(url).start(start, never()),
        declared,
      ));
  }

  /** An OpenAI create stream: `response.created` naming resp_1, then `tail` (each event within `frame`). */
  function createdThen(res: ServerResponse, s: Sent, tail: (res: ServerResponse, s: Sent) => void): void {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const response = { id: 'resp_1', object: 'response', status: 'queued', created_at: 1, metadata: {} };
    res.write(
      `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', sequence_number: 0, response })}\n\n`,
    );
    tail(res, s);
  }

  it('OpenAI: a create stream whose next event does not end within the limit fails after the events before it', async () => {
    const { url, sent } = await serve((_req, res, s) =>
      createdThen(res, s, () =>
        writeMiBs(res, s, 'event: response.in_progress\ndata: {"x":"', OVER, '"}\n\n'),
      ),
    );
    const { items: seen, err } = await readUntilFailure(openai(url).startStream!(start, never()));
    expect(seen.map((x) => x.remoteId)).toEqual(['resp_1']);
    expectTooLarge(err);
    expect((err as Error).message).toContain('without ending an event');
    await sent[0]!.closed;
  });

  it('OpenAI: a create stream of many events each within the limit is read to its end', async () => {
    const count = Math.ceil(OVER / MiB.length) + 2;
    const { url } = await serve((_req, res, s) =>
      createdThen(res, s, () => {
        const done = {
          id: 'resp_1',
          object: 'response',
          status: 'completed',
          created_at: 1,
          completed_at: 2,
          metadata: {},
          output: [],
        };
        // CRLF line ends here: an event ends at any kind of empty line.
        writeFrames(
          res,
          count,
          (i) =>
            `event: response.output_text.delta\r\ndata: ${JSON.stringify({ type: 'response.output_text.delta', sequence_number: i, delta: MiB })}\r\n\r\n`,
          `data: ${JSON.stringify({ type: 'response.completed', sequence_number: count + 1, response: done })}\n\n`,
        );
      }),
    );
    const seen: RemoteSnapshot[] = [];
    for await (const snap of openai(url).startStream!(start, never())) seen.push(snap);
    expect(seen.at(-1)?.state).toBe('succeeded');
    expect(seen.at(-1)?.eventId).toBe(String(count + 1));
  });
});
