import { mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderHtmlReport } from '../../src/conformance/report-html.ts';
import type { ConformanceReport, RowReport } from '../../src/conformance/report.ts';
import { runConformance } from '../../src/conformance/run-conformance.ts';
import { browserSkipReason, launchChromium, skipBrowserTests } from '../support/browser.ts';
import { REPO_ROOT } from '../support/process.ts';
import {
  HOST_KEY,
  OTHER_KEY,
  revokeCmd,
  startHostAgent,
  startSdkAgent,
  startSdkMcpServer,
  type AgentUnderTest,
} from './agent-processes.ts';

/**
 * The proof that `taskplane conformance` discriminates: the whole matrix against `taskplane host`
 * (durable store; restart and deploy by SIGKILL and start again) passes every row that can run, and
 * against a plain @a2a-js/sdk agent with its in-memory store the restart rows fail, for the reasons a
 * memory store fails them: the agent forgets its tasks and the engine's resubmission makes a second
 * task for the job. Real processes on loopback; every wait is bounded by the run's own row bounds.
 */
// Failure bounds for a loaded machine (the test asserts outcomes, never durations): each row gets two
// minutes, the run fifteen.
const BOUNDS = { jobMs: 1000, rowTimeoutMs: 120_000, totalTimeoutMs: 900_000 };

const byId = (report: ConformanceReport, id: string): RowReport => {
  const row = report.rows.find((r) => r.id === id);
  if (!row) throw new Error(`row ${id} missing from the report`);
  return row;
};
const failedChecks = (row: RowReport) => row.checks.filter((c) => !c.ok).map((c) => c.name);
const explain = (report: ConformanceReport) =>
  report.rows.map((r) => `${r.number} ${r.id}: ${r.status} ${r.reason ?? ''}`).join('\n');

describe('taskplane conformance against taskplane host', () => {
  let agent: Awaited<ReturnType<typeof startHostAgent>>;
  let report: ConformanceReport;
  beforeAll(async () => {
    agent = await startHostAgent();
    report = await runConformance({
      target: agent.url,
      headers: { authorization: `Bearer ${HOST_KEY}` },
      otherHeaders: { authorization: `Bearer ${OTHER_KEY}` },
      hooks: { restart: agent.restartCmd, deploy: agent.restartCmd, revoke: revokeCmd(agent) },
      ...BOUNDS,
    });
  }, 900_000);
  afterAll(() => agent?.stop());

  it('passes every row that can run against an A2A agent, hooks included', () => {
    const ran = report.rows
      .filter((r) => r.status === 'passed' || r.status === 'failed')
      .map((r) => r.number);
    expect(
      ran.sort((a, b) => a - b),
      explain(report),
    ).toEqual([1, 2, 3, 4, 6, 7, 8, 9, 10, 12]);
    for (const row of report.rows.filter((r) => r.status === 'passed' || r.status === 'failed'))
      expect(row.status, `${row.id}: ${row.reason}`).toBe('passed');
    expect(report.passed).toBe(true);
  });

  it('reports the rows A2A cannot exercise as not applicable, with the reason', () => {
    expect(byId(report, 'retention-expiry')).toMatchObject({
      status: 'not_applicable',
      reason: expect.stringMatching(/lifetime/),
    });
    expect(byId(report, 'budget')).toMatchObject({
      status: 'not_applicable',
      reason: expect.stringMatching(/usage/),
    });
  });

  it('holds a push while the task works and a newer state is fetched, and cancels during a side effect', () => {
    const push = byId(report, 'push-duplicate-delayed');
    const held = push.checks.find((c) => c.name === 'running: a push held while the task still worked');
    expect(held?.ok, held?.detail).toBe(true);
    expect(push.checks.find((c) => c.name === 'running: the held push moved nothing back')?.ok).toBe(true);
    const cancel = byId(report, 'cancel');
    expect(cancel.checks.find((c) => c.name === 'during-effect: cancel outcome recorded')?.ok).toBe(true);
    expect(cancel.checks.find((c) => c.name === 'during-effect: the side effect on record')?.ok).toBe(true);
  });

  it('prices accepted completions with the usage the demo agent reports', () => {
    const cost = report.measures.costPerAcceptedCompletion!;
    expect(cost.unit).toBe('steps');
    expect(cost.value).toBeGreaterThan(0);
    expect(report.rows.flatMap((r) => r.jobs).some((j) => j.usage?.steps !== undefined)).toBe(true);
  });

  it('measures duplicates, refusals and recovery from the wire, not from assumptions', () => {
    expect(report.measures.duplicateTasks!.value).toBe(0);
    expect(report.measures.unauthorizedAccessRate!.value).toBe(0);
    expect(report.measures.recoveryTime!.value).not.toBeNull();
    // Row 3 duplicated every push; the engine answered every repeat as a duplicate.
    const push = byId(report, 'push-duplicate-delayed');
    expect(push.checks.find((c) => c.name === 'push: duplicates absorbed')?.ok).toBe(true);
    expect(report.requests.SendStreamingMessage).toBeGreaterThan(0);
  });
});

