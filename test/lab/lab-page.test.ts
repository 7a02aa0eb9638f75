import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { browserSkipReason, launchChromium, skipBrowserTests } from '../support/browser.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildLabAssets, labPageHandler } from '../../src/lab/page-assets.ts';

/**
 * The lab page in headless Chromium: load a mission, change a setting, run, read the figures and
 * stars from the page, keep a screenshot under test-results/ as an artifact.
 */
const root = fileURLToPath(new URL('../../', import.meta.url));

describe.skipIf(skipBrowserTests)(`lab page (headless Chromium)${browserSkipReason}`, () => {
  let server: Server;
  let browser: Browser;
  let base = '';

  beforeAll(async () => {
    const assets = await buildLabAssets(root);
    // At `/lab` as `taskplane lab --serve` and `taskplane serve` mount it, and under a deeper prefix
    // (a reverse proxy's), to show the page finds its bundle relative to itself wherever it is mounted.
    const handlers = [labPageHandler(assets, '/lab'), labPageHandler(assets, '/ops/taskplane/lab')];
    server = createServer((req, res) => {
      const request = new Request(`http://localhost${req.url ?? '/'}`);
      const response = handlers.map((handle) => handle(request)).find((r) => r !== null);
      if (!response) return void res.writeHead(404).end();
      const headers: Record<string, string> = {};
      response.headers.forEach((v, k) => (headers[k] = v));
      res.writeHead(response.status, headers);
      void response.text().then((body) => res.end(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  it('loads mission 2, fixes it with reconciliation, and shows the figures and stars', async () => {
    const page = await browser.newPage({ viewport: { width: 1320, height: 860 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${base}/lab/`);
    // The first run (free play, default settings) happens on load.
    await page.waitForFunction(() => document.getElementById('status')?.textContent?.startsWith('done'));

    await page.click('button[data-mission="2"]');
    expect(await page.inputValue('input[name=pushRetries]')).toBe('1');
    expect(await page.inputValue('input[name=reconcileMin]')).toBe('0');
    // The broken setup first: lost outcomes, no stars.
    await page.click('#run');
    await page.waitForFunction(() => document.getElementById('status')?.textContent?.startsWith('done'));
    expect(Number(await page.textContent('#fig-lost'))).toBeGreaterThan(0);
    expect(await page.getAttribute('#stars', 'data-stars')).toBe('0');

    // Change settings: reconcile every 10 min with an idempotent handler → the real engine runs.
    await page.fill('input[name=reconcileMin]', '10');
    await page.check('input[name=idempotent]');
    await page.click('#run');
    await page.waitForFunction(() => document.getElementById('status')?.textContent?.startsWith('done'));

    expect(await page.textContent('#fig-client')).toContain('engine');
    expect(await page.textContent('#fig-unknown')).toBe('0 (0 %)');
    expect(await page.textContent('#fig-missed')).toBe('0');
    expect(Number(await page.textContent('#fig-rpt'))).toBeLessThanOrEqual(2);
    const stars = Number(await page.getAttribute('#stars', 'data-stars'));
    expect(stars).toBeGreaterThanOrEqual(1);
    // Stars are kept in the browser.
    const saved = await page.evaluate(
      () => JSON.parse(localStorage.getItem('taskplane.lab.stars') ?? '{}') as Record<string, number>,
    );
    expect(saved['2']).toBe(stars);
    expect(await page.textContent('button[data-mission="2"]')).toContain('★');

    mkdirSync(`${root}test-results`, { recursive: true });
    await page.screenshot({ path: `${root}test-results/lab-mission-2.png`, fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  });

  it('works under another prefix: /ops/taskplane/lab redirects to the slash form and loads lab.js relative to it', async () => {
    const page = await browser.newPage({ viewport: { width: 1320, height: 860 } });
    const errors: string[] = [];
    const requested: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // Everything the page asks for under its prefix (the browser may also try /favicon.ico at the root).
    page.on(
      'response',
      (r) =>
        new URL(r.url()).pathname.startsWith('/ops/') &&
        requested.push(`${r.status()} ${new URL(r.url()).pathname}`),
    );
    await page.goto(`${base}/ops/taskplane/lab`);
    await page.waitForFunction(() => document.getElementById('status')?.textContent?.startsWith('done'));
    expect(new URL(page.url()).pathname).toBe('/ops/taskplane/lab/');
    expect(requested).toEqual([
      '301 /ops/taskplane/lab',
      '200 /ops/taskplane/lab/',
      '200 /ops/taskplane/lab/lab.js',
    ]);
    expect(await page.textContent('#fig-tasks')).toBe('240');
    expect(errors).toEqual([]);
    await page.close();
  });
});
