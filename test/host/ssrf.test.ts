import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SystemClock, VirtualClock } from '../../src/core/clock.ts';
import { Webhook } from 'standardwebhooks';
import { createPushSender } from '../../src/host/push-sender.ts';
import { isPublicAddress, type Resolver } from '../../src/core/public-address.ts';
import { checkWebhookUrl } from '../../src/host/ssrf.ts';
import { PushReceiver } from './helpers.ts';

/**
 * The dispatch-time SSRF check, table-driven. DNS is a fake (no real lookups; this machine has no
 * network besides loopback and nothing here sends traffic to a non-loopback address).
 */
const DNS: Record<string, string[]> = {
  localhost: ['127.0.0.1', '::1'],
  'localtest.me': ['127.0.0.1'],
  'metadata.google.internal': ['169.254.169.254'],
  'intranet.corp.example': ['10.1.2.3'],
  'mixed.example': ['93.184.215.14', '192.168.1.10'],
  'rebind.example': ['::ffff:10.0.0.1'],
  'compat.example': ['::7f00:1'],
  'hooks.example.com': ['93.184.215.14'],
  'v6.example.com': ['2606:4700:4700::1111'],
};
const fakeResolver: Resolver = async (host) => {
  const addrs = DNS[host];
  if (!addrs) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return addrs.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

const REFUSED: Array<[string, string]> = [
  ['loopback 127.0.0.1', 'http://127.0.0.1/hook'],
  ['loopback 127.255.255.254 (all of 127/8)', 'http://127.255.255.254:8080/hook'],
  ['IPv6 loopback ::1', 'http://[::1]/hook'],
  ['private 10/8', 'http://10.0.0.5/hook'],
  ['private 172.16/12 (low)', 'http://172.16.0.1/hook'],
  ['private 172.16/12 (high)', 'https://172.31.255.254/hook'],
  ['private 192.168/16', 'http://192.168.1.1/hook'],
  ['link-local 169.254/16', 'http://169.254.10.10/hook'],
  ['cloud metadata 169.254.169.254', 'http://169.254.169.254/latest/meta-data/'],
  ['unique-local fd00::/8', 'http://[fd00::1]/hook'],
  ['unique-local fc00::/7', 'http://[fc12:3456::1]/hook'],
  ['IPv6 link-local fe80::/10', 'http://[fe80::1]/hook'],
  ['IPv4-mapped IPv6 loopback ::ffff:127.0.0.1', 'http://[::ffff:127.0.0.1]/hook'],
  ['IPv4-mapped IPv6 private ::ffff:192.168.0.1', 'http://[::ffff:c0a8:1]/hook'],
  ['IPv4-compatible IPv6 loopback ::127.0.0.1', 'http://[::127.0.0.1]/hook'],
  ['IPv4-compatible IPv6 loopback, hex ::7f00:1', 'http://[::7f00:1]/hook'],
  ['IPv4-compatible IPv6 private ::10.0.0.1', 'http://[::10.0.0.1]/hook'],
  ['IPv4-compatible IPv6 metadata ::169.254.169.254', 'http://[::a9fe:a9fe]/hook'],
  ['unspecified 0.0.0.0', 'http://0.0.0.0/hook'],
  ['unspecified ::', 'http://[::]/hook'],
  ['CGNAT 100.64/10', 'http://100.64.0.1/hook'],
  ['broadcast', 'http://255.255.255.255/hook'],
  ['multicast 224/4', 'http://224.0.0.1/hook'],
  ['6to4 embedding loopback', 'http://[2002:7f00:1::1]/hook'],
  ['NAT64 embedding loopback', 'http://[64:ff9b::7f00:1]/hook'],
  ['decimal-encoded loopback 2130706433', 'http://2130706433/hook'],
  ['DNS name resolving to loopback: localhost', 'http://localhost:4100/hook'],
  ['DNS name resolving to loopback: localtest.me', 'https://localtest.me/hook'],
  ['DNS name resolving to metadata', 'http://metadata.google.internal/computeMetadata/v1/'],
  ['DNS name resolving to 10/8', 'https://intranet.corp.example/hook'],
  ['DNS name with one public and one private address', 'https://mixed.example/hook'],
  ['DNS name resolving to IPv4-mapped private', 'https://rebind.example/hook'],
  ['DNS name resolving to IPv4-compatible loopback', 'https://compat.example/hook'],
  ['unresolvable name', 'https://nope.invalid/hook'],
  ['file: scheme', 'file:///etc/passwd'],
  ['ftp: scheme', 'ftp://hooks.example.com/hook'],
  ['gopher: scheme', 'gopher://hooks.example.com/'],
  ['data: scheme', 'data:text/plain,hi'],
  ['not a URL', 'hooks.example.com/hook'],
];

describe('webhook SSRF check (refused by default)', () => {
  it.each(REFUSED)('refuses %s', async (_label, url) => {
    const result = await checkWebhookUrl(url, fakeResolver);
    expect(result.ok).toBe(false);
  });

  it.each([
    ['a public IPv4 name', 'https://hooks.example.com/a2a'],
    ['a public IPv6 name', 'https://v6.example.com/a2a'],
    ['a public IPv4 literal', 'http://93.184.215.14:8443/a2a'],
  ])('accepts %s', async (_label, url) => {
    const result = await checkWebhookUrl(url, fakeResolver);
    expect(result.ok).toBe(true);
  });

  it('pins the connection to the checked address', async () => {
    const result = await checkWebhookUrl('https://hooks.example.com/a2a', fakeResolver);
    expect(result).toMatchObject({ ok: true, address: '93.184.215.14', family: 4 });
  });

  it('--allow-private-webhooks lifts the address rule but never the scheme rule', async () => {
    expect((await checkWebhookUrl('http://127.0.0.1/hook', fakeResolver, true)).ok).toBe(true);
    expect((await checkWebhookUrl('http://localhost/hook', fakeResolver, true)).ok).toBe(true);
    expect((await checkWebhookUrl('file:///etc/passwd', fakeResolver, true)).ok).toBe(false);
  });

  it('classifies addresses', () => {
    expect(isPublicAddress('8.8.8.8')).toBe(true);
    expect(isPublicAddress('::ffff:8.8.8.8')).toBe(true);
    expect(isPublicAddress('::808:808')).toBe(true); // IPv4-compatible, judged as 8.8.8.8
    expect(isPublicAddress('::1')).toBe(false);
    expect(isPublicAddress('192.0.2.1')).toBe(false); // TEST-NET-1, reserved
    expect(isPublicAddress('not-an-ip')).toBe(false);
  });
});

describe('push sender', () => {
  const receiver = new PushReceiver();
  let base: string;
  beforeAll(async () => {
    base = await receiver.start();
  });
  afterAll(() => receiver.close());

  const sender = (allowPrivate: boolean) =>
    createPushSender({ clock: new SystemClock(), resolve: fakeResolver, allowPrivate, timeoutMs: 5000 });

  it('refuses a loopback receiver by default without connecting', async () => {
    const before = receiver.received.length;
    const result = await sender(false)({ url: `${base}/hook`, body: '{}', deliveryId: 'd1' });
    expect(result.ok).toBe(false);
    expect(receiver.received.length).toBe(before);
  });

  it('a header value Node cannot send is a failed attempt, not a thrown error, and sends nothing', async () => {
    const before = receiver.received.length;
    const result = await sender(true)({
      url: `${base}/hook`,
      body: '{}',
      deliveryId: 'd-crlf',
      authorization: 'Bearer x\r\nX-Injected: 1',
    });
    expect(result).toMatchObject({ ok: false, error: 'header authorization: invalid characters' });
    expect(receiver.received.length).toBe(before);
  });

  it('treats a redirect as a failure and does not follow it', async () => {
    receiver.status = 302;
    try {
      const result = await sender(true)({ url: `${base}/hook`, body: '{}', deliveryId: 'd2' });
      expect(result).toMatchObject({ ok: false });
      expect(!result.ok && result.error).toMatch(/redirect 302/);
    } finally {
      receiver.status = 200;
    }
  });

  it('delivers with Authorization, a2a+json, the delivery id and the A2A token header when allowed', async () => {
    const body = '{"task":{}}';
    const result = await sender(true)({
      url: `${base}/hook`,
      body,
      deliveryId: 'd3',
      authorization: 'Bearer x',
      token: 'tok-abc',
    });
    expect(result.ok).toBe(true);
    const last = receiver.received[receiver.received.length - 1]!;
    expect(last.headers['a2a-delivery-id']).toBe('d3');
    expect(last.headers.authorization).toBe('Bearer x');
    expect(last.headers['content-type']).toBe('application/a2a+json');
    expect(last.headers['x-a2a-notification-token']).toBe('tok-abc');
    // Unsigned unless the host has a signing secret: the token is readable by clients, never a key.
    expect(last.headers['webhook-signature']).toBeUndefined();
    expect(last.headers['taskplane-signature']).toBeUndefined();
  });

  it('signs with Standard Webhooks headers when given a signing secret; the package verifies them', async () => {
    const secret = 'whsec_' + Buffer.alloc(32, 0x5a).toString('base64');
    const send = createPushSender({
      clock: new SystemClock(),
      resolve: fakeResolver,
      allowPrivate: true,
      timeoutMs: 5000,
      signingSecret: secret,
    });
    const body = '{"statusUpdate":{"taskId":"t1"}}';
    expect((await send({ url: `${base}/hook`, body, deliveryId: 'd4', token: 'tok-abc' })).ok).toBe(true);
    const last = receiver.received[receiver.received.length - 1]!;
    expect(last.headers['webhook-id']).toBe('d4');
    expect(last.headers['x-a2a-notification-token']).toBe('tok-abc');
    const headers = last.headers as Record<string, string>;
    expect(new Webhook(secret).verify(last.raw, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(last.raw.replace('t1', 't2'), headers)).toThrow(/signature/);
    expect(() =>
      new Webhook('whsec_' + Buffer.alloc(32, 1).toString('base64')).verify(last.raw, headers),
    ).toThrow(/signature/);
  });

  it('refuses a signing secret that is not whsec_ base64 of at least 16 bytes, naming the option', () => {
    for (const signingSecret of ['', 'whsec_not base64!', 'whsec_' + Buffer.alloc(8).toString('base64')])
      expect(() =>
        createPushSender({
          clock: new SystemClock(),
          resolve: fakeResolver,
          allowPrivate: true,
          timeoutMs: 1,
          signingSecret,
        }),
      ).toThrow(/pushSigningSecret/);
  });
});

describe('push timeout (virtual clock)', () => {
  it('a receiver that never answers is cut off after the per-call timeout', async () => {
    let arrived!: () => void;
    const reached = new Promise<void>((r) => (arrived = r));
    const hanging = createServer(() => arrived()); // reads the request, never responds
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', () => r()));
    try {
      const clock = new VirtualClock(0);
      const send = createPushSender({ clock, resolve: fakeResolver, allowPrivate: true, timeoutMs: 15_000 });
      const port = (hanging.address() as AddressInfo).port;
      const result = send({ url: `http://127.0.0.1:${port}/hook`, body: '{}', deliveryId: 'd-timeout' });
      await reached;
      await clock.advance(14_999);
      let settled = false;
      void result.then(() => (settled = true));
      await clock.advance(0);
      expect(settled).toBe(false);
      await clock.advance(1);
      expect(await result).toMatchObject({ ok: false, error: 'timed out after 15000 ms' });
    } finally {
      hanging.closeAllConnections();
      await new Promise<void>((r) => hanging.close(() => r()));
    }
  });
});
