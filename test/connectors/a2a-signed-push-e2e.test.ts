import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { SystemClock } from '../../src/core/clock.ts';
import { signatureHeaders, signingKey } from '../../src/protocols/standard-webhooks.ts';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { untilStored } from '../support/until-stored.ts';

/**
 * A plane and a host as an operator runs them: the host signs its pushes, the plane's target is given
 * the same secret and watches by push only (no stream, no polling). The job moves on verified pushes;
 * a delivery whose signature does not match, or that has none, gets 401 even with the right bearer
 * secret.
 */
const SECRET = 'whsec_' + Buffer.alloc(32, 0x37).toString('base64');
const KEY = 'alpha-key-0123456789abcdef';
const silent = pino({ level: 'silent' });

let host: RunningHost;
let plane: RunningServer;
const hostStore = new MemoryStore();
beforeAll(async () => {
  host = await startHost({
    port: 0,
    db: hostStore,
    logger: silent,
    allowPrivateWebhooks: true,
    pushSigningSecret: SECRET,
  });
  plane = await startServer({
    port: 0,
    db: 'memory:',
    targets: { agent: { baseUrl: host.url, idempotentStart: true, webhookSigningSecret: SECRET } },
    apiKeys: `alpha:${KEY}`,
    publicUrl: 'self',
    plane: { delivery: { stream: false, push: true, poll: false } },
    dashboard: false,
    lab: false,
    defaultMetrics: false,
    logger: silent,
  });
});
afterAll(async () => {
  await plane?.close();
  await host?.close();
});

const api = (path: string, init: RequestInit = {}) =>
  fetch(plane.url + path, {
    ...init,
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...init.headers },
  });

/** Resolves when the plane's envelope reaches `state`, woken by the plane store's change feed. */
function waitForState(id: string, state: string, timeoutMs = 20_000): Promise<void> {
  return untilStored(
    plane.store,
    id,
    async () => (await plane.store.getEnvelope(id))?.state === state,
    `task ${id} reaching ${state}`,
    timeoutMs,
  );
}

describe('signed pushes from the host to the plane', () => {
  it('the job follows verified pushes; a tampered or unsigned delivery is refused', async () => {
    const created = (await (
      await api('/v1/tasks', {
        method: 'POST',
        body: JSON.stringify({ target: 'agent', input: { steps: 0, askInput: 'Which edition?' } }),
      })
    ).json()) as { id: string; remoteId: string | null };
    await waitForState(created.id, 'waiting_for_input');
    const task = (await (await api(`/v1/tasks/${created.id}`)).json()) as { remoteId: string };

    // Replay one delivery as the host would send it, using the config the host stored.
    const [config] = await hostStore.listPushConfigs(task.remoteId);
    expect(config).toBeDefined();
    const body = JSON.stringify({
      statusUpdate: {
        taskId: task.remoteId,
        contextId: 'ctx',
        status: { state: 'TASK_STATE_WORKING', timestamp: new Date(0).toISOString() },
      },
    });
    const url = config!.url.replace(/^https?:\/\/[^/]+/, plane.url);
    const bearer = { authorization: `Bearer ${config!.authentication!.credentials}` };
    const signed = (id: string, payload: string) =>
      signatureHeaders(signingKey(SECRET, 'secret'), id, new SystemClock().now(), payload);
    const post = (headers: Record<string, string>, payload: string) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: payload,
      });

    const tampered = await post(
      { ...bearer, ...signed('d-tamper', body) },
      body.replace('TASK_STATE_WORKING', 'TASK_STATE_COMPLETED'),
    );
    expect(tampered.status).toBe(401);
    expect((await post({ ...bearer, 'a2a-delivery-id': 'd-unsigned' }, body)).status).toBe(401);
    const good = await post({ ...bearer, ...signed('d-good', body) }, body);
    expect(good.status).toBeLessThan(300);
    // The host's own signed pushes all passed: the only refusals are the two above.
    const metrics = await (await fetch(plane.url + '/metrics')).text();
    expect(/^taskplane_webhooks_rejected_total (\d+)/m.exec(metrics)?.[1]).toBe('2');
    // An old status is absorbed by the forward-only rule: the job still waits for its answer.
    expect(((await (await api(`/v1/tasks/${created.id}`)).json()) as { state: string }).state).toBe(
      'waiting_for_input',
    );
  });
});
