import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { OpenAIEmulator } from './emulator.ts';
import { startHarness, type Harness } from './support.ts';
import type { WebhookAttempt } from './webhooks.ts';

const SECRET = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;

interface Delivery {
  body: string;
  headers: IncomingHttpHeaders;
}

/** A webhook endpoint that records raw deliveries and answers with the queued statuses, then 200. */
async function receiver(
  statuses: number[] = [],
): Promise<{ url: string; deliveries: Delivery[]; server: Server }> {
  const deliveries: Delivery[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      deliveries.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
      const status = statuses.shift() ?? 200;
      res.writeHead(status, status >= 300 && status < 400 ? { location: 'http://127.0.0.1:1/' } : {});
      res.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, deliveries, server };
}

function nextAttempt(emu: OpenAIEmulator): Promise<WebhookAttempt> {
  return once(emu, 'webhook').then(([a]) => a as WebhookAttempt);
}

const toHeaders = (h: IncomingHttpHeaders) =>
  new Headers(
    Object.entries(h).flatMap(([k, v]) => (typeof v === 'string' ? [[k, v] as [string, string]] : [])),
  );

let h: Harness | undefined;
let server: Server | undefined;
afterEach(async () => {
  await h?.emu.close();
  server?.close();
  h = undefined;
  server = undefined;
});

async function setup(statuses: number[] = [], extra: { duplicateRate?: number } = {}) {
  const r = await receiver(statuses);
  server = r.server;
  // The SDK checks the signed timestamp against the real time, so virtual time starts at it.
  h = await startHarness(
    { webhook: { url: r.url, secret: SECRET, firstRetryMs: 1000, maxAttempts: 3, ...extra } },
    {},
    Date.now(),
  );
  return {
    ...h,
    deliveries: r.deliveries,
    sdk: new OpenAI({ apiKey: 'sk-test', baseURL: h.baseURL, webhookSecret: SECRET }),
  };
}

