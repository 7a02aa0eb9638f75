import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import type { PushRegistration } from '../../src/connectors/connector.ts';
import { SeededRandom } from '../../src/core/random.ts';
import type { PlaneContext } from '../../src/plane/context.ts';
import { newPushRegistration, tokenHash } from '../../src/plane/push-tokens.ts';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import { PushReceiver } from '../host/helpers.ts';

/**
 * What the plane registers for a push, against the real host. A2A lets an agent return the config's
 * `token` from Get/List, so the secret the plane verifies deliveries with must be a different value,
 * sent only as `authentication` credentials (which are never returned).
 */
const receiver = new PushReceiver();
let host: RunningHost;
let receiverUrl: string;
beforeAll(async () => {
  receiverUrl = await receiver.start();
  host = await startHost({
    port: 0,
    db: 'memory:',
    logger: pino({ level: 'silent' }),
    allowPrivateWebhooks: true,
  });
});
afterAll(async () => {
  await host?.close();
  await receiver.close();
});

const never = new AbortController().signal;
let n = 0;
const ids = () => ({ envelopeId: `e${++n}`, messageId: `reg-${n}`, contextId: `c-${n}` });

/** A registration as the plane makes it, pointed at the local receiver. */
let seeds = 0;
function registration(c: A2AConnector): PushRegistration {
  const seed = ++seeds;
  const ctx = {
    random: new SeededRandom(seed),
    config: { publicUrl: 'http://plane.example' },
  } as unknown as PlaneContext;
  const push = newPushRegistration(ctx, c, `env-${seed}`);
  return { ...push, url: `${receiverUrl}/hook?envelope=env-${seed}` };
}

async function listConfigs(taskId: string): Promise<string> {
  const res = await fetch(`${host.url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'A2A-Version': '1.0' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'ListTaskPushNotificationConfigs',
      params: { taskId },
    }),
  });
  return res.text();
}

for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
  describe(`push registration over ${binding}`, () => {
    let c: A2AConnector;
    beforeAll(async () => {
      c = await A2AConnector.connect({ target: 'demo', baseUrl: host.url, preferBinding: binding });
    });

    it('the verification secret is never returned by the agent; the A2A token it may return is another value', async () => {
      const atStart = registration(c);
      const later = registration(c);
      expect(atStart.notificationToken).not.toBe(atStart.token);
      const started = await c.start(
        { ...ids(), input: { steps: 0, askInput: 'Which?' }, push: atStart },
        never,
      );
      await c.registerPush(started.remoteId, later, never);
      const listed = await listConfigs(started.remoteId);
      const configs = (JSON.parse(listed) as { result: { configs: Array<{ token?: string }> } }).result
        .configs;
      expect(configs.map((cfg) => cfg.token).sort()).toEqual(
        [atStart.notificationToken, later.notificationToken].sort(),
      );
      expect(listed).not.toContain(atStart.token);
      expect(listed).not.toContain(later.token);
      // What a reader of the config learns does not pass the plane's check.
      for (const cfg of configs) expect(tokenHash(cfg.token!)).not.toBe(tokenHash(atStart.token));
    });

    it('a delivery carries the secret as the bearer credential, which parseWebhook reads', async () => {
      const push = registration(c);
      const started = await c.start({ ...ids(), input: { steps: 1, durationMs: 10 }, push }, never);
      const mine = () =>
        receiver.received.find((r) => r.headers['x-a2a-notification-token'] === push.notificationToken);
      await receiver.waitFor(() => mine() !== undefined);
      const got = mine()!;
      expect(got.headers.authorization).toBe(`Bearer ${push.token}`);
      expect(got.headers['x-a2a-notification-token']).toBe(push.notificationToken);
      const signal = await c.parseWebhook({
        headers: got.headers as Record<string, string>,
        rawBody: got.raw,
      });
      expect(signal).toMatchObject({ remoteId: started.remoteId, token: push.token });
    });
  });
}

describe('parseWebhook', () => {
  it('never takes X-A2A-Notification-Token (the listable A2A token) as the secret', async () => {
    const c = new A2AConnector({ target: 'demo', baseUrl: host.url });
    const body = JSON.stringify({
      statusUpdate: { taskId: 't1', contextId: 'c1', status: { state: 'TASK_STATE_WORKING' } },
    });
    const signal = await c.parseWebhook({ headers: { 'x-a2a-notification-token': 'listed' }, rawBody: body });
    expect(signal.token).toBeNull();
  });

  it("a body the sender cannot make an A2A task of is the sender's bad input, naming the field", async () => {
    const c = new A2AConnector({ target: 'demo', baseUrl: host.url });
    const err = await c
      .parseWebhook({ headers: {}, rawBody: JSON.stringify({ task: { id: 't1', status: 'done' } }) })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'invalid_argument', field: 'body.task' });
  });
});
