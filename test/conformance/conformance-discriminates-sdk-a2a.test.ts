import { mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderHtmlReport } from '../../src/conformance/report-html.ts';
import type { ConformanceReport } from '../../src/conformance/report.ts';
import { runConformance } from '../../src/conformance/run-conformance.ts';
import { browserSkipReason, launchChromium, skipBrowserTests } from '../support/browser.ts';
import { REPO_ROOT } from '../support/process.ts';
import { startSdkAgent, type AgentUnderTest } from './agent-processes.ts';
import { BOUNDS, byId, explain, failedChecks } from './conformance-discriminates.ts';

describe('taskplane conformance against a plain @a2a-js/sdk agent (in-memory store)', () => {
  let agent: AgentUnderTest;
  let report: ConformanceReport;
  beforeAll(async () => {
    agent = await startSdkAgent();
    report = await runConformance({
      target: agent.url,
      hooks: { restart: agent.restartCmd, deploy: agent.restartCmd },
      ...BOUNDS,
    });
  }, 900_000);
  afterAll(() => agent?.stop());

  it('fails the restart and deploy rows: the agent forgets its tasks and the job gets a second task', () => {
    for (const id of ['worker-crash', 'deploy-while-active']) {
      const row = byId(report, id);
      expect(row.status, explain(report)).toBe('failed');
      const failed = failedChecks(row);
      expect(failed).toEqual(
        expect.arrayContaining(['a: the agent still knows its task', 'b: the agent still knows its task']),
      );
      expect(failed).toEqual(expect.arrayContaining(['a: one remote task', 'b: one remote task']));
      for (const job of row.jobs) expect(job.remoteTaskIds.length).toBeGreaterThan(1);
    }
    expect(report.passed).toBe(false);
  });

  it('passes the rows an in-memory agent can pass, and does not run push (its card declares none)', () => {
    for (const id of [
      'create-disconnect',
      'create-response-lost',
      'stream-cut',
      'input-twice',
      'cancel',
      'effect-before-commit',
    ])
      expect(byId(report, id).status, `${id}: ${byId(report, id).reason}`).toBe('passed');
    expect(byId(report, 'push-duplicate-delayed')).toMatchObject({ status: 'not_run' });
    expect(byId(report, 'permission-revoked')).toMatchObject({
      status: 'not_run',
      reason: 'needs --revoke-cmd',
    });
  });

  it('says cost per accepted completion is not measured: this agent reports no usage', () => {
    expect(report.measures.costPerAcceptedCompletion).toMatchObject({
      value: null,
      note: expect.stringMatching(/^not measured/),
    });
  });

  it('answers the checklist from the evidence: process state, not a durable handle', () => {
    const durable = report.checklist.find((q) => q.question.startsWith('Is the handle durable'))!;
    expect(durable.answer).toMatch(/^Process state/);
    expect(durable.rows).toContain('worker-crash');
    const budgets = report.checklist.find((q) => q.question.startsWith('How are cost budgets'))!;
    expect(budgets.answer).toBe('not measured');
  });

  describe.skipIf(skipBrowserTests)(`the HTML report (headless Chromium)${browserSkipReason}`, () => {
    it('renders every row with its verdict, the failed restart rows and their timelines', async () => {
      const dir = `${REPO_ROOT}test-results`;
      mkdirSync(dir, { recursive: true });
      const file = `${dir}/conformance-sdk-report.html`;
      writeFileSync(file, renderHtmlReport(report));
      const browser = await launchChromium();
      try {
        const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
        await page.goto(`file://${file}`);
        expect(await page.locator('section.row').count()).toBe(12);
        await expect.poll(() => page.locator('#worker-crash .badge').textContent()).toBe('FAILED');
        expect(await page.locator('#worker-crash svg.timeline circle').count()).toBeGreaterThan(5);
        expect(await page.locator('.verdict').textContent()).toMatch(/failed/);
        await page.screenshot({ path: `${dir}/conformance-sdk-report.png`, fullPage: true });
      } finally {
        await browser.close();
      }
    });
  });
});
