import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';
import { startSdkPeer, type SdkPeer } from './sdk-peer.ts';

/**
 * Fast create over HTTP against an agent on the official SDK server that is slow to answer
 * SendMessage: the response comes as soon as the envelope is durable, the start runs behind it, and
 * a caller who wants the remote's first answer asks for it.
 */
const KEY = 'fast-create-key-0123';
let peer: SdkPeer;
let server: RunningServer;

beforeAll(async () => {
  peer = await startSdkPeer({ streaming: false, startDelayMs: 400, autoFinishMs: 60_000 });
  server = await startServer({
    port: 0,
    db: 'memory:',
    connectors: { peer: new A2AConnector({ target: 'peer', baseUrl: peer.base, timeoutMs: 5_000 }) },
    apiKeys: `t:${KEY}`,
    dashboard: false,
    defaultMetrics: false,
    logger: pino({ level: 'silent' }),
  });
});
afterAll(async () => {
  await server?.close();
  await peer?.close();
});

const create = (query = '', headers: Record<string, string> = {}) =>
  fetch(`${server.url}/v1/tasks${query}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ target: 'peer', input: 'go' }),
  });

describe('POST /v1/tasks', () => {
  it('answers 202 accepted with Location once the envelope is durable, before the agent answers', async () => {
    const before = peer.started.length;
    const res = await create();
    const body = (await res.json()) as { id: string; state: string; remoteId: string | null };
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(`/v1/tasks/${body.id}`);
    expect(body.state).toBe('accepted');
    expect(body.remoteId).toBeNull();
    expect(peer.started.length).toBe(before);
  });

  for (const [how, query, headers] of [
    ['Prefer: wait=10', '', { prefer: 'wait=10' }],
    ['?wait=started', '?wait=started', {}],
  ] as const) {
    it(`waits for the agent's first answer with ${how}`, async () => {
      const res = await create(query, headers);
      const body = (await res.json()) as { id: string; state: string; remoteId: string | null };
      expect(res.status).toBe(201);
      expect(body.remoteId).not.toBeNull();
      expect(peer.started).toContain(body.remoteId);
    });
  }

  it('refuses a wait it cannot read, naming the field', async () => {
    const res = await create('?wait=soon');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { field: string } }).error.field).toBe('wait');
  });
});
