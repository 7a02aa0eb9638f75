import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SystemClock } from '../../src/core/clock.ts';
import { OpenAIEmulator } from '../emulators/openai/emulator.ts';
import type { ResponseRun } from '../emulators/openai/responses.ts';
import type { WebhookAttempt } from '../emulators/openai/webhooks.ts';
import { freePort, spawnTaskplane, type TestProcess } from '../support/process.ts';
import { EventFollower, PlaneClient, type PlaneEvent } from './plane-client.ts';

/**
 * `taskplane serve` with an `openai` target against the OpenAI emulator (test/emulators/openai/), real
 * processes on loopback: the plane talks to it only through the official `openai` SDK, and the
 * emulator's webhooks reach the plane's ingress signed with the project secret. Each case waits on the
 * plane's event stream, never on a sleep.
 */
const KEY = 'e2e-openai-key-0123456789';
const BUDGET_KEY = 'e2e-budget-key-0123456789';
const SECRET = 'whsec_' + Buffer.from('0123456789abcdef0123456789abcdef').toString('base64');
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired', 'lost']);
/** Prices per million tokens in micro-dollars: 1 per input token, 4 per output token. */
const PRICES = { unit: 'usd_micros', inputPerMillionTokens: 1_000_000, outputPerMillionTokens: 4_000_000 };

interface Task {
  id: string;
  state: string;
  nativeState: string | null;
  remoteId: string | null;
  streamCursor: string | null;
  usage: Record<string, number> | null;
  cancel: { outcome: string | null } | null;
  reconciliation: { result: string; note?: string } | null;
  artifacts: Array<{ artifactId: string; kept?: boolean }>;
  output?: { text?: string | null } | null;
}

const words = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');
const tokens = (text: string) => text.match(/\s*\S+/g)?.length ?? 1;

/** The plane's events of one tenant, with waits on them. */
class Watch {
  readonly events: PlaneEvent[] = [];
  private readonly waiters = new Set<() => void>();
  private readonly follower: EventFollower;

  constructor(readonly client: PlaneClient) {
    this.follower = new EventFollower(client, (e) => {
      this.events.push(e);
      for (const w of [...this.waiters]) w();
    });
  }

  stop(): void {
    this.follower.stop();
  }

  of(id: string): PlaneEvent[] {
    return this.events.filter((e) => e.envelopeId === id);
  }

  async task(id: string): Promise<Task> {
    const r = await this.client.call<Task>('GET', `/v1/tasks/${id}`);
    if (r.status !== 200) throw new Error(`get ${id}: ${r.status}`);
    return r.body;
  }

