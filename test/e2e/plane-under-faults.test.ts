import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import type { RemoteSnapshot } from '../../src/connectors/connector.ts';
import { spawnHost, spawnTaskplane, type TestProcess } from '../support/process.ts';
import { FaultProxy, freePort } from './fault-proxy.ts';
import { EventFollower, PlaneClient, type PlaneEvent } from './plane-client.ts';

/**
 * The proof, with real processes on loopback: the plane tracks 50 tasks on a durable host
 * while (a) streams drop through a fault proxy, (b) the host is SIGKILLed and restarted, (c) the plane
 * is SIGKILLed and restarted, (d) the webhook ingress refuses connections for a while. Every outcome is
 * learned, the host holds no duplicate task for any messageId/contextId, and every input request is
 * answered. Every step waits on events (plane SSE, proxy refusals, process ready lines).
 */
const TASKS = 50;
const KEY = 'e2e-key-0123456789';
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired', 'lost']);
const PLANE_OPTIONS = JSON.stringify({
  stream: { reattach: { initialIntervalMs: 100, maximumIntervalMs: 1000 } },
  reconcile: { intervalMs: 3000, startGraceMs: 1000 },
  startRetry: { initialIntervalMs: 100, maximumIntervalMs: 1000 },
  requestTimeoutMs: 5000,
});

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f().catch(() => {});
});

