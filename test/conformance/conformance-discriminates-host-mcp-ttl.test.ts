import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConformanceReport } from '../../src/conformance/report.ts';
import { runConformance } from '../../src/conformance/run-conformance.ts';
import { HOST_KEY, startHostAgent } from './agent-processes.ts';
import { BOUNDS, byId } from './conformance-discriminates.ts';

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
