import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import type { RemoteSnapshot } from '../../src/connectors/connector.ts';

/**
 * The connector's 0.3 wire against a hand-written 0.3 agent, for what the SDK peer does not do: a
 * `tasks/resubscribe` that starts with the next update instead of the Task (as many 0.3 servers do),
 * a `message/send` answered with a Message, a frame that is no 0.3 event, a card with neither JSON-RPC nor HTTP+JSON.
 */
let server: http.Server;
let base = '';
const calls: Array<{ method: string; version: string | undefined; params: Record<string, unknown> }> = [];
let card: Record<string, unknown> = {};
let badFrame = false;
const never = new AbortController().signal;

const task = (state: string) => ({
  kind: 'task',
  id: 't-1',
  contextId: 'c-1',
  status: { state, timestamp: '2026-01-01T00:00:01.000Z' },
});

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === '/.well-known/agent-card.json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(card));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const env = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        id: number;
        method: string;
        params: Record<string, unknown>;
      };
      calls.push({
        method: env.method,
        version: req.headers['a2a-version'] as string | undefined,
        params: env.params,
      });
      const reply = (result: unknown) =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: env.id, result }));
      if (env.method === 'message/send')
        return reply({
          kind: 'message',
          messageId: 'r-1',
          role: 'agent',
          parts: [
            { kind: 'text', text: 'done at once' },
            { kind: 'file', file: { uri: 'https://x/f.pdf', mimeType: 'application/pdf', name: 'f.pdf' } },
          ],
        });
      if (env.method === 'tasks/get') return reply(task('working'));
      if (env.method === 'tasks/resubscribe') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const frame = badFrame
          ? { kind: 'nonsense' }
          : {
              kind: 'status-update',
              taskId: 't-1',
              contextId: 'c-1',
              final: true,
              status: { state: 'completed', timestamp: '2026-01-01T00:00:02.000Z' },
            };
        res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: env.id, result: frame })}\n\n`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: env.id,
          error: { code: -32601, message: 'Method not found' },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  card = {
    name: 'hand-written 0.3 agent',
    description: 'd',
    version: '1',
    protocolVersion: '0.3.0',
    url: `${base}/rpc`,
    preferredTransport: 'JSONRPC',
    capabilities: { streaming: true },
    defaultInputModes: [],
    defaultOutputModes: [],
    skills: [],
  };
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
});

describe('connector 0.3 wire', () => {
  it('a resubscribe that starts with an update is preceded by the current Task (tasks/get)', async () => {
    calls.length = 0;
    const c = await A2AConnector.connect({ target: 'hand', baseUrl: base });
    const snaps: RemoteSnapshot[] = [];
    for await (const s of c.observe('t-1', null, never)) snaps.push(s);
    expect(snaps.map((s) => s.state)).toEqual(['running', 'succeeded']);
    expect(calls.map((x) => x.method)).toEqual(['tasks/resubscribe', 'tasks/get']);
    expect(calls.every((x) => x.version === '0.3')).toBe(true);
  });

  it('a Message answer to message/send is the whole outcome, parts mapped', async () => {
    calls.length = 0;
    const c = await A2AConnector.connect({ target: 'hand', baseUrl: base });
    const s = await c.start({ envelopeId: 'e', messageId: 'm-1', contextId: 'ctx-1', input: 'hi' }, never);
    expect(s.state).toBe('succeeded');
    expect(s.result).toEqual([
      { text: 'done at once' },
      { url: 'https://x/f.pdf', mediaType: 'application/pdf', filename: 'f.pdf' },
    ]);
    expect(calls[0]!.params).toEqual({
      message: {
        kind: 'message',
        messageId: 'm-1',
        role: 'user',
        parts: [{ kind: 'text', text: 'hi' }],
        contextId: 'ctx-1',
      },
      configuration: { blocking: false, historyLength: 0 },
    });
  });

  it('a frame that is no 0.3 event is the remote error', async () => {
    badFrame = true;
    try {
      const c = await A2AConnector.connect({ target: 'hand', baseUrl: base });
      const run = async () => {
        for await (const _ of c.observe('t-1', null, never)) void _;
      };
      await expect(run()).rejects.toMatchObject({ code: 'remote_error' });
    } finally {
      badFrame = false;
    }
  });

  it('a 0.3 card with only gRPC is unsupported, saying what the connector speaks', async () => {
    const saved = card;
    card = { ...card, preferredTransport: 'GRPC', url: '127.0.0.1:50051' };
    try {
      await expect(A2AConnector.connect({ target: 'hand', baseUrl: base })).rejects.toThrow(
        /nor JSON-RPC or HTTP\+JSON at 0\.3/,
      );
    } finally {
      card = saved;
    }
  });
});
