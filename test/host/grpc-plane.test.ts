import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTerminal } from '../../src/core/states.ts';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';
import { PNG, resultsAgent } from '../server/results-agent.ts';

/**
 * The plane tracking jobs on our host over gRPC, as a user configures it (`preferBinding: 'GRPC'` on
 * the target). The host publishes HTTP interface URLs that lead nowhere (`publicUrl` on a closed port),
 * so every A2A call after the card read has to go over gRPC for the jobs to finish.
 */
const KEY = 'grpc-plane-key-aaaa';
let host: RunningHost;
let server: RunningServer;

beforeAll(async () => {
  const logger = pino({ level: 'silent' });
  host = await startHost({
    port: 0,
    grpcPort: 0,
    publicUrl: 'http://127.0.0.1:9',
    db: 'memory:',
    agent: resultsAgent,
    logger,
  });
  server = await startServer({
    port: 0,
    db: 'memory:',
    targets: { agent: { baseUrl: host.url, preferBinding: 'GRPC', idempotentStart: true } },
    apiKeys: `alpha:${KEY}`,
    dashboard: false,
    lab: false,
    defaultMetrics: false,
    logger,
  });
});
afterAll(async () => {
  await server?.close();
  await host?.close();
});

function api(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(server.url + path, {
    ...init,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
  });
}

async function create(input: unknown): Promise<string> {
  const res = await api('/v1/tasks', { method: 'POST', body: JSON.stringify({ target: 'agent', input }) });
  expect(res.status).toBeLessThan(300);
  return ((await res.json()) as { id: string }).id;
}

/** Waits on the store's change feed until the task is terminal; returns its JSON. */
async function finished(id: string): Promise<Record<string, unknown>> {
  for (;;) {
    const changed = new Promise<void>((resolve) => {
      const off = server.store.onChange(() => (off(), resolve()));
    });
    const env = await server.store.getEnvelope(id);
    if (env && isTerminal(env.state))
      return (await (await api(`/v1/tasks/${id}`)).json()) as Record<string, unknown>;
    await changed;
  }
}

describe('plane → host over gRPC', () => {
  it('the card the plane reads offers gRPC, and its HTTP interfaces lead nowhere', async () => {
    const card = (await (await fetch(`${host.url}/.well-known/agent-card.json`)).json()) as {
      supportedInterfaces: { url: string; protocolBinding: string }[];
    };
    expect(card.supportedInterfaces.map((i) => i.url)).toEqual([
      'http://127.0.0.1:9/a2a/jsonrpc',
      'http://127.0.0.1:9/a2a/rest',
      host.grpcUrl,
      // the same HTTP URLs at A2A 0.3, which a 1.0 client passes over
      'http://127.0.0.1:9/a2a/jsonrpc',
      'http://127.0.0.1:9/a2a/rest',
    ]);
  });

  it('a job runs to success with its text, data and file artifacts carried over gRPC', async () => {
    const id = await create({ kind: 'report' });
    const task = await finished(id);
    expect(task.state).toBe('succeeded');
    expect(task.statusMessage).toBe('all done');
    const file = await api(`/v1/tasks/${id}/artifacts/chart`);
    expect(file.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await file.arrayBuffer())).toEqual(PNG);
    const data = await api(`/v1/tasks/${id}/artifacts/figures`);
    expect(await data.json()).toEqual({ answer: 42 });
  });

  it("a job the agent fails carries the agent's reason", async () => {
    const task = await finished(await create({ kind: 'fail' }));
    expect(task.state).toBe('failed');
    expect(task.error).toEqual({ code: 'failed', message: 'disk full on the worker' });
  });

  it('a running job is cancelled on the agent over gRPC', async () => {
    const id = await create({ kind: 'wait' });
    for (;;) {
      const changed = new Promise<void>((resolve) => {
        const off = server.store.onChange(() => (off(), resolve()));
      });
      const env = await server.store.getEnvelope(id);
      if (env?.remoteId && env.state === 'running') break;
      await changed;
    }
    const res = await api(`/v1/tasks/${id}/cancel`, { method: 'POST', body: '{}' });
    expect(res.status).toBeLessThan(300);
    const task = await finished(id);
    expect(task.state).toBe('cancelled');
  });
});
