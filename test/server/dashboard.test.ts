import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { chromium, type Browser } from 'playwright-core';
import { SystemClock } from '../../src/core/clock.ts';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';
import { FakeRemote } from '../plane/fake-remote.ts';

/**
 * The dashboard in headless Chromium: tasks appear with state and pending input, change live over
 * SSE, the signals render, the timeline shows, and the answer and cancel buttons work. Waits are on
 * DOM conditions (Playwright's waitFor), never sleeps.
 */
const CHROMIUM = '/usr/bin/chromium';
const KEY = 'dash-key-1234';
let server: RunningServer;
let remote: FakeRemote;
let browser: Browser;

describe.skipIf(!existsSync(CHROMIUM))('dashboard (headless Chromium)', () => {
  beforeAll(async () => {
    remote = new FakeRemote(new SystemClock());
    server = await startServer({
      port: 0,
      db: 'memory:',
      connectors: { fake: remote.connector('fake') },
      apiKeys: `default:${KEY}`,
      defaultMetrics: false,
      logger: pino({ level: 'silent' }),
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('shows tasks live, answers input and cancels', async () => {
    const { envelope: asking } = await server.plane.create({ tenant: 'default', target: 'fake', input: 'ask me' });
    const { envelope: other } = await server.plane.create({ tenant: 'default', target: 'fake', input: 'other' });
    const page = await browser.newPage();
    await page.goto(`${server.url}/#key=${KEY}`);
    await page.locator(`tr[data-id="${asking.id}"]`).waitFor();
    await page.locator('#live[data-state="live"]').waitFor();
    await page.locator('[data-signal="rpt"]').waitFor();

    remote.set(asking.remoteId!, 'waiting_for_input', { inputRequest: { requestId: 'q1', prompt: 'Which edition?' } });
    const row = page.locator(`tr[data-id="${asking.id}"]`);
    await row.locator('.state[data-state="waiting_for_input"]').waitFor();
    expect(await row.locator('td.pending').textContent()).toBe('Which edition?');

    await row.click();
    await page.locator('#timeline li[data-type="input_requested"]').waitFor();
    await page.fill('#answer-input', 'second');
    await page.click('#answer-button');
    await row.locator('.state[data-state="running"]').waitFor();
    expect((await server.plane.get('default', asking.id)).pendingInput).toBeNull();

    await page.locator(`tr[data-id="${other.id}"]`).click();
    await page.click('#cancel-button');
    await page.locator(`tr[data-id="${other.id}"] .state[data-state="cancel_requested"]`).waitFor();
    remote.set(other.remoteId!, 'cancelled');
    await page.locator(`tr[data-id="${other.id}"] .state[data-state="cancelled"]`).waitFor();
    await page.close();
  });

  it('asks for a key when none is given', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.url}/`);
    await page.locator('#key-form:not([hidden])').waitFor();
    await page.close();
  });
});
