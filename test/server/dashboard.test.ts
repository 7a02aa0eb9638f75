import { mkdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { Browser } from 'playwright-core';
import { browserSkipReason, launchChromium, skipBrowserTests } from '../support/browser.ts';
import { SystemClock } from '../../src/core/clock.ts';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import { FakeRemote } from '../plane/fake-remote.ts';
import { resultsAgent } from './results-agent.ts';

/**
 * The dashboard in headless Chromium: tasks appear with state and pending input, change live over
 * SSE, the signals render, the timeline shows, and the answer and cancel buttons work. Waits are on
 * DOM conditions (Playwright's waitFor), never sleeps.
 */
const KEY = 'dash-key-1234-abcdef';
/** Screenshots of the operator walk, kept as CI artifacts. */
const SHOTS = 'test-results/dashboard';
let server: RunningServer;
let host: RunningHost;
let remote: FakeRemote;
let browser: Browser;

describe.skipIf(skipBrowserTests)(`dashboard (headless Chromium)${browserSkipReason}`, () => {
  beforeAll(async () => {
    remote = new FakeRemote(new SystemClock());
    // A real A2A agent beside the fake: the targets view shows the card it publishes.
    host = await startHost({
      port: 0,
      db: 'memory:',
      agent: resultsAgent,
      logger: pino({ level: 'silent' }),
    });
    server = await startServer({
      port: 0,
      db: 'memory:',
      connectors: { fake: remote.connector('fake') },
      targets: { agent: { baseUrl: host.url, idempotentStart: true } },
      apiKeys: `default:${KEY}`,
      defaultMetrics: false,
      logger: pino({ level: 'silent' }),
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await host?.close();
  });

  it('shows tasks live, answers input and cancels', async () => {
    const { envelope: asking } = await server.plane.create(
      {
        tenant: 'default',
        target: 'fake',
        input: 'ask me',
      },
      { wait: 'started' },
    );
    const { envelope: other } = await server.plane.create(
      {
        tenant: 'default',
        target: 'fake',
        input: 'other',
      },
      { wait: 'started' },
    );
    const page = await browser.newPage();
    await page.goto(`${server.url}/#key=${KEY}`);
    await page.locator(`tr[data-id="${asking.id}"]`).waitFor();
    await page.locator('#live[data-state="live"]').waitFor();
    await page.locator('[data-chart="rpt"]').waitFor();
    await page.locator('[data-signal="notfound"]').waitFor();

    remote.set(asking.remoteId!, 'waiting_for_input', {
      inputRequest: { requestId: 'q1', prompt: 'Which edition?' },
    });
    const row = page.locator(`tr[data-id="${asking.id}"]`);
    await row.locator('.state[data-state="waiting_for_input"]').waitFor();
    expect(await row.locator('td.pending').textContent()).toBe('Which edition?');
    // Each task shows its kind (the connector it runs on).
    expect(await row.locator('td.kind').textContent()).toBe('fake');

    await row.click();
    await page.locator('#timeline li[data-type="input_requested"]').waitFor();
    await page.fill('#answer-input', 'second');
    await page.click('#answer-button');
    await row.locator('.state[data-state="running"]').waitFor();
    expect((await server.plane.get('default', asking.id)).pendingInput).toBeNull();

    await page.locator(`tr[data-id="${other.id}"]`).click();
    await page.click('#cancel-button');
    await page.click('#cancel-confirm');
    await page.locator(`tr[data-id="${other.id}"] .state[data-state="cancel_requested"]`).waitFor();
    remote.set(other.remoteId!, 'cancelled');
    await page.locator(`tr[data-id="${other.id}"] .state[data-state="cancelled"]`).waitFor();
    await page.close();
  });

  it('an operator filters, opens a task, reads its output, answers through the form, decides acceptance, cancels with confirmation and opens a target', async () => {
    mkdirSync(SHOTS, { recursive: true });
    const create = (input: unknown, idempotencyKey: string | null = null) =>
      server.plane
        .create({ tenant: 'default', target: 'fake', input, idempotencyKey }, { wait: 'started' })
        .then((r) => r.envelope);
    const report = await create({ report: 'quarterly' }, 'walk-report-7');
    const asking = await create('walk: which edition');
    const keep = await create('walk: keep running');
    for (let i = 0; i < 30; i++) await create(`walk filler ${i}`);
    const { envelope: onAgent } = await server.plane.create(
      { tenant: 'default', target: 'agent', input: { kind: 'wait' } },
      { wait: 'started' },
    );
    remote.set(report.remoteId!, 'succeeded', {
      artifacts: [{ artifactId: 'a1', content: { text: 'Revenue up 4 %.' } }],
    });
    // The request's schema is drawn as a form: an enum, a bounded integer, a flag.
    remote.set(asking.remoteId!, 'waiting_for_input', {
      inputRequest: {
        requestId: 'q9',
        prompt: 'Which edition?',
        schema: {
          type: 'object',
          required: ['edition', 'copies'],
          properties: {
            edition: { type: 'string', title: 'Edition', enum: ['first', 'second'] },
            copies: { type: 'integer', title: 'Copies', minimum: 1 },
            gift: { type: 'boolean', title: 'Gift wrap' },
          },
        },
      },
    });
    const errors: string[] = [];
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${server.url}/#key=${KEY}`);
    await page.locator('#live[data-state="live"]').waitFor();
    // Paged: 25 rows a page, the pager says how many match.
    await page.locator('#page-info', { hasText: /^1–25 of \d+$/ }).waitFor();
    expect(await page.locator('#tasks tbody tr').count()).toBe(25);
    // The signals are drawn as charts over time.
    await page.locator('[data-chart="delay"] svg').waitFor();
    await page.locator('[data-chart="input-age"] polyline').first().waitFor({ state: 'attached' });
    await page.screenshot({ path: `${SHOTS}/dashboard-list.png` });

    // By keyboard: / searches (by idempotency key), Esc leaves the box, j moves, Enter opens.
    await page.keyboard.press('/');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('filter-text');
    await page.keyboard.type('walk-report-7');
    await page.locator('#page-info', { hasText: '1–1 of 1' }).waitFor();
    await page.keyboard.press('Escape');
    await page.keyboard.press('j');
    await page.locator(`tr.cursor[data-id="${report.id}"]`).waitFor();
    await page.keyboard.press('Enter');
    await page.locator(`tr[data-id="${report.id}"] .state[data-state="succeeded"]`).waitFor();
    await page.locator('#detail-output pre.output', { hasText: 'Revenue up 4 %.' }).waitFor();
    expect(await page.locator('#detail-output .input').textContent()).toContain('quarterly');
    await page.locator('#timeline li[data-type="state_changed"] .source').first().waitFor();
    await page.screenshot({ path: `${SHOTS}/dashboard-detail.png` });

    // A person rejects the output: a reason is required, then the verdict and its reason show.
    await page.click('#reject-button');
    await page.click('#acceptance-confirm');
    await page.locator('.acceptance-form .answer-error', { hasText: 'reason: required' }).waitFor();
    await page.fill('#acceptance-reason', 'figures do not add up');
    await page.click('#acceptance-confirm');
    await page.locator('#detail-output .acceptance[data-status="rejected"]').waitFor();
    expect(await page.locator('#detail-output [data-check="person"]').textContent()).toContain(
      'figures do not add up',
    );
    expect((await server.plane.get('default', report.id)).acceptance?.status).toBe('rejected');
    // Decided: the form gives way to the buttons again.
    await page.locator('#accept-button').waitFor();
    expect(await page.locator('.acceptance-form').count()).toBe(0);
    // Esc closes the task.
    await page.keyboard.press('Escape');
    await page.locator('#detail').waitFor({ state: 'hidden' });

    // Filter by state: only the task waiting for input; answer it through the form.
    await page.fill('#filter-text', '');
    await page.selectOption('#filter-state', 'waiting_for_input');
    await page.locator('#page-info', { hasText: '1–1 of 1' }).waitFor();
    await page.locator(`tr[data-id="${asking.id}"]`).click();
    await page.locator('#answer-form').waitFor();
    // Checked here first, the error naming the field; nothing is sent.
    // A required choice starts unchosen: left alone it is an error, never the first option.
    await page.click('#answer-button');
    await page.locator('#answer-error', { hasText: 'edition: required' }).waitFor();
    await page.selectOption('#answer-field-edition', { label: 'second' });
    await page.fill('#answer-field-copies', '0');
    await page.click('#answer-button');
    await page.locator('#answer-error', { hasText: 'copies: must be at least 1' }).waitFor();
    expect(remote.calls.filter((c) => c.method === 'answer' && c.id === asking.remoteId)).toEqual([]);
    await page.fill('#answer-field-copies', '3');
    await page.check('#answer-field-gift');
    await page.screenshot({ path: `${SHOTS}/dashboard-answer.png` });
    await page.click('#answer-button');
    await expect.poll(async () => (await server.plane.get('default', asking.id)).pendingInput).toBeNull();
    expect((await server.plane.get('default', asking.id)).nativeState).toBe(
      'ANSWERED:{"edition":"second","copies":3,"gift":true}',
    );
    // The answer given stays in the timeline.
    await page.locator('#timeline li[data-type="input_answered"]', { hasText: '"copies":3' }).waitFor();

    // Cancel asks first; "Keep it" leaves the task alone, "Yes, cancel" cancels.
    await page.selectOption('#filter-state', '');
    await page.fill('#filter-text', 'keep running');
    await page.locator(`tr[data-id="${keep.id}"]`).click();
    await page.click('#cancel-button');
    await page.click('#cancel-keep');
    await page.locator('#cancel-button').waitFor();
    expect((await server.plane.get('default', keep.id)).cancel).toBeNull();
    await page.click('#cancel-button');
    await page.screenshot({ path: `${SHOTS}/dashboard-cancel.png` });
    await page.click('#cancel-confirm');
    await page.locator(`tr[data-id="${keep.id}"] .state[data-state="cancel_requested"]`).waitFor();

    // The targets: each with its kind; the A2A one opened shows its card and capabilities.
    await server.plane.reconcileNow('agent');
    await page.click('#view-targets');
    await page.locator('.target-card[data-target="fake"]').waitFor();
    const agentCard = page.locator('.target-card[data-target="agent"]');
    expect(await agentCard.locator('.kind-badge').textContent()).toBe('A2A');
    await agentCard.click();
    await page.locator('#target-detail .card-name', { hasText: 'Results' }).waitFor();
    expect(await page.locator('#target-detail [data-fact="kind"]').textContent()).toBe('A2A');
    expect(await page.locator('#target-detail [data-capability="stream"]').getAttribute('data-on')).toBe(
      'true',
    );
    await page.locator('#target-detail [data-fact="last reconciliation"]', { hasText: 'ago' }).waitFor();
    await page.screenshot({ path: `${SHOTS}/dashboard-target.png` });
    expect(onAgent.target).toBe('agent');

    // A target's recent failures link to the task: the fake one failed a job, and the link opens it.
    const broken = await create('walk: fails');
    remote.set(broken.remoteId!, 'failed');
    await expect.poll(async () => (await server.plane.get('default', broken.id)).state).toBe('failed');
    await page.locator('.target-card[data-target="fake"]').click();
    const link = page.locator(`#target-detail .failures li[data-task="${broken.id}"] a`);
    await link.click();
    await page.locator('#tasks-view:not([hidden])').waitFor();
    await page.locator('#detail-id', { hasText: broken.id }).waitFor();

    // Readable on a phone: nothing wider than the screen, in either view.
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(await overflow()).toBeLessThanOrEqual(0);
    await page.click('#view-tasks');
    await page.locator(`tr[data-id="${keep.id}"]`).click();
    await page.screenshot({ path: `${SHOTS}/dashboard-phone.png`, fullPage: true });
    expect(await overflow()).toBeLessThanOrEqual(0);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('answers a request whose schema a form cannot draw as JSON, refusing text that is not JSON', async () => {
    const { envelope } = await server.plane.create(
      { tenant: 'default', target: 'fake', input: 'where to ship' },
      { wait: 'started' },
    );
    remote.set(envelope.remoteId!, 'waiting_for_input', {
      inputRequest: {
        requestId: 'addr',
        prompt: 'Shipping address?',
        schema: {
          type: 'object',
          properties: { address: { type: 'object', properties: { city: { type: 'string' } } } },
        },
      },
    });
    const page = await browser.newPage();
    await page.goto(`${server.url}/#key=${KEY}`);
    const row = page.locator(`tr[data-id="${envelope.id}"]`);
    await row.locator('.state[data-state="waiting_for_input"]').waitFor();
    await row.click();
    const area = page.locator('#answer-json');
    await area.waitFor();
    // Starts from the schema's properties.
    expect(JSON.parse(await area.inputValue())).toEqual({ address: null });
    await area.fill('{"address": {"city": ');
    await page.click('#answer-button');
    await page.locator('#answer-error', { hasText: /^answer: not JSON/ }).waitFor();
    await area.fill('{"address": {"city": "Oslo"}}');
    await page.click('#answer-button');
    await row.locator('.state[data-state="running"]').waitFor();
    expect((await server.plane.get('default', envelope.id)).nativeState).toBe(
      'ANSWERED:{"address":{"city":"Oslo"}}',
    );
    await page.close();
  });

  it('draws a form from oneOf alternatives and from a schema that is one value', async () => {
    const waiting = async (schema: Record<string, unknown>) => {
      const { envelope } = await server.plane.create(
        { tenant: 'default', target: 'fake', input: 'confirm' },
        { wait: 'started' },
      );
      remote.set(envelope.remoteId!, 'waiting_for_input', {
        inputRequest: { requestId: 'c1', prompt: 'Allow tool bash?', schema },
      });
      return envelope;
    };
    // A tool confirmation: a bare choice, or an object with a reason to deny.
    const confirm = await waiting({
      oneOf: [
        { enum: ['allow', 'deny'] },
        {
          type: 'object',
          required: ['result'],
          properties: { result: { enum: ['allow', 'deny'] }, deny_message: { type: 'string' } },
        },
      ],
    });
    const limit = await waiting({ type: 'integer', minimum: 1, title: 'Limit in cents' });
    const page = await browser.newPage();
    await page.goto(`${server.url}/#key=${KEY}`);
    await page.locator(`tr[data-id="${confirm.id}"] .state[data-state="waiting_for_input"]`).waitFor();
    await page.locator(`tr[data-id="${confirm.id}"]`).click();
    await page.selectOption('#answer-field-result', { label: 'deny' });
    await page.fill('#answer-field-deny_message', 'not on prod');
    await page.click('#answer-button');
    await expect
      .poll(async () => (await server.plane.get('default', confirm.id)).nativeState)
      .toBe('ANSWERED:{"result":"deny","deny_message":"not on prod"}');

    await page.locator(`tr[data-id="${limit.id}"]`).click();
    await page.fill('#answer-field-answer', '0');
    await page.click('#answer-button');
    await page.locator('#answer-error', { hasText: 'answer: must be at least 1' }).waitFor();
    await page.fill('#answer-field-answer', '500');
    await page.click('#answer-button');
    await expect
      .poll(async () => (await server.plane.get('default', limit.id)).nativeState)
      .toBe('ANSWERED:500');
    await page.close();
  });

  it('charts the signals over time: one point per sample, a burst of samples kept as one', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.url}/#key=${KEY}`);
    await page.locator('[data-chart="orphans"]').waitFor();
    // A string, so the test runner's transform leaves the browser's own dynamic import alone.
    const drawn = await page.evaluate(`(async () => {
      sessionStorage.removeItem('taskplane.signals');
      // A fresh copy of the module, with no samples from the page's own polling.
      const charts = await import('/charts.js?fresh=' + Date.now());
      const signals = (orphans, push) => ({
        orphans,
        observationDelay: push === null ? {} : { push: { p50Ms: push } },
        inputRequiredByAge: { under1m: 1, under5m: 0, under15m: 0, over15m: 2 },
        duplicatesAbsorbed: { webhook: 3, observation: 0 },
        requests: { perTask: 2.5 },
      });
      charts.recordSignals(signals(0, null), 0);
      charts.recordSignals(signals(2, 40), 5000);
      charts.recordSignals(signals(5, 80), 6000); // within 4 s: replaces the previous sample
      const into = document.createElement('div');
      charts.renderCharts(into);
      const points = (chart, series) =>
        into.querySelector('[data-chart="' + chart + '"] polyline[data-series="' + series + '"]')
          .getAttribute('points').split(' ').length;
      const legend = (chart, series) =>
        into.querySelector('[data-chart="' + chart + '"] li[data-series="' + series + '"] b').textContent;
      return {
        samples: into.querySelector('[data-chart="orphans"]').getAttribute('data-samples'),
        orphanPoints: points('orphans', 'orphans'),
        orphansNow: legend('orphans', 'orphans'),
        pushPoints: points('delay', 'push'),
        pushNow: legend('delay', 'push'),
        oldInput: legend('input-age', '> 15 min'),
      };
    })()`);
    expect(drawn).toEqual({
      samples: '2',
      orphanPoints: 2,
      orphansNow: '5',
      // No push delay in the first sample: that series starts at the second.
      pushPoints: 1,
      pushNow: '80 ms',
      oldInput: '2',
    });
    await page.close();
  });

  it('loads the task list by the API and tails events from the latest seq instead of replaying the log', async () => {
    const { envelope } = await server.plane.create(
      {
        tenant: 'default',
        target: 'fake',
        input: 'before load',
      },
      { wait: 'started' },
    );
    const page = await browser.newPage();
    const streams: string[] = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname === '/v1/events') streams.push(r.url());
    });
    await page.goto(`${server.url}/#key=${KEY}`);
    await page.locator(`tr[data-id="${envelope.id}"]`).waitFor();
    await page.locator('#live[data-state="live"]').waitFor();
    const history = await server.plane.events('default', { afterSeq: 0, limit: 500 });
    const latest = history[history.length - 1]!.seq;
    expect(streams).toHaveLength(1);
    expect(Number(new URL(streams[0]!).searchParams.get('after'))).toBe(latest);
    // A timeline is fetched when the task is opened, and live events for it are appended after it.
    await page.locator(`tr[data-id="${envelope.id}"]`).click();
    await page.locator('#timeline li[data-type="created"]').waitFor();
    remote.set(envelope.remoteId!, 'succeeded', {
      artifacts: [{ artifactId: 'answer', content: 'the answer is 42' }],
    });
    await page.locator('#timeline li[data-type="state_changed"]').last().waitFor();
    await page.locator(`tr[data-id="${envelope.id}"] .state[data-state="succeeded"]`).waitFor();
    // The opened task shows what it produced.
    await page.locator('#detail-output pre.output', { hasText: 'the answer is 42' }).waitFor();
    await page.close();
  });

  it("shows a task's tokens and cost as the remote reported them, against its budget", async () => {
    const { envelope } = await server.plane.create(
      {
        tenant: 'default',
        target: 'fake',
        input: 'count my tokens',
        budget: { limit: 1000, unit: 'usd_micros' },
      },
      { wait: 'started' },
    );
    await server.plane.observe(envelope.id, {
      remoteId: envelope.remoteId ?? '',
      contextId: envelope.contextId,
      state: 'running',
      nativeState: 'in_progress',
      remoteVersion: null,
      stateTimestamp: null,
      usage: { input_tokens: 5, output_tokens: 7, total_tokens: 12, usd_micros: 33 },
    });
    const page = await browser.newPage();
    await page.goto(`${server.url}/#key=${KEY}`);
    await page.locator(`tr[data-id="${envelope.id}"]`).click();
    const usage = page.locator('#detail-output p.usage');
    await usage.waitFor();
    expect(await usage.textContent()).toBe(
      'tokens: input 5 · output 7 · total 12 — cost: 33 usd_micros of 1000',
    );
    await page.close();
  });

  it("shows the cost per accepted completion of a task's workflow and of each target", async () => {
    const { envelope } = await server.plane.create(
      { tenant: 'default', target: 'fake', input: 'priced', workflowId: 'wf-cost' },
      { wait: 'started' },
    );
    const rid = envelope.remoteId!;
    remote.set(rid, 'succeeded');
    await server.plane.observe(envelope.id, {
      ...remote.snapshot(remote.jobs.get(rid)!),
      usage: { cents: 42 },
    });
    const decided = await fetch(`${server.url}/v1/tasks/${envelope.id}/acceptance`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'accepted', reason: 'checked by hand' }),
    });
    expect(decided.status).toBe(200);
    const page = await browser.newPage();
    await page.goto(`${server.url}/#key=${KEY}`);
    await page.locator(`tr[data-id="${envelope.id}"]`).click();
    const line = page.locator('.workflow-cost[data-workflow="wf-cost"]');
    await line.waitFor();
    expect(await line.textContent()).toBe(
      'workflow wf-cost: 1 task, 42 cents per accepted completion (1 accepted)',
    );
    await page.goto(`${server.url}/#targets`);
    const cost = page.locator('[data-cost="fake"]');
    await cost.waitFor();
    expect(await cost.textContent()).toMatch(/ cents per accepted completion \(\d+ accepted\)$/);
    expect(await page.locator('[data-cost="agent"]').textContent()).toBe('no accepted completion yet');
    await page.close();
  });

  it('links the failure lab from the header and serves it at /lab with its canvas', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.url}/#key=${KEY}`);
    await page.click('#lab-link');
    await page.waitForURL(`${server.url}/lab/`);
    const canvas = page.locator('canvas#lab-canvas');
    await canvas.waitFor();
    expect((await canvas.boundingBox())?.width ?? 0).toBeGreaterThan(100);
    // The mission buttons are rendered by the bundled simulation: the page's script loaded and ran.
    await page.locator('#missions button').first().waitFor();
    const bundle = await page.request.get(`${server.url}/lab/lab.js`);
    expect(bundle.status()).toBe(200);
    expect(bundle.headers()['content-type']).toContain('javascript');
    await page.close();
  });

  it('shows live every event type the API describes, a refused answer included', async () => {
    const { envelope } = await server.plane.create(
      {
        tenant: 'default',
        target: 'fake',
        input: 'spend',
        budget: { limit: 100, unit: 'tokens' },
      },
      { wait: 'started' },
    );
    const rid = envelope.remoteId!;
    remote.set(rid, 'waiting_for_input', { inputRequest: { requestId: 'b1', prompt: 'more?' } });
    await server.plane.observe(
      envelope.id,
      { ...remote.snapshot(remote.jobs.get(rid)!), usage: { tokens: 120 } },
      'poll',
    );
    const page = await browser.newPage();
    await page.goto(`${server.url}/#key=${KEY}`);
    await page.locator('#live[data-state="live"]').waitFor();
    await page.locator(`tr[data-id="${envelope.id}"]`).click();
    await page.locator('#timeline li[data-type="input_requested"]').waitFor();
    const refused = await server.plane
      .answer('default', envelope.id, { requestId: 'b1', value: 'yes' })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Error);
    // Arrives over SSE: the timeline was loaded before the refusal was written.
    await page.locator('#timeline li[data-type="budget_refused"]').waitFor();
    await page.close();
  });

  it('asks for a key when none is given', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.url}/`);
    await page.locator('#key-form:not([hidden])').waitFor();
    await page.close();
  });

  it('keeps the key in sessionStorage only, out of the URL and the stream URL, under a strict CSP', async () => {
    const page = await browser.newPage();
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    const streams: string[] = [];
    page.on('request', (r) => {
      if (new URL(r.url()).pathname === '/v1/events') streams.push(r.url());
    });
    const response = await page.goto(`${server.url}/#key=${KEY}`);
    const csp = response!.headers()['content-security-policy'] ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    await page.locator('#live[data-state="live"]').waitFor();
    expect(page.url()).toBe(`${server.url}/`);
    expect(await page.evaluate(() => sessionStorage.getItem('taskplane.key'))).toBe(KEY);
    expect(await page.evaluate(() => localStorage.getItem('taskplane.key'))).toBeNull();
    expect(streams).toHaveLength(1);
    expect(new URL(streams[0]!).searchParams.get('ticket')).toBeTruthy();
    expect(streams[0]).not.toContain(KEY);
    expect(violations).toEqual([]);
    await page.close();
  });
});
