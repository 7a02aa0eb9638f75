import { afterEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import type { Envelope } from '../../src/core/envelope.ts';
import { createVerifierTransport } from '../../src/server/verifier-transport.ts';
import { KEY_A, KEY_B, planeApp } from './plane-app-fixture.ts';
import { startVerifier, type VerifierAnswer } from './verifier-server.ts';

/**
 * The external verifier acceptance check over HTTP, as a caller meets it: POST /v1/tasks naming a
 * verifier, a real verifier on a loopback port, the verdict read back from GET /v1/tasks/{id}.
 */

type App = Awaited<ReturnType<typeof planeApp>>;
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function setup(script: VerifierAnswer[], allowPrivate = true) {
  const verifier = await startVerifier(script);
  closers.push(() => verifier.close());
  const app = await planeApp({
    verifier: createVerifierTransport({ allowPrivate }),
    planeOptions: { acceptance: { verifierRetryMs: 20 } },
  });
  closers.push(() => app.close());
  return { app, verifier };
}

const auth = (key = KEY_A) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

async function createTask(app: App, verifier: Record<string, unknown>) {
  const res = await app.fetch('/v1/tasks?wait=started', {
    method: 'POST',
    headers: auth(),
    body: JSON.stringify({
      target: 'fake',
      input: 'charge',
      acceptance: { receipt: { pointer: '/receiptId' }, verifier },
    }),
  });
  return { res, body: (await res.json()) as Envelope & { error?: { field?: string; message: string } } };
}

/** Reads the task on every store change until `done` holds (bounded). */
async function taskUntil(app: App, id: string, done: (t: Envelope) => boolean): Promise<Envelope> {
  const read = async () =>
    (await (await app.fetch(`/v1/tasks/${id}`, { headers: auth() })).json()) as Envelope;
  const deadline = Date.now() + 15_000;
  for (;;) {
    const t = await read();
    if (done(t)) return t;
    if (Date.now() > deadline) throw new Error(`task never got there: ${JSON.stringify(t.acceptance)}`);
    await new Promise<void>((r) => {
      const stop = app.store.onChange(() => {
        stop();
        r();
      });
      setTimeout(() => {
        stop();
        r();
      }, 200).unref();
    });
  }
}

function succeed(app: App, task: Envelope) {
  app.remote.set(task.remoteId!, 'succeeded', {
    artifacts: [{ artifactId: 'receipt', content: { receiptId: 'rcpt_42', amountCents: 1250 } }],
  });
}

describe('acceptance: external verifier', () => {
  it('a 2xx {accepted: true} accepts; the request carries output and receipt, signed with the tenant key', async () => {
    const { app, verifier } = await setup([{ status: 200, body: { accepted: true, reasons: [] } }]);
    const { res, body: task } = await createTask(app, { url: verifier.url });
    expect(res.status).toBeLessThan(300);
    expect(task.acceptance?.verifier).toMatchObject({ url: verifier.url, from: 'task' });
    succeed(app, task);
    const done = await taskUntil(app, task.id, (t) => t.acceptance?.status !== 'pending');
    expect(done.state).toBe('succeeded');
    expect(done.acceptance).toMatchObject({
      status: 'accepted',
      receiptId: 'rcpt_42',
      checks: [
        { check: 'receipt', verdict: 'passed' },
        { check: 'verifier', verdict: 'passed' },
      ],
      verification: { dueAt: null, attempts: 1, outcome: 'answered' },
    });
    const got = verifier.received[0]!;
    expect(JSON.parse(got.body)).toMatchObject({
      type: 'taskplane.acceptance.verify',
      taskId: task.id,
      receiptId: 'rcpt_42',
      output: [{ artifactId: 'receipt', parts: [{ kind: 'data', data: { receiptId: 'rcpt_42' } }] }],
    });
    const secret = async (key: string) =>
      ((await (await app.fetch('/v1/verifier-secret', { headers: auth(key) })).json()) as { secret: string })
        .secret;
    const mine = await secret(KEY_A);
    expect(() => new Webhook(mine).verify(got.body, got.headers)).not.toThrow();
    // Another tenant's key does not sign for this one.
    const theirs = await secret(KEY_B);
    expect(theirs).not.toBe(mine);
    expect(() => new Webhook(theirs).verify(got.body, got.headers)).toThrow();
  });

  it('a 2xx {accepted: false, reasons} rejects with those reasons; the task stays succeeded', async () => {
    const { app, verifier } = await setup([
      { status: 200, body: { accepted: false, reasons: ['amount does not match the order'] } },
    ]);
    const { body: task } = await createTask(app, { url: verifier.url });
    succeed(app, task);
    const done = await taskUntil(app, task.id, (t) => t.acceptance?.status !== 'pending');
    expect(done.state).toBe('succeeded');
    expect(done.acceptance).toMatchObject({
      status: 'rejected',
      reasons: ['amount does not match the order'],
      checks: [{ check: 'receipt' }, { check: 'verifier', verdict: 'failed' }],
    });
    const events = (await (await app.fetch(`/v1/tasks/${task.id}/history`, { headers: auth() })).json()) as {
      events: Array<{ type: string; data: Record<string, unknown> }>;
    };
    expect(events.events.filter((e) => e.type === 'acceptance').map((e) => e.data.status)).toEqual([
      'pending',
      'rejected',
    ]);
  });

  it('a 500 is retried with backoff, and the answer after it decides', async () => {
    const { app, verifier } = await setup([
      { status: 500, body: { error: 'down' } },
      { status: 503 },
      { status: 200, body: { accepted: true } },
    ]);
    const { body: task } = await createTask(app, { url: verifier.url, maxAttempts: 5 });
    succeed(app, task);
    const done = await taskUntil(app, task.id, (t) => t.acceptance?.status !== 'pending');
    expect(done.acceptance).toMatchObject({
      status: 'accepted',
      verification: { attempts: 3, outcome: 'answered', lastError: null },
    });
    expect(verifier.received).toHaveLength(3);
    // The same message each time: one webhook-id per task, so the verifier can deduplicate.
    expect(new Set(verifier.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
  });

  it('a verifier that never answers in time leaves acceptance pending, with why; a person can still decide', async () => {
    const { app, verifier } = await setup([{ status: 200, body: { accepted: true }, delayMs: 5_000 }]);
    const { body: task } = await createTask(app, { url: verifier.url, timeoutMs: 100, maxAttempts: 2 });
    succeed(app, task);
    const done = await taskUntil(app, task.id, (t) => t.acceptance?.verification?.outcome === 'gave_up');
    expect(done.acceptance).toMatchObject({
      status: 'pending',
      verification: { dueAt: null, attempts: 2, lastError: 'timed out after 100 ms' },
    });
    expect(done.acceptance?.reasons[0]).toMatch(/verifier gave no verdict after 2 attempt\(s\): timed out/);
    expect(done.acceptance?.checks?.some((c) => c.check === 'verifier')).toBe(false);
    const decided = await app.fetch(`/v1/tasks/${task.id}/acceptance`, {
      method: 'POST',
      headers: auth(),
      body: JSON.stringify({ decision: 'accepted', reason: 'checked the ledger by hand' }),
    });
    expect(((await decided.json()) as Envelope).acceptance?.status).toBe('accepted');
  });

  it('a 4xx other than 408/429 is not retried: acceptance stays pending with the status', async () => {
    const { app, verifier } = await setup([{ status: 401, body: { error: 'bad signature' } }]);
    const { body: task } = await createTask(app, { url: verifier.url, maxAttempts: 5 });
    succeed(app, task);
    const done = await taskUntil(app, task.id, (t) => t.acceptance?.verification?.outcome === 'gave_up');
    expect(done.acceptance).toMatchObject({
      status: 'pending',
      verification: { attempts: 1, lastError: 'HTTP 401' },
    });
    expect(verifier.received).toHaveLength(1);
  });

  it('a verifier URL the SSRF guard refuses is a 400 at create naming the field, and nothing is created', async () => {
    const { app, verifier } = await setup([{ status: 200, body: { accepted: true } }], false);
    for (const url of [verifier.url, 'http://169.254.169.254/latest', 'ftp://example.com/x']) {
      const { res, body } = await createTask(app, { url });
      expect(res.status).toBe(400);
      expect(body.error?.field).toBe('acceptance.verifier.url');
      expect(body.error?.message).toMatch(/refused: (resolves to a private|scheme)/);
    }
    const creds = await createTask(app, { url: 'https://user:pw@example.com/v' });
    expect(creds.res.status).toBe(400);
    expect(creds.body.error?.message).toMatch(/must not carry credentials/);
    const bad = await createTask(app, { url: 'https://example.com/v', timeoutMs: 0 });
    expect(bad.body.error?.field).toBe('acceptance.verifier.timeoutMs');
    const list = (await (await app.fetch('/v1/tasks', { headers: auth() })).json()) as { tasks: unknown[] };
    expect(list.tasks).toHaveLength(0);
    expect(verifier.received).toHaveLength(0);
  });
});