describe('taskplane conformance against the MCP tasks server of taskplane host', () => {
  let agent: Awaited<ReturnType<typeof startHostAgent>>;
  let report: ConformanceReport;
  beforeAll(async () => {
    agent = await startHostAgent();
    report = await runConformance({
      target: `${agent.url}/mcp`,
      tool: 'demo_task',
      headers: { authorization: `Bearer ${HOST_KEY}` },
      otherHeaders: { authorization: `Bearer ${OTHER_KEY}` },
      hooks: { restart: agent.restartCmd, deploy: agent.restartCmd, revoke: revokeCmd(agent) },
      ...BOUNDS,
    });
  }, 900_000);
  afterAll(() => agent?.stop());

  it('reads the target as MCP and passes every row that applies, hooks included', () => {
    expect(report.agent).toMatchObject({ protocol: 'mcp', push: false, streaming: true });
    const ran = report.rows
      .filter((r) => r.status === 'passed' || r.status === 'failed')
      .map((r) => r.number);
    expect(ran, explain(report)).toEqual([1, 4, 6, 7, 8, 9, 10, 12]);
    for (const row of report.rows.filter((r) => r.status === 'failed'))
      expect(row.status, `${row.id}: ${row.reason}`).toBe('passed');
    expect(report.passed).toBe(true);
    expect(report.requests['tools/call']).toBeGreaterThan(0);
    expect(report.measures.duplicateTasks!.value).toBe(0);
  });

  it('reports what MCP has nothing for as not applicable, never passed', () => {
    for (const id of ['create-response-lost', 'push-duplicate-delayed', 'budget'])
      expect(byId(report, id).status, id).toBe('not_applicable');
    // Its tasks live a day (the host's default ttlMs): too long to wait out within a row.
    expect(byId(report, 'retention-expiry')).toMatchObject({
      status: 'not_run',
      reason: expect.stringMatching(/ttlMs=86400000/),
    });
  });

  it('cuts the task-notification stream and the engine listens again without calling the tool twice', () => {
    const row = byId(report, 'stream-cut');
    expect(row.checks.find((c) => c.name === 'stream: listened again, never resent')?.ok).toBe(true);
    expect(row.timeline.some((t) => t.kind === 'fault' && t.text.includes('subscriptions/listen'))).toBe(
      true,
    );
  });
});

describe('taskplane conformance, row 5 against an MCP host whose tasks live 6 s', () => {
  let agent: Awaited<ReturnType<typeof startHostAgent>>;
  let report: ConformanceReport;
  beforeAll(async () => {
    agent = await startHostAgent(['--mcp-task-ttl-ms', '6000']);
    report = await runConformance({
      target: `${agent.url}/mcp`,
      tool: 'demo_task',
      headers: { authorization: `Bearer ${HOST_KEY}` },
      rows: ['retention-expiry'],
      ...BOUNDS,
    });
  }, 300_000);
  afterAll(() => agent?.stop());

  it('records the job expired once its lifetime passed, never an invented outcome', () => {
    const row = byId(report, 'retention-expiry');
    expect(row.status, row.reason ?? '').toBe('passed');
    expect(row.jobs[0]).toMatchObject({ finalState: 'expired', agentState: null });
  });
});

describe('taskplane conformance against a plain @modelcontextprotocol/sdk tasks server (in-memory store)', () => {
  let agent: AgentUnderTest;
  let report: ConformanceReport;
  beforeAll(async () => {
    agent = await startSdkMcpServer();
    report = await runConformance({
      target: agent.url,
      tool: 'demo_task',
      hooks: { restart: agent.restartCmd, deploy: agent.restartCmd },
      // Not row 6: this server does not implement the contract's askInput (input goes through the
      // SDK's elicitation queue); the others run.
      rows: ['1', '2', '3', '4', '5', '8', '9', '10', '11', '12'],
      ...BOUNDS,
    });
  }, 900_000);
  afterAll(() => agent?.stop());

  it('fails the restart and deploy rows: the server forgets its tasks, and the engine records them expired', () => {
    expect(report.agent).toMatchObject({ protocol: 'mcp', bindings: [expect.stringMatching(/2025-11-25/)] });
    for (const id of ['worker-crash', 'deploy-while-active']) {
      const row = byId(report, id);
      expect(row.status, explain(report)).toBe('failed');
      expect(failedChecks(row)).toEqual(
        expect.arrayContaining([
          'a: the agent still knows its task',
          'b: the agent still knows its task',
          'a: true final state',
          'b: true final state',
        ]),
      );
      for (const job of row.jobs) expect(job.finalState).toBe('expired');
    }
    expect(report.passed).toBe(false);
  });

  it('passes the rows an in-memory server can pass; MCP 2025-11-25 has no notification stream', () => {
    for (const id of ['create-disconnect', 'cancel', 'effect-before-commit'])
      expect(byId(report, id).status, `${id}: ${byId(report, id).reason}`).toBe('passed');
    expect(byId(report, 'stream-cut')).toMatchObject({
      status: 'not_run',
      reason: expect.stringMatching(/notifications/),
    });
    for (const id of ['create-response-lost', 'push-duplicate-delayed', 'budget'])
      expect(byId(report, id).status, id).toBe('not_applicable');
  });
});

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
