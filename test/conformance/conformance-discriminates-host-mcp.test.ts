import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConformanceReport } from '../../src/conformance/report.ts';
import { startHostAgent } from './agent-processes.ts';
import { byId, explain, reportOnHost } from './conformance-discriminates.ts';

describe('taskplane conformance against the MCP tasks server of taskplane host', () => {
  let agent: Awaited<ReturnType<typeof startHostAgent>>;
  let report: ConformanceReport;
  beforeAll(async () => {
    agent = await startHostAgent();
    report = await reportOnHost(agent, { tool: 'demo_task' });
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
