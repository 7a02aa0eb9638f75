import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TaskplaneError } from '../../src/core/errors.ts';
import { KEY_A, planeApp } from './plane-app-fixture.ts';

/** A debug-level logger whose lines land in `lines`, parsed. */
function captureLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const at = (level: 'error' | 'debug') => lines.filter((l) => l.level === pino.levels.values[level]);
  return { logger, lines, at };
}

const auth = { authorization: `Bearer ${KEY_A}` };
const SECRET = 'connect ECONNREFUSED db-7.internal:5432';

describe('the plane server answers every error from one handler', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await close?.();
    close = undefined;
  });

  async function app() {
    const log = captureLogger();
    const h = await planeApp({ logger: log.logger });
    close = h.close;
    return { ...h, log };
  }

  it('a route failing unexpectedly answers 500 without its text and logs it once at error level', async () => {
    const h = await app();
    vi.spyOn(h.plane, 'list').mockRejectedValue(new Error(SECRET));
    const res = await h.fetch('/v1/tasks', { headers: auth });
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: { code: 'internal', message: 'internal error', field: null } });
    expect(text).not.toContain('db-7');
    const errors = h.log.at('error');
    expect(errors).toHaveLength(1);
    const err = errors[0]!.err as { message: string; stack: string };
    expect(err.message).toBe(SECRET);
    expect(err.stack).toContain('Error: ' + SECRET);
    expect(errors[0]).toMatchObject({ method: 'GET', path: '/v1/tasks' });
  });

  it('an answer the caller caused is logged at debug only', async () => {
    const h = await app();
    const missing = await h.fetch('/v1/tasks/nope', { headers: auth });
    expect(missing.status).toBe(404);
    expect((await missing.json()).error.code).toBe('not_found');
    const bad = await h.fetch('/v1/tasks?limit=0', { headers: auth });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: { code: 'invalid_argument', message: 'limit: integer in 1..500', field: 'limit' },
    });
    const anonymous = await h.fetch('/v1/tasks');
    expect(anonymous.status).toBe(401);
    expect(h.log.at('error')).toHaveLength(0);
    expect(h.log.at('debug').filter((l) => l.msg === 'request refused')).toHaveLength(3);
  });

  it('a configuration error reaching a route is the server’s fault: 500, logged at error level', async () => {
    const h = await app();
    vi.spyOn(h.plane, 'list').mockRejectedValue(
      new TaskplaneError('config', 'store: bad URL', { field: 'store' }),
    );
    const res = await h.fetch('/v1/tasks', { headers: auth });
    expect(res.status).toBe(500);
    expect((await res.json()).error).toEqual({ code: 'config', message: 'internal error', field: 'store' });
    expect(h.log.at('error')).toHaveLength(1);
  });

  it('the webhook route answers 401 to an unexpected failure but still logs it at error level', async () => {
    const h = await app();
    vi.spyOn(h.plane, 'handleWebhook').mockRejectedValue(new Error(SECRET));
    const res = await h.fetch('/v1/webhooks/a2a/fake', { method: 'POST', body: '{}' });
    expect(res.status).toBe(401);
    expect(await res.text()).not.toContain('db-7');
    const errors = h.log.at('error');
    expect(errors).toHaveLength(1);
    expect((errors[0]!.err as { message: string }).message).toBe(SECRET);
  });

  it('the webhook route passes a store or remote outage through as 503 for the sender to retry', async () => {
    const h = await app();
    vi.spyOn(h.plane, 'handleWebhook').mockRejectedValue(new TaskplaneError('unavailable', 'store is down'));
    const res = await h.fetch('/v1/webhooks/a2a/fake', { method: 'POST', body: '{}' });
    expect(res.status).toBe(503);
    expect((await res.json()).error.code).toBe('unavailable');
    expect(h.log.at('error')).toHaveLength(0);
  });
});
