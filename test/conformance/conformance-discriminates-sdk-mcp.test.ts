import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConformanceReport } from '../../src/conformance/report.ts';
import { runConformance } from '../../src/conformance/run-conformance.ts';
import { startSdkMcpServer, type AgentUnderTest } from './agent-processes.ts';
import { BOUNDS, byId, explain, failedChecks } from './conformance-discriminates.ts';

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
