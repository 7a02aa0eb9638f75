import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import { VirtualClock } from '../../src/core/clock.ts';
import type { TaskplaneError } from '../../src/core/errors.ts';
import { createPushSender } from '../../src/host/push-sender.ts';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import type { Resolver } from '../../src/core/public-address.ts';
import { parseTargetSigningSecrets } from '../../src/server/targets.ts';
import { PushReceiver, type ReceivedPush } from '../host/helpers.ts';

/**
 * Standard Webhooks signatures between the host (signs with its secret) and the plane's A2A connector
 * (verifies with the secret configured for the target). The host's sender and the connector run on
 * virtual clocks, so the freshness window is tested without waiting.
 */
const SECRET = 'whsec_' + Buffer.alloc(32, 0x41).toString('base64');
const OTHER = 'whsec_' + Buffer.alloc(32, 0x42).toString('base64');
const T0 = Date.parse('2026-06-01T12:00:00Z');
const noDns: Resolver = async () => [];
const BODY = JSON.stringify({
  statusUpdate: { taskId: 'task-1', contextId: 'c1', status: { state: 'TASK_STATE_WORKING' } },
});

const receiver = new PushReceiver();
let receiverUrl: string;
beforeAll(async () => {
  receiverUrl = await receiver.start();
});
afterAll(() => receiver.close());

/** One delivery as the host sends it, signed at `atMs` on the host's (virtual) clock. */
async function hostDelivery(
  secret: string | undefined,
  atMs: number,
  deliveryId: string,
): Promise<ReceivedPush> {
  const send = createPushSender({
    clock: new VirtualClock(atMs),
    resolve: noDns,
    allowPrivate: true,
    timeoutMs: 5000,
    ...(secret !== undefined ? { signingSecret: secret } : {}),
  });
  const result = await send({
    url: `${receiverUrl}/hook`,
    body: BODY,
    deliveryId,
    authorization: 'Bearer the-secret',
    token: 'listed-token',
  });
  expect(result.ok).toBe(true);
  return receiver.received.find((r) => r.headers['a2a-delivery-id'] === deliveryId)!;
}

function plane(atMs: number, secret: string | null = SECRET): A2AConnector {
  return new A2AConnector({
    target: 'signed',
    baseUrl: 'http://127.0.0.1:9',
    clock: new VirtualClock(atMs),
    ...(secret !== null ? { webhookSigningSecret: secret } : {}),
  });
}

const headersOf = (r: ReceivedPush) => r.headers as Record<string, string>;
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as TaskplaneError,
  );

describe('the plane verifies Standard Webhooks signatures made by the host', () => {
  it('accepts a delivery signed by the host with the target secret', async () => {
    const got = await hostDelivery(SECRET, T0, 'sig-ok');
    expect(got.headers['webhook-id']).toBe('sig-ok');
    const signal = await plane(T0 + 60_000).parseWebhook({ headers: headersOf(got), rawBody: got.raw });
    expect(signal).toMatchObject({ remoteId: 'task-1', deliveryId: 'sig-ok', token: 'the-secret' });
  });

  it('refuses a tampered body, id or timestamp, and a signature made with another secret', async () => {
    const got = await hostDelivery(SECRET, T0, 'sig-tamper');
    const c = plane(T0);
    const tampered: Array<[string, Record<string, string>, string]> = [
      ['body', headersOf(got), got.raw.replace('TASK_STATE_WORKING', 'TASK_STATE_COMPLETED')],
      ['id', { ...headersOf(got), 'webhook-id': 'sig-other' }, got.raw],
      ['timestamp', { ...headersOf(got), 'webhook-timestamp': String(T0 / 1000 + 1) }, got.raw],
    ];
    for (const [what, headers, rawBody] of tampered) {
      const err = await refusal(c.parseWebhook({ headers, rawBody }));
      expect({ what, code: err?.code }).toEqual({ what, code: 'unauthenticated' });
    }
    const foreign = await hostDelivery(OTHER, T0, 'sig-foreign');
    expect((await refusal(c.parseWebhook({ headers: headersOf(foreign), rawBody: foreign.raw })))?.code).toBe(
      'unauthenticated',
    );
  });

  it('refuses an unsigned delivery when the target has a secret, and accepts it when it has none', async () => {
    const got = await hostDelivery(undefined, T0, 'sig-none');
    expect(got.headers['webhook-signature']).toBeUndefined();
    const err = await refusal(plane(T0).parseWebhook({ headers: headersOf(got), rawBody: got.raw }));
    expect(err?.code).toBe('unauthenticated');
    expect(err?.message).toMatch(/signature headers missing/);
    const unsignedTarget = plane(T0, null);
    expect((await unsignedTarget.parseWebhook({ headers: headersOf(got), rawBody: got.raw })).remoteId).toBe(
      'task-1',
    );
  });

  it('refuses a signature older or newer than 5 minutes (a replay), on the plane clock', async () => {
    const got = await hostDelivery(SECRET, T0, 'sig-replay');
    const at = (ms: number) => refusal(plane(ms).parseWebhook({ headers: headersOf(got), rawBody: got.raw }));
    expect(await at(T0 + 300_000)).toBeNull();
    expect((await at(T0 + 301_000))?.message).toMatch(/outside the tolerance/);
    expect((await at(T0 - 301_000))?.message).toMatch(/outside the tolerance/);
  });

  it('refuses a target secret that is not whsec_ base64, naming the target option', () => {
    expect(() => plane(T0, 'not a secret')).toThrow(/targets\.signed\.webhookSigningSecret/);
  });
});

describe('TASKPLANE_TARGET_SIGNING_SECRETS', () => {
  it('maps configured targets to their secrets and refuses other names without echoing the secret', () => {
    const targets = new Set(['a', 'b']);
    expect(parseTargetSigningSecrets(`a=${SECRET}, b=${OTHER}`, targets)).toEqual({ a: SECRET, b: OTHER });
    expect(parseTargetSigningSecrets(undefined, targets)).toEqual({});
    expect(() => parseTargetSigningSecrets(`c=${SECRET}`, targets)).toThrow(/target one of: a, b/);
    let message = '';
    try {
      parseTargetSigningSecrets(SECRET, targets);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/TASKPLANE_TARGET_SIGNING_SECRETS/);
    expect(message).not.toContain(SECRET.slice(6, 30));
  });
});

describe('a real host configured to sign, and the connector configured with its secret', () => {
  let host: RunningHost;
  beforeAll(async () => {
    host = await startHost({
      port: 0,
      db: 'memory:',
      logger: pino({ level: 'silent' }),
      allowPrivateWebhooks: true,
      pushSigningSecret: SECRET,
    });
  });
  afterAll(async () => {
    await host?.close();
  });

  it('every push the host sends verifies', async () => {
    const c = await A2AConnector.connect({
      target: 'signed',
      baseUrl: host.url,
      webhookSigningSecret: SECRET,
    });
    const push = { url: `${receiverUrl}/hook`, token: 'real-secret', notificationToken: 'real-listed' };
    const started = await c.start(
      {
        envelopeId: 'e1',
        messageId: 'sig-real-1',
        contextId: 'c1',
        input: { steps: 0, askInput: 'Which?' },
        push,
      },
      new AbortController().signal,
    );
    const mine = () =>
      receiver.received.filter((r) => r.headers['x-a2a-notification-token'] === 'real-listed');
    await receiver.waitFor(() => mine().length > 0);
    for (const got of mine()) {
      const signal = await c.parseWebhook({ headers: headersOf(got), rawBody: got.raw });
      expect(signal).toMatchObject({ remoteId: started.remoteId, token: 'real-secret' });
    }
  });
});