describe('plane under faults (real processes)', () => {
  it('learns every outcome with no duplicate host task and every input answered', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-e2e-'));
    const hostPort = await freePort();
    const planePort = await freePort();
    const agentProxy = await FaultProxy.start(hostPort);
    const ingressProxy = await FaultProxy.start(planePort);
    cleanup.push(
      () => agentProxy.close(),
      () => ingressProxy.close(),
    );

    const hostArgs = [
      '--port',
      String(hostPort),
      '--db',
      `sqlite:${dir}/host.db`,
      '--public-url',
      agentProxy.url,
      '--allow-private-webhooks',
      '--push-base-ms',
      '200',
      '--push-attempts',
      '40',
    ];
    let host = (await spawnHost(hostArgs)).proc;
    const planeArgs = [
      'serve',
      '--port',
      String(planePort),
      '--db',
      `sqlite:${dir}/plane.db`,
      '--public-url',
      ingressProxy.url,
      '--target',
      `demo=${agentProxy.url}`,
      '--plane-options',
      PLANE_OPTIONS,
    ];
    const startPlane = () =>
      spawnTaskplane(planeArgs, {
        env: { TASKPLANE_API_KEYS: `e2e:${KEY}` },
        ready: /taskplane serve ready (http:\S+)/,
      });
    let plane: TestProcess = await startPlane();
    cleanup.push(
      () => host.kill(),
      () => plane.kill(),
    );

    const client = new PlaneClient(`http://127.0.0.1:${planePort}`, KEY);
    const created = [];
    for (let i = 0; i < TASKS; i++) {
      const input = {
        durationMs: 2000 + (i % 5) * 800,
        steps: 4,
        artifactChunks: 1,
        ...(i % 5 === 0 ? { askInput: `Which edition for #${i}?` } : {}),
      };
      created.push(await client.create('demo', input, `e2e-${i}`));
    }
    const asking = created.filter((_, i) => i % 5 === 0).map((t) => t.id);

    // Answer every input request as it is surfaced, and re-sweep after each reconnect (plane restarts).
    const answered = new Set<string>();
    const sweep = async () => {
      for (const t of await client.tasks().catch(() => [])) {
        if (
          t.state === 'waiting_for_input' &&
          t.pendingInput &&
          !t.pendingInput.answeredAt &&
          !answered.has(t.id)
        ) {
          const r = await client
            .call('POST', `/v1/tasks/${t.id}/input`, { requestId: t.pendingInput.requestId, value: 'second' })
            .catch(() => ({ status: 0 }));
          if (r.status === 200) answered.add(t.id);
        }
      }
    };
    let running = 0;
    const waiters: Array<{ pred: () => boolean; resolve: () => void }> = [];
    const check = () => {
      for (const w of [...waiters]) {
        if (!w.pred()) continue;
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    };
    let phase = 'create';
    const untilRaw = (pred: () => boolean) =>
      new Promise<void>((resolve) => (pred() ? resolve() : waiters.push({ pred, resolve })));
    // A failure bound per phase (not a timing assumption): on expiry, say where it stuck and what it saw.
    const until = async (pred: () => boolean) => {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<never>((_, reject) => {
        timer = setTimeout(async () => {
          const tasks = await client.tasks().catch(() => []);
          const states: Record<string, number> = {};
          for (const t of tasks) states[t.state] = (states[t.state] ?? 0) + 1;
          reject(
            new Error(
              `stuck in phase ${phase}: running=${running} states=${JSON.stringify(states)}\nplane stderr tail:\n${plane.stderr.slice(-3000)}\nhost stderr tail:\n${host.stderr.slice(-2000)}`,
            ),
          );
        }, 50_000);
      });
      try {
        await Promise.race([untilRaw(pred), bound]);
      } finally {
        clearTimeout(timer);
      }
    };
    let allDone = false;
    const checkDone = async () => {
      const tasks = await client.tasks().catch(() => null);
      if (tasks && tasks.length === TASKS && tasks.every((t) => TERMINAL.has(t.state))) allDone = true;
      check();
    };
    // One sweep at a time; an event that arrives during a sweep asks for one more after it (an input
    // request surfaced mid-sweep must not be dropped).
    let busy = false;
    let again = false;
    const runSweep = (): void => {
      if (busy) {
        again = true;
        return;
      }
      busy = true;
      again = false;
      void sweep()
        .then(checkDone)
        .finally(() => {
          busy = false;
          if (again) runSweep();
        });
    };
    const onEvent = (e: PlaneEvent) => {
      if (e.type === 'state_changed') running++;
      check();
      if (e.type === 'input_requested' || TERMINAL.has(String(e.data.to))) runSweep();
    };
    const follower = new EventFollower(client, onEvent, runSweep);
    cleanup.push(async () => follower.stop());

    // (a) streams drop mid-flight
    phase = 'a';
    await until(() => running >= 40);
    expect(agentProxy.dropAll()).toBeGreaterThan(0);

    phase = 'b';
    // (b) the host is killed and restarted on the same port and database
    const mark1 = running;
    await until(() => running >= mark1 + 10);
    await host.kill('SIGKILL');
    host = (await spawnHost(hostArgs)).proc;

    phase = 'c';
    // (c) the plane is killed and restarted
    const mark2 = running;
    await until(() => running >= mark2 + 10 || allDone);
    await plane.kill('SIGKILL');
    plane = await startPlane();

    phase = 'd';
    // (d) the webhook ingress refuses for a while (until the host has had several pushes refused)
    ingressProxy.refuse(true);
    await Promise.race([ingressProxy.waitRefused(5), untilRaw(() => allDone)]);
    ingressProxy.refuse(false);

    phase = 'finish';
    await until(() => allDone);
    follower.stop();

    const tasks = await client.tasks();
    expect(tasks).toHaveLength(TASKS);
    expect(tasks.filter((t) => t.state !== 'succeeded').map((t) => [t.id, t.state])).toEqual([]);
    for (const id of asking)
      expect(answered.has(id) || tasks.find((t) => t.id === id)?.pendingInput === null).toBe(true);

    // No duplicate task on the host for any of our contextIds (each start carried its own).
    const agent = await A2AConnector.connect({ target: 'demo', baseUrl: `http://127.0.0.1:${hostPort}` });
    const hostTasks: RemoteSnapshot[] = [];
    let cursor: string | undefined;
    do {
      const page = await agent.listChanged(
        { since: 0, ...(cursor ? { cursor } : {}) },
        new AbortController().signal,
      );
      hostTasks.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor);
    const perContext = new Map<string, number>();
    for (const t of hostTasks)
      perContext.set(t.contextId ?? '', (perContext.get(t.contextId ?? '') ?? 0) + 1);
    for (const t of tasks) expect(perContext.get(t.contextId)).toBe(1);
    expect(hostTasks).toHaveLength(TASKS);

    const signals = (
      await client.call<{ streamDrops: number; requests: { perTask: number } }>('GET', '/v1/signals')
    ).body;
    console.log(
      `e2e: refused pushes ${ingressProxy.refused}, dropped connections ${agentProxy.dropped}, signals after plane restart ${JSON.stringify(signals)}`,
    );
  }, 180_000);
});
