import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';
import { freePort } from '../support/process.ts';
import { resultsAgent } from './results-agent.ts';

/**
 * GET /v1/targets: what each target is (kind, capabilities, the agent card it published) for every
 * tenant, and what the asking tenant's own jobs met there (open jobs, last reconciliation, delays,
 * failures), against a real A2A host and a target that is down.
 */
const ALPHA = 'targets-key-alpha-1';
const BETA = 'targets-key-beta-22';
let host: RunningHost;
let server: RunningServer;

type TargetView = {
  name: string;
  kind: string;
  capabilities: { stream: boolean; push: boolean; cancel: boolean };
  card: { name: string; skills: unknown[] } | null;
  tasks: { active: number; byState: Record<string, number> };
  lastReconciledAt: number | null;
  lastError: { during: string; code: string } | null;
  notificationDelay: Record<string, { count: number }>;
  recentFailures: { taskId: string; state: string; code: string; message: string; terminal: boolean }[];
};

const get = async (path: string, key: string | null = ALPHA) => {
  const res = await fetch(`${server.url}${path}`, {
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
const list = async (key = ALPHA) =>
  ((await get('/v1/targets', key)).body as { targets: TargetView[] }).targets;

beforeAll(async () => {
  const logger = pino({ level: 'silent' });
  host = await startHost({ port: 0, db: 'memory:', agent: resultsAgent, logger });
  server = await startServer({
    port: 0,
    db: 'memory:',
    targets: {
      agent: { baseUrl: host.url, idempotentStart: true },
      // Nothing listens there: its starts and its reconciliation fail.
      down: `http://127.0.0.1:${await freePort()}`,
    },
    apiKeys: `alpha:${ALPHA},beta:${BETA}`,
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

async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise<void>((r) => server.store.onChange(() => r()));
}

describe('GET /v1/targets', () => {
  it("shows each target's kind, card and capabilities, and the asking tenant's jobs there only", async () => {
    const failing = await server.plane.create(
      { tenant: 'alpha', target: 'agent', input: { kind: 'fail' } },
      { wait: 'started' },
    );
    await server.plane.create(
      { tenant: 'alpha', target: 'agent', input: { kind: 'wait' } },
      { wait: 'started' },
    );
    await until(async () => (await server.plane.get('alpha', failing.envelope.id)).state === 'failed');
    await server.plane.reconcileNow('agent');

    const [agent, down] = await list();
    expect(agent!.name).toBe('agent');
    expect(agent!.kind).toBe('a2a');
    // The card the agent published, and the capabilities it made true.
    expect(agent!.card?.name).toBe('Results');
    expect(agent!.capabilities.stream).toBe(true);
    expect(agent!.capabilities.cancel).toBe(true);
    expect(agent!.tasks.active).toBe(1);
    expect(agent!.tasks.byState.running).toBe(1);
    expect(agent!.lastReconciledAt).toBeGreaterThan(0);
    expect(agent!.lastError).toBeNull();
    // The jobs' news came by their stream, and how late is measured.
    expect(agent!.notificationDelay.stream?.count).toBeGreaterThan(0);
    expect(agent!.recentFailures).toEqual([
      expect.objectContaining({ taskId: failing.envelope.id, state: 'failed', terminal: true }),
    ]);
    expect(agent!.recentFailures[0]!.message).toContain('disk full');
    expect(down!.name).toBe('down');

    // Another tenant sees what the target is, never what alpha's jobs met there.
    const [seenByBeta] = await list(BETA);
    expect(seenByBeta!.card?.name).toBe('Results');
    expect(seenByBeta!.tasks).toEqual({ active: 0, byState: {}, capped: false });
    expect(seenByBeta!.lastReconciledAt).toBeNull();
    expect(seenByBeta!.notificationDelay).toEqual({});
    expect(seenByBeta!.recentFailures).toEqual([]);
  });

  it('names the failures of a target that cannot be reached: its jobs\u2019 starts and its reconciliation', async () => {
    const { envelope } = await server.plane.create(
      { tenant: 'alpha', target: 'down', input: 'anyone there?' },
      { wait: 'started' },
    );
    await server.plane.reconcileNow('down');
    const { status, body } = await get('/v1/targets/down');
    expect(status).toBe(200);
    const down = body as unknown as TargetView;
    expect(down.kind).toBe('a2a');
    expect(down.card).toBeNull();
    expect(down.tasks.active).toBe(1);
    expect(down.lastError).toEqual(expect.objectContaining({ during: 'reconcile', code: 'unavailable' }));
    expect(down.recentFailures[0]).toEqual(
      expect.objectContaining({ taskId: envelope.id, code: 'unavailable', terminal: false }),
    );
    const beta = (await get('/v1/targets/down', BETA)).body as unknown as TargetView;
    expect(beta.lastError).toBeNull();
    expect(beta.recentFailures).toEqual([]);
  });

  it('answers 404 naming an unknown target and 401 without a key', async () => {
    const missing = await get('/v1/targets/nope');
    expect(missing.status).toBe(404);
    expect(JSON.stringify(missing.body)).toContain("target 'nope' is not configured");
    expect((await get('/v1/targets', null)).status).toBe(401);
  });
});