  /**
   * Resolves once an event of `type` about task `id` has come over the stream. The plane's event stream
   * batches a busy stream's frames, so a task read over the API can be ahead of the events seen here.
   */
  async untilEvent(id: string, type: string, timeoutMs = 10_000): Promise<PlaneEvent> {
    const found = () => this.of(id).find((e) => e.type === type);
    const deadline = Date.now() + timeoutMs;
    while (!found()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for a ${type} event of ${id}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, 500);
        function done() {
          clearTimeout(timer);
          waiters.delete(done);
          resolve();
        }
        const waiters = this.waiters;
        waiters.add(done);
      });
    }
    return found()!;
  }

  /** Resolves with the task once `pred` holds, re-reading it after each of its events. */
  async until(id: string, pred: (t: Task) => boolean, what: string, timeoutMs = 30_000): Promise<Task> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const seen = this.of(id).length;
      const t = await this.task(id).catch(() => null);
      if (t && pred(t)) return t;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(t)}`);
      await new Promise<void>((resolve) => {
        const check = () => {
          if (this.of(id).length > seen) done();
        };
        // Also re-read after a quiet second: the task may change through a restart the follower missed.
        const timer = setTimeout(() => done(), 1000);
        const done = () => {
          clearTimeout(timer);
          this.waiters.delete(check);
          resolve();
        };
        this.waiters.add(check);
      });
    }
  }
}

const textOf = (t: Task) => t.output?.text ?? null;

let emu: OpenAIEmulator;
let plane: TestProcess;
let startPlane: () => Promise<TestProcess>;
let watch: Watch;
let budget: Watch;
const runs: ResponseRun[] = [];
const requests: Array<{ method: string; url: string }> = [];
const webhooks: WebhookAttempt[] = [];
const runsOf = (id: string) => runs.filter((r) => r.request.metadata.taskplane === id);
let planeUrl: string;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'taskplane-openai-e2e-'));
  const planePort = await freePort();
  planeUrl = `http://127.0.0.1:${planePort}`;
  emu = new OpenAIEmulator({
    clock: new SystemClock(),
    queuedMs: 50,
    deltaIntervalMs: 25,
    jitter: 0,
    webhook: { url: `${planeUrl}/v1/webhooks/openai/gpt`, secret: SECRET, firstRetryMs: 200 },
  });
  emu.on('created', (r) => runs.push(r));
  emu.on('request', (r) => requests.push(r));
  emu.on('webhook', (a) => webhooks.push(a));
  const baseUrl = await emu.start();
  const target = (extra: Record<string, unknown> = {}) => ({
    kind: 'openai',
    baseUrl,
    apiKey: { env: 'OPENAI_API_KEY' },
    webhookSecret: { env: 'OPENAI_WEBHOOK_SECRET' },
    model: 'gpt-test',
    prices: PRICES,
    ...extra,
  });
  const targetsFile = join(dir, 'targets.json');
  writeFileSync(
    targetsFile,
    JSON.stringify({
      gpt: target(),
      short: target({ retentionMs: 300 }),
      stale: target({ queuedStaleMs: 300 }),
    }),
  );
  const options = {
    stream: { reattach: { initialIntervalMs: 100, maximumIntervalMs: 500 } },
    reconcile: { intervalMs: 1000, startGraceMs: 500 },
    startRetry: { initialIntervalMs: 100, maximumIntervalMs: 500 },
    requestTimeoutMs: 5000,
    budgets: { tenants: { budget: { limit: 10, unit: 'usd_micros' } }, cancelRunning: true },
  };
  const args = [
    'serve',
    '--port',
    String(planePort),
    '--db',
    `sqlite:${dir}/plane.db`,
    '--targets-file',
    targetsFile,
    '--plane-options',
    JSON.stringify(options),
  ];
  startPlane = () =>
    spawnTaskplane(args, {
      env: {
        TASKPLANE_API_KEYS: `e2e:${KEY},budget:${BUDGET_KEY}`,
        OPENAI_API_KEY: 'sk-test',
        OPENAI_WEBHOOK_SECRET: SECRET,
      },
      ready: /taskplane serve ready (http:\S+)/,
    });
  plane = await startPlane();
  watch = new Watch(new PlaneClient(planeUrl, KEY));
  budget = new Watch(new PlaneClient(planeUrl, BUDGET_KEY));
}, 60_000);

afterAll(async () => {
  watch?.stop();
  budget?.stop();
  await plane?.kill();
  await emu?.close();
});

