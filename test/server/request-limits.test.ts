import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_A, deepArray, endlessBody, planeApp } from './plane-app-fixture.ts';

type App = Awaited<ReturnType<typeof planeApp>>;
let app: App;
let small: App;
const auth = { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' };

beforeAll(async () => {
  app = await planeApp();
  small = await planeApp({ limits: { maxBodyBytes: 2048, maxWebhookBytes: 512, maxJsonDepth: 8 } });
});
afterAll(async () => {
  await app?.close();
  await small?.close();
});

async function errorOf(res: Response) {
  return ((await res.json()) as { error: { code: string; field: string | null } }).error;
}

const BODY_ROUTES = ['/v1/tasks', '/v1/tasks/tsk_x/cancel', '/v1/tasks/tsk_x/input'];
const WEBHOOK = '/v1/webhooks/a2a/fake?envelope=tsk_x';

describe('request bodies are limited while they stream in', () => {
  it('a task input over the default 1 MiB is refused with 413 and nothing is stored', async () => {
    const body = JSON.stringify({ target: 'fake', input: 'x'.repeat(2 * 1024 * 1024) });
    const res = await app.fetch('/v1/tasks', { method: 'POST', headers: auth, body });
    expect(res.status).toBe(413);
    expect(await errorOf(res)).toMatchObject({ code: 'payload_too_large', field: 'body' });
    expect((await app.store.listEnvelopes({ tenant: 'alpha' })).items).toHaveLength(0);
  });

  it('every body route refuses an endless chunked body after reading only about the limit', async () => {
    for (const path of [...BODY_ROUTES, WEBHOOK]) {
      const { body, pulled } = endlessBody(new Uint8Array(256).fill(0x20));
      const res = await small.fetch(path, { method: 'POST', headers: auth, body });
      expect(res.status, path).toBe(413);
      expect(await errorOf(res)).toMatchObject({ code: 'payload_too_large', field: 'body' });
      // The limit is 2048 (routes) or 512 (webhook) bytes: a few chunks of 256, plus what streams read ahead.
      expect(pulled(), path).toBeLessThan(20);
    }
  });

  it('a refused body closes the connection instead of reading the rest', async () => {
    const { body } = endlessBody(new Uint8Array(256).fill(0x20));
    const res = await small.fetch('/v1/tasks', { method: 'POST', headers: auth, body });
    expect(res.status).toBe(413);
    expect(res.headers.get('connection')).toBe('close');
  });

  it('a declared Content-Length over the limit is refused before the body is read', async () => {
    const { body, pulled } = endlessBody(new Uint8Array(256));
    const res = await small.fetch('/v1/tasks', {
      method: 'POST',
      headers: { ...auth, 'content-length': '1000000' },
      body,
    });
    expect(res.status).toBe(413);
    expect(pulled()).toBeLessThanOrEqual(1);
  });

  it('the webhook route, which needs no key, has a small limit by default', async () => {
    const res = await app.fetch(WEBHOOK, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pad: 'x'.repeat(100 * 1024) }),
    });
    expect(res.status).toBe(413);
  });

  it('a body within the limit is taken', async () => {
    const body = JSON.stringify({ target: 'fake', input: { text: 'x'.repeat(1500) } });
    expect(body.length).toBeLessThan(2048);
    const res = await small.fetch('/v1/tasks', { method: 'POST', headers: auth, body });
    expect(res.status).toBe(202);
  });
});

describe('JSON nesting is limited at parse time', () => {
  it('a deeply nested task input is a 400 naming the body, never a 500, and nothing is stored', async () => {
    const body = `{"target":"fake","input":${deepArray(100_000)}}`;
    const res = await app.fetch('/v1/tasks', { method: 'POST', headers: auth, body });
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ code: 'invalid_argument', field: 'body' });
    expect((await app.store.listEnvelopes({ tenant: 'alpha' })).items).toHaveLength(0);
  });

  it('nesting at the configured limit is taken, one level more is refused', async () => {
    const at = `{"target":"fake","input":${deepArray(7)}}`;
    expect((await small.fetch('/v1/tasks', { method: 'POST', headers: auth, body: at })).status).toBe(202);
    const over = `{"target":"fake","input":${deepArray(8)}}`;
    expect((await small.fetch('/v1/tasks', { method: 'POST', headers: auth, body: over })).status).toBe(400);
  });

  it('nesting is refused as it streams in, at the first byte past the limit', async () => {
    for (const path of ['/v1/tasks', WEBHOOK]) {
      const { body, pulled } = endlessBody(new TextEncoder().encode('['.repeat(256)));
      const res = await app.fetch(path, { method: 'POST', headers: auth, body });
      expect(res.status, path).toBe(400);
      expect(await errorOf(res)).toMatchObject({ code: 'invalid_argument', field: 'body' });
      expect(res.headers.get('connection')).toBe('close');
      expect(pulled(), path).toBeLessThan(5);
    }
  });

  it('brackets inside strings do not count', async () => {
    const body = JSON.stringify({ target: 'fake', input: { text: '['.repeat(100) + '{'.repeat(100) } });
    expect((await small.fetch('/v1/tasks', { method: 'POST', headers: auth, body })).status).toBe(202);
  });

  it('a deeply nested body on the other routes and the webhook route is a 400, never a 500', async () => {
    for (const path of [...BODY_ROUTES, WEBHOOK]) {
      const body = `{"actor":"a","value":${deepArray(20_000)}}`;
      const res = await app.fetch(path, { method: 'POST', headers: auth, body });
      expect(res.status, path).toBe(400);
      expect(await errorOf(res)).toMatchObject({ code: 'invalid_argument', field: 'body' });
    }
  });
});

describe('request bodies are JSON', () => {
  it('a body sent as a form (curl -d) is refused with 415 naming the content type, and nothing is stored', async () => {
    const before = (await app.store.listEnvelopes({ tenant: 'alpha' })).items.length;
    const res = await app.fetch('/v1/tasks', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
      body: JSON.stringify({ target: 'fake', input: 'form' }),
    });
    expect(res.status).toBe(415);
    const error = await errorOf(res);
    expect(error).toMatchObject({ code: 'unsupported_media_type', field: 'content-type' });
    expect((await app.store.listEnvelopes({ tenant: 'alpha' })).items.length).toBe(before);
  });

  it('JSON with parameters or a +json type is taken', async () => {
    for (const type of ['application/json; charset=utf-8', 'application/vnd.example+json']) {
      const headers = { authorization: auth.authorization, 'content-type': type };
      const res = await app.fetch('/v1/tasks', {
        method: 'POST',
        headers,
        body: JSON.stringify({ target: 'fake', input: `typed ${type}` }),
      });
      expect(res.status, type).toBe(202);
    }
  });
});
