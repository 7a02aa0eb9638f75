import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { SystemClock } from '../../src/core/clock.ts';
import { SeededRandom } from '../../src/core/random.ts';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';
import { emulatorTarget } from '../emulators/claude/emulator-target.ts';
import { startClaudeEmulator, type ClaudeEmulator } from '../emulators/claude/server.ts';
import { browserSkipReason, launchChromium, skipBrowserTests } from '../support/browser.ts';

/**
 * The dashboard answering a Claude session's tool calls (what `npm start` shows on target `claude`):
 * a tool confirmation answered "allow" through the form its schema draws, and a session blocked on two
 * keyed requests at once answered one box after the other, the second box keeping what was chosen in
 * it while the first answer re-rendered the task. Headless Chromium, the real connector, the emulator; waits are on DOM
 * conditions.
 */
const KEY = 'claude-dash-key-0123456';
let emu: ClaudeEmulator;
let server: RunningServer;
let browser: Browser;

describe.skipIf(skipBrowserTests)(
  `dashboard with a claude target (headless Chromium)${browserSkipReason}`,
  () => {
    beforeAll(async () => {
      emu = await startClaudeEmulator({ clock: new SystemClock(), random: new SeededRandom(11) });
      const target = await emulatorTarget(emu, { apiKey: 'sk-ant-emulator', apiKeyEnv: 'DASH_CLAUDE_KEY' });
      server = await startServer({
        port: 0,
        db: 'memory:',
        targets: { claude: target as { kind: string } },
        env: { DASH_CLAUDE_KEY: 'sk-ant-emulator' },
        apiKeys: `default:${KEY}`,
        defaultMetrics: false,
      });
      browser = await launchChromium();
    });
    afterAll(async () => {
      await browser?.close();
      await server?.close();
      await emu?.close();
    });

    const create = async (input: string) =>
      (await server.plane.create({ tenant: 'default', target: 'claude', input }, { wait: 'started' }))
        .envelope;

    it('answers a pending tool confirmation, and two keyed requests one box after the other', async () => {
      const confirm = await create('tool_confirmation list the files');
      const two = await create('two_tools');
      const page = await browser.newPage();
      await page.goto(`${server.url}/#key=${KEY}`);

      const row = page.locator(`tr[data-id="${confirm.id}"]`);
      await row.locator('.state[data-state="waiting_for_input"]').waitFor();
      expect(await row.locator('td.kind').textContent()).toBe('Claude');
      await row.click();
      await page.locator('#detail-actions .answer').waitFor();
      expect(await page.locator('#detail-actions .answer .prompt').textContent()).toMatch(/^Allow tool bash/);
      // The confirmation's schema is drawn as a form: a choice, and a reason for a denial.
      await page.selectOption('#answer-field-result', { label: 'allow' });
      await page.click('#answer-button');
      await row.locator('.state[data-state="succeeded"]').waitFor();

      const tworow = page.locator(`tr[data-id="${two.id}"]`);
      await tworow.locator('.state[data-state="waiting_for_input"]').waitFor();
      await tworow.click();
      await page.locator('#answer-field-1-result').waitFor();
      const boxes = page.locator('#detail-actions .answer');
      const keys = await boxes.evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.request));
      // Both typed before either is sent; the second box names the tool confirmation.
      // The custom tool's result: text (the first alternative a form can draw).
      await page.fill('#answer-field-answer', 'sunny');
      await page.selectOption('#answer-field-1-result', { label: 'allow' });
      await page.click('#answer-button');
      // One request left: the box that held "allow" is now the first, and still holds it.
      await page.locator('#detail-actions .answer').nth(1).waitFor({ state: 'detached' });
      expect(await page.locator('#detail-actions .answer').getAttribute('data-request')).toBe(keys[1]);
      expect(await page.locator('#answer-field-result option:checked').textContent()).toBe('allow');
      await page.click('#answer-button');
      await tworow.locator('.state[data-state="succeeded"]').waitFor();
      // Each key answered once, with what its own box held.
      const events = await server.plane.events('default', { afterSeq: 0, limit: 500 });
      const answered = events
        .filter((e) => e.envelopeId === two.id && e.type === 'input_answered')
        .map((e) => e.data.requestId);
      expect(answered).toEqual(keys);
      const sent = emu.control.session(two.remoteId!)!.events.filter((e) => e.type.startsWith('user.'));
      expect(sent.map((e) => [e.type, e['result'] ?? e['content']])).toEqual([
        ['user.message', [{ type: 'text', text: 'two_tools' }]],
        ['user.custom_tool_result', [{ type: 'text', text: 'sunny' }]],
        ['user.tool_confirmation', 'allow'],
      ]);
      await page.close();
    });
  },
);
