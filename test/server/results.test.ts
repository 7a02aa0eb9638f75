import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { SystemClock } from '../../src/core/clock.ts';
import { isTerminal } from '../../src/core/states.ts';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';
import { FakeRemote } from '../plane/fake-remote.ts';
import { PNG, resultsAgent } from './results-agent.ts';

/**
 * Results a person can read: the plane keeps artifact content and the final status message (within
 * its caps), the task JSON sums them up, and the artifact routes answer the content itself, read
 * through from the agent when it was over the caps. Against our host running a small agent over A2A.
 */
const KEY_A = 'results-key-aaaa';
const KEY_B = 'results-key-bbbb';
interface TaskJson {
  state: string;
  statusMessage: string | null;
  error: { code: string; message: string } | null;
  output: { text: string | null; remoteOnly: string[] };
  artifacts: Array<{ artifactId: string; kept: boolean; size: number | null; hash: string }>;
}
interface ArtifactJson {
  artifactId: string;
  from: string;
  parts: unknown[];
}

let host: RunningHost;
let server: RunningServer;
let remote: FakeRemote;

beforeAll(async () => {
  const logger = pino({ level: 'silent' });
  host = await startHost({ port: 0, db: 'memory:', agent: resultsAgent, logger });
  remote = new FakeRemote(new SystemClock());
  server = await startServer({
    port: 0,
    db: 'memory:',
    targets: { agent: { baseUrl: host.url, idempotentStart: true } },
    connectors: { fake: remote.connector('fake') },
    apiKeys: `alpha:${KEY_A},beta:${KEY_B}`,
    dashboard: false,
    lab: false,
    defaultMetrics: false,
    // Small caps so one test task crosses them: 2000 bytes per artifact, 2010 per task.
    plane: { results: { maxArtifactBytes: 2000, maxTaskBytes: 2010 } },
    logger,
  });
});
afterAll(async () => {
  await server?.close();
  await host?.close();
});