describe('serve with an openai target against the emulator (real processes)', () => {
  it('a dropped stream resumes after the persisted sequence number: one response, full output, usage and cost', async () => {
    emu.faultNext({ dropStreamAfterEvents: 5 });
    const input = words(30, 'w');
    const created = await watch.client.create('gpt', input);
    const t = await watch.until(created.id, (x) => TERMINAL.has(x.state), 'the outcome');
    expect(t.state).toBe('succeeded');
    const [run, ...others] = runsOf(created.id);
    expect(others).toHaveLength(0);
    expect(t.remoteId).toBe(run!.id);
    // The first stream carried sequence numbers 0..4. The resume asks for what follows the last event the
    // plane committed: undici discards frames still queued unread when the socket dies, so that may be
    // before 4, and those frames are sent again (matrix row 4: a drop before the cursor was persisted).
    const resumes = requests
      .filter((r) => r.method === 'GET' && r.url.startsWith(`/v1/responses/${run!.id}?`))
      .map((r) => new URL(r.url, 'http://x').searchParams);
    expect(resumes[0]?.get('stream')).toBe('true');
    const after = Number(resumes[0]?.get('starting_after'));
    expect(after).toBeGreaterThanOrEqual(0);
    expect(after).toBeLessThanOrEqual(4);
    // Nothing missed or repeated in what the plane recorded: each state once, each artifact once.
    const events = watch.of(created.id);
    expect(events.filter((e) => e.type === 'state_changed').map((e) => e.data.to)).toEqual([
      'running',
      'succeeded',
    ]);
    expect(events.filter((e) => e.type === 'artifact').map((e) => e.data.artifactId)).toEqual([
      'output_text',
      'output',
    ]);
    expect(textOf(t)).toBe(`You said: ${input}`);
    const inputTokens = tokens(input);
    const outputTokens = tokens(`You said: ${input}`);
    expect(t.usage).toMatchObject({
      input_tokens: inputTokens,
      output_tokens: outputTokens,
      total_tokens: inputTokens + outputTokens,
      usd_micros: inputTokens + 4 * outputTokens,
    });
  });

  it('webhooks: duplicates and a delayed delivery after the outcome are answered 2xx and change nothing; the ingress dedups by webhook-id', async () => {
    emu.faultNext({ webhookDuplicates: 2, webhookDelayMs: 600 });
    const created = await watch.client.create('gpt', words(8, 'h'));
    const t = await watch.until(created.id, (x) => TERMINAL.has(x.state), 'the outcome');
    expect(t.state).toBe('succeeded');
    const responseId = t.remoteId!;
    await new Promise<void>((resolve) => {
      const check = () => {
        if (webhooks.filter((w) => w.responseId === responseId && w.final).length >= 3) resolve();
      };
      emu.on('webhook', check);
      check();
    });
    const attempts = webhooks.filter((w) => w.responseId === responseId);
    expect(attempts.length).toBe(3);
    expect(new Set(attempts.map((a) => a.webhookId)).size).toBe(1);
    expect(attempts.every((a) => a.ok && a.status === 200)).toBe(true);
    const after = await watch.task(created.id);
    expect(after.state).toBe('succeeded');
    expect(
      watch.of(created.id).filter((e) => e.type === 'state_changed' && e.data.to === 'succeeded'),
    ).toHaveLength(1);

    // The ingress itself: a signed delivery is recorded once; its repeat is a duplicate; a bad signature is 401.
    const signer = new Webhook(SECRET);
    const post = async (id: string, body: string, signature?: string) => {
      const at = new Date();
      const res = await fetch(`${planeUrl}/v1/webhooks/openai/gpt`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signature ?? signer.sign(id, at, body),
        },
        body,
      });
      return { status: res.status, body: (await res.json().catch(() => null)) as { status?: string } | null };
    };
    const body = JSON.stringify({
      object: 'event',
      id: 'evt_test',
      type: 'response.completed',
      created_at: Math.floor(Date.now() / 1000),
      data: { id: responseId },
    });
    expect(await post('wh_replayed_1', body)).toEqual({ status: 200, body: { status: 'ignored' } });
    expect(await post('wh_replayed_1', body)).toEqual({ status: 200, body: { status: 'duplicate' } });
    expect((await post('wh_forged', body, 'v1,AAAA')).status).toBe(401);
  });

  it("failed and incomplete responses are failed with OpenAI's reason; the partial output of an incomplete one is kept", async () => {
    emu.faultNext({ failWith: { code: 'server_error', message: 'the model fell over' } });
    const failed = await watch.client.create('gpt', words(6, 'f'));
    const f = await watch.until(failed.id, (x) => TERMINAL.has(x.state), 'the failure');
    expect(f).toMatchObject({ state: 'failed', nativeState: 'failed' });
    expect((f as unknown as { error: unknown }).error).toEqual({
      code: 'server_error',
      message: 'the model fell over',
    });

    emu.faultNext({ incompleteReason: 'max_output_tokens' });
    const input = words(10, 'i');
    const cut = await watch.client.create('gpt', input);
    const c = await watch.until(cut.id, (x) => TERMINAL.has(x.state), 'the incomplete outcome');
    expect(c).toMatchObject({ state: 'failed', nativeState: 'incomplete:max_output_tokens' });
    expect(textOf(c)?.length).toBeGreaterThan(0);
    expect(`You said: ${input}`.startsWith(textOf(c)!)).toBe(true);
    expect(textOf(c)).not.toBe(`You said: ${input}`);
  });

  it('cancel that loses the race: recorded as succeeded after cancel was requested', async () => {
    emu.faultNext({ cancelLosesRace: true });
    const created = await watch.client.create('gpt', words(60, 'c'));
    await watch.until(created.id, (x) => x.state === 'running', 'running');
    const r = await watch.client.call('POST', `/v1/tasks/${created.id}/cancel`);
    expect(r.status).toBeLessThan(300);
    const t = await watch.until(created.id, (x) => TERMINAL.has(x.state), 'the outcome');
    expect(t.state).toBe('succeeded');
    expect(t.cancel?.outcome).toBe('succeeded');
    await watch.untilEvent(created.id, 'cancel_outcome');
    const types = watch.of(created.id).map((e) => e.type);
    expect(types).toContain('cancel_requested');
    expect(watch.of(created.id).find((e) => e.type === 'cancel_outcome')?.data.outcome).toBe('succeeded');
  });

  it('a cancel that wins ends cancelled', async () => {
    const created = await watch.client.create('gpt', words(60, 'k'));
    await watch.until(created.id, (x) => x.state === 'running', 'running');
    await watch.client.call('POST', `/v1/tasks/${created.id}/cancel`);
    const t = await watch.until(created.id, (x) => TERMINAL.has(x.state), 'the outcome');
    expect(t.state).toBe('cancelled');
    expect(t.cancel?.outcome).toBe('cancelled');
    expect(runsOf(created.id)[0]!.status).toBe('cancelled');
  });

  it('retention: a 404 past the window is expired; within it, unknown and still reconciled', async () => {
    emu.faultNext({ stuckInQueued: true, retentionMs: 300 });
    const past = await watch.client.create('short', 'forgotten soon');
    const expired = await watch.until(past.id, (x) => TERMINAL.has(x.state), 'expiry');
    expect(expired.state).toBe('expired');
    expect(watch.of(past.id).find((e) => e.data.to === 'expired')?.data.reason).toBe('retention');

    emu.faultNext({ stuckInQueued: true, retentionMs: 300 });
    const within = await watch.client.create('gpt', 'forgotten early');
    const unknown = await watch.until(within.id, (x) => x.state === 'unknown', 'unknown');
    expect(watch.of(within.id).find((e) => e.data.to === 'unknown')?.data.reason).toBe(
      'not_found_within_retention',
    );
    expect(TERMINAL.has(unknown.state)).toBe(false);
  });

  it('a response stuck in queued past queuedStaleMs is unknown (queued_stale), never failed, and the task stays open', async () => {
    emu.faultNext({ stuckInQueued: true });
    const created = await watch.client.create('stale', 'never starts');
    const t = await watch.until(created.id, (x) => x.state === 'unknown', 'unknown');
    expect(t.nativeState).toBe('queued');
    expect(watch.of(created.id).find((e) => e.data.to === 'unknown')?.data).toMatchObject({
      from: 'accepted',
      reason: 'queued_stale',
    });
    expect(runsOf(created.id)).toHaveLength(1);
  });

  it('a lost create response is unknown (start_response_lost); the lost policy resubmits once, and says a second response may run', async () => {
    emu.faultNext({ dropStreamAfterEvents: 0 });
    const created = await watch.client.create('gpt', words(5, 'l'));
    const t = await watch.until(created.id, (x) => TERMINAL.has(x.state), 'the outcome');
    expect(t.state).toBe('succeeded');
    const lost = watch.of(created.id).find((e) => e.data.reason === 'start_response_lost');
    expect(lost?.data).toMatchObject({ to: 'unknown', policy: 'resubmit', attempt: 1 });
    // Two responses ran for this envelope: the unseen one and the resubmission; the plane follows the second.
    const both = runsOf(created.id);
    expect(both).toHaveLength(2);
    expect(t.remoteId).toBe(both[1]!.id);
  });

  it('budget: parallel tasks that together pass the tenant budget get the running ones cancelled, and new work is refused', async () => {
    // The long ones first, so the short one cannot use the budget up before they exist.
    const long = [
      await budget.client.create('gpt', words(80, 'b')),
      await budget.client.create('gpt', words(80, 'd')),
    ];
    const short = await budget.client.create('gpt', 'hi');
    const s = await budget.until(short.id, (x) => TERMINAL.has(x.state), 'the short one');
    expect(s.state).toBe('succeeded');
    expect(s.usage?.usd_micros).toBeGreaterThanOrEqual(10);
    for (const l of long) {
      const t = await budget.until(l.id, (x) => TERMINAL.has(x.state), 'a long one');
      expect(t.state).toBe('cancelled');
      const refused = budget.of(l.id).find((e) => e.type === 'budget_refused');
      expect(refused?.data).toMatchObject({ action: 'run' });
      expect(String(refused?.data.reason)).toMatch(/tenant budget exhausted/);
    }
    const again = await budget.client.call('POST', '/v1/tasks', { target: 'gpt', input: 'more' });
    expect(again.status).toBe(409);
  });

  it('plane SIGKILLed mid-stream: after restart it resumes from the persisted cursor; one response, full output', async () => {
    // Long enough (about 15 s) to still run after the plane is back.
    const input = words(600, 'k');
    const created = await watch.client.create('gpt', input);
    const before = await watch.until(
      created.id,
      (x) => x.state === 'running' && Number(x.streamCursor ?? 0) >= 8,
      'a few events in',
    );
    await plane.kill('SIGKILL');
    const run = runsOf(created.id)[0]!;
    expect(run.terminal).toBe(false);
    const seenBefore = requests.length;
    plane = await startPlane();
    const t = await watch.until(created.id, (x) => TERMINAL.has(x.state), 'the outcome after restart');
    expect(run.terminal).toBe(true);
    expect(t.state).toBe('succeeded');
    expect(runsOf(created.id)).toHaveLength(1);
    expect(textOf(t)).toBe(`You said: ${input}`);
    const resume = requests
      .slice(seenBefore)
      .find((r) => r.method === 'GET' && r.url.startsWith(`/v1/responses/${run.id}?`));
    expect(
      Number(new URL(resume!.url, 'http://x').searchParams.get('starting_after')),
    ).toBeGreaterThanOrEqual(Number(before.streamCursor));
  });
});