describe('OpenAI emulator webhooks, verified by the SDK', () => {
  it('delivers response.completed signed so webhooks.unwrap accepts it, thin payload naming the response', async () => {
    const { client, clock, emu, deliveries, sdk } = await setup();
    const created = await client.responses.create({ model: 'm', input: 'hello', background: true });
    const attempt = nextAttempt(emu);
    await clock.advance(10_000);
    expect((await attempt).ok).toBe(true);
    expect(deliveries).toHaveLength(1);
    const { body, headers } = deliveries[0]!;
    expect(headers['webhook-id']).toMatch(/^wh_/);
    expect(headers['content-type']).toBe('application/json');
    const event = await sdk.webhooks.unwrap(body, toHeaders(headers));
    expect(event.type === 'response.completed' && event.data.id).toBe(created.id);
  });

  it('cancelled, failed and incomplete are delivered with their own types; synchronous responses send none', async () => {
    const { client, clock, emu, deliveries, sdk } = await setup();
    const sync = client.responses.create({ model: 'm', input: 'x' });
    await once(emu, 'created');
    await clock.advance(10_000);
    expect((await sync).status).toBe('completed');
    const a = await client.responses.create({ model: 'm', input: 'x', background: true });
    const attempt = nextAttempt(emu);
    await client.responses.cancel(a.id);
    await attempt;
    emu.faultNext({ failWith: { code: 'server_error', message: 'boom' } });
    await client.responses.create({ model: 'm', input: 'x', background: true });
    let next = nextAttempt(emu);
    await clock.advance(10_000);
    await next;
    emu.faultNext({ incompleteReason: 'content_filter' });
    await client.responses.create({ model: 'm', input: 'x y z', background: true });
    next = nextAttempt(emu);
    await clock.advance(10_000);
    await next;
    const types = await Promise.all(
      deliveries.map(async (d) => (await sdk.webhooks.unwrap(d.body, toHeaders(d.headers))).type),
    );
    expect(types).toEqual(['response.cancelled', 'response.failed', 'response.incomplete']);
  });

  it('retries a failed delivery (5xx, then a redirect, which is not followed) with backoff and the same webhook-id', async () => {
    const { client, clock, emu, deliveries, sdk } = await setup([500, 302]);
    await client.responses.create({ model: 'm', input: 'x', background: true });
    let attempt = nextAttempt(emu);
    await clock.advance(10_000 - 1000);
    expect(await attempt).toMatchObject({ attempt: 1, status: 500, ok: false, final: false });
    attempt = nextAttempt(emu);
    await clock.advance(1000);
    expect(await attempt).toMatchObject({ attempt: 2, status: 302, ok: false, final: false });
    attempt = nextAttempt(emu);
    await clock.advance(1999);
    expect(deliveries).toHaveLength(2);
    await clock.advance(1);
    expect(await attempt).toMatchObject({ attempt: 3, status: 200, ok: true, final: true });
    expect(new Set(deliveries.map((d) => d.headers['webhook-id'])).size).toBe(1);
    for (const d of deliveries) await sdk.webhooks.unwrap(d.body, toHeaders(d.headers));
  });

  it('gives up after maxAttempts', async () => {
    const { client, clock, emu } = await setup([503, 503, 503, 503]);
    await client.responses.create({ model: 'm', input: 'x', background: true });
    const attempts: WebhookAttempt[] = [];
    emu.on('webhook', (a) => attempts.push(a));
    for (let i = 0; i < 3; i++) {
      const next = nextAttempt(emu);
      await clock.advance(10_000);
      await next;
    }
    await clock.advance(3_600_000);
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
    expect(attempts.at(-1)?.final).toBe(true);
  });

  it('duplicates and delays by fault: the copies share one webhook-id and arrive after the delay', async () => {
    const { client, clock, emu, deliveries } = await setup();
    emu.faultNext({ webhookDuplicates: 1, webhookDelayMs: 30_000 });
    await client.responses.create({ model: 'm', input: 'x', background: true });
    await clock.advance(10_000);
    expect(deliveries).toHaveLength(0);
    const seen: WebhookAttempt[] = [];
    emu.on('webhook', (a) => seen.push(a));
    await clock.advance(30_000);
    while (seen.length < 2) await once(emu, 'webhook');
    expect(deliveries).toHaveLength(2);
    expect(deliveries[0]!.headers['webhook-id']).toBe(deliveries[1]!.headers['webhook-id']);
  });

  it('duplicateRate sends seeded optional duplicates under the same webhook-id', async () => {
    const { client, clock, emu, deliveries } = await setup([], { duplicateRate: 1 });
    const seen: WebhookAttempt[] = [];
    emu.on('webhook', (a) => seen.push(a));
    await client.responses.create({ model: 'm', input: 'x', background: true });
    await clock.advance(10_000);
    while (seen.length < 2) await once(emu, 'webhook');
    expect(deliveries.map((d) => d.headers['webhook-id'])).toEqual([seen[0]!.webhookId, seen[0]!.webhookId]);
  });

  it('a tampered body or a wrong secret fails verification with the SDK error', async () => {
    const { client, clock, emu, deliveries, sdk } = await setup();
    await client.responses.create({ model: 'm', input: 'x', background: true });
    const attempt = nextAttempt(emu);
    await clock.advance(10_000);
    await attempt;
    const { body, headers } = deliveries[0]!;
    await expect(
      sdk.webhooks.unwrap(body.replace('response.completed', 'response.failed'), toHeaders(headers)),
    ).rejects.toBeInstanceOf(OpenAI.InvalidWebhookSignatureError);
    const other = `whsec_${Buffer.from('another key, 32 bytes long......').toString('base64')}`;
    await expect(sdk.webhooks.unwrap(body, toHeaders(headers), other)).rejects.toBeInstanceOf(
      OpenAI.InvalidWebhookSignatureError,
    );
  });
});