function api(path: string, init: RequestInit & { key?: string } = {}): Promise<Response> {
  return fetch(server.url + path, {
    ...init,
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${init.key ?? KEY_A}`,
      ...(init.headers as Record<string, string> | undefined),
    },
  });
}

/** Waits on the store's change feed (not on time) until the task is terminal; returns its JSON. */
async function finished(id: string): Promise<TaskJson> {
  for (;;) {
    const changed = new Promise<void>((resolve) => {
      const off = server.store.onChange(() => (off(), resolve()));
    });
    const env = await server.store.getEnvelope(id);
    if (env && isTerminal(env.state)) return (await (await api(`/v1/tasks/${id}`)).json()) as TaskJson;
    await changed;
  }
}

async function create(target: string, input: unknown): Promise<string> {
  const res = await api('/v1/tasks', { method: 'POST', body: JSON.stringify({ target, input }) });
  expect(res.status).toBeLessThan(300);
  return ((await res.json()) as { id: string }).id;
}

describe('results people can read', () => {
  it('the task JSON carries an output summary and the final status message', async () => {
    const task = await finished(await create('agent', { kind: 'report' }));
    expect(task.state).toBe('succeeded');
    expect(task.statusMessage).toBe('all done');
    expect(task.error).toBeNull();
    expect(task.output).toEqual({
      text: 'The answer is 42.',
      data: [{ answer: 42 }],
      files: [{ artifactId: 'chart', name: 'chart.png', mediaType: 'image/png', size: PNG.length }],
      remoteOnly: [],
      truncated: false,
    });
    // The task JSON describes artifacts; their content is one request away.
    expect(task.artifacts.map((a) => [a.artifactId, a.kept])).toEqual([
      ['summary', true],
      ['figures', true],
      ['chart', true],
    ]);
    expect(JSON.stringify(task.artifacts)).not.toContain('parts');
  });

  it('a failed task shows the remote own reason in error', async () => {
    const task = await finished(await create('agent', { kind: 'fail' }));
    expect(task.state).toBe('failed');
    expect(task.error).toEqual({ code: 'failed', message: 'disk full on the worker' });
    expect(task.statusMessage).toBe('disk full on the worker');
  });

  it('GET /artifacts lists every artifact with its content; /artifacts/{id} answers it with its media type', async () => {
    const id = await create('agent', { kind: 'report' });
    await finished(id);
    const list = (await (await api(`/v1/tasks/${id}/artifacts`)).json()) as { artifacts: ArtifactJson[] };
    expect(list.artifacts.map((a) => [a.artifactId, a.from, a.parts])).toEqual([
      ['summary', 'kept', [{ kind: 'text', text: 'The answer is 42.' }]],
      ['figures', 'kept', [{ kind: 'data', data: { answer: 42 } }]],
      [
        'chart',
        'kept',
        [{ kind: 'file', name: 'chart.png', mediaType: 'image/png', bytes: PNG.toString('base64') }],
      ],
    ]);

    const text = await api(`/v1/tasks/${id}/artifacts/summary`);
    expect(text.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await text.text()).toBe('The answer is 42.');
    const data = await api(`/v1/tasks/${id}/artifacts/figures`);
    expect(data.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await data.json()).toEqual({ answer: 42 });
    const file = await api(`/v1/tasks/${id}/artifacts/chart`);
    expect(file.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await file.arrayBuffer())).toEqual(PNG);
    const asJson = await api(`/v1/tasks/${id}/artifacts/summary?format=json`);
    expect(((await asJson.json()) as { parts: unknown }).parts).toEqual([
      { kind: 'text', text: 'The answer is 42.' },
    ]);

    const missing = await api(`/v1/tasks/${id}/artifacts/nope`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { field: string } }).error.field).toBe('artifactId');
  });

  it("another tenant's task and its artifacts are a 404", async () => {
    const id = await create('agent', { kind: 'report' });
    await finished(id);
    for (const path of [`/v1/tasks/${id}/artifacts`, `/v1/tasks/${id}/artifacts/summary`]) {
      const res = await api(path, { key: KEY_B });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
    }
  });

  it('above the caps keeps hash and size, and reads the content through from the agent', async () => {
    const id = await create('agent', { kind: 'big' });
    const task = await finished(id);
    const log = task.artifacts.find((a) => a.artifactId === 'log')!;
    expect(log).toMatchObject({ kept: false, size: 3000, hash: expect.stringMatching(/^sha256:/) });
    expect(task.output.remoteOnly).toEqual(['log']);
    expect(task.output.text).toBe('ok');
    const stored = await server.store.getEnvelope(id);
    expect(JSON.stringify(stored)).not.toContain('xxxxxxxxxx');

    const res = await api(`/v1/tasks/${id}/artifacts/log`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-artifact-from')).toBe('remote');
    expect(res.headers.get('etag')).toBe(`"${log.hash}"`);
    expect(await res.text()).toBe('x'.repeat(3000));
  });

  it('the per-task cap counts what the other artifacts already keep', async () => {
    const id = await create('fake', 'go');
    await waitBound(id);
    const env = (await server.store.getEnvelope(id))!;
    remote.set(env.remoteId!, 'succeeded', {
      artifacts: [
        { artifactId: 'a', content: 'a'.repeat(1500) },
        { artifactId: 'b', content: 'b'.repeat(1500) },
      ],
    });
    const task = await finished(id);
    expect(task.artifacts.map((a) => a.kept)).toEqual([true, false]);
  });

  it('content over the caps is a 404 saying so once the remote no longer has the task', async () => {
    const id = await create('fake', 'go');
    await waitBound(id);
    const env = (await server.store.getEnvelope(id))!;
    remote.set(env.remoteId!, 'succeeded', { artifacts: [{ artifactId: 'big', content: 'z'.repeat(5000) }] });
    await finished(id);
    remote.forget();
    const res = await api(`/v1/tasks/${id}/artifacts/big`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
      /remote no longer has/,
    );
  });
});

async function waitBound(id: string): Promise<void> {
  for (;;) {
    const changed = new Promise<void>((resolve) => {
      const off = server.store.onChange(() => (off(), resolve()));
    });
    if ((await server.store.getEnvelope(id))?.remoteId) return;
    await changed;
  }
}
