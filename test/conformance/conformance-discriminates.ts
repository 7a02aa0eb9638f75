import type { ConformanceReport, RowReport } from '../../src/conformance/report.ts';
import { runConformance } from '../../src/conformance/run-conformance.ts';
import { HOST_KEY, OTHER_KEY, revokeCmd, type startHostAgent } from './agent-processes.ts';

/**
 * The proof that `taskplane conformance` discriminates: the whole matrix against `taskplane host`
 * (durable store; restart and deploy by SIGKILL and start again) passes every row that can run, and
 * against a plain @a2a-js/sdk agent with its in-memory store the restart rows fail, for the reasons a
 * memory store fails them: the agent forgets its tasks and the engine's resubmission makes a second
 * task for the job. Real processes on loopback; every wait is bounded by the run's own row bounds.
 *
 * One file per agent under test (conformance-discriminates-*.test.ts), each with its own agent process,
 * so the test runner can run them side by side; this module holds what they share.
 */
// Failure bounds for a loaded machine (the test asserts outcomes, never durations): each row gets two
// minutes, the run fifteen.
export const BOUNDS = { jobMs: 1000, rowTimeoutMs: 120_000, totalTimeoutMs: 900_000 };

export const byId = (report: ConformanceReport, id: string): RowReport => {
  const row = report.rows.find((r) => r.id === id);
  if (!row) throw new Error(`row ${id} missing from the report`);
  return row;
};
export const failedChecks = (row: RowReport) => row.checks.filter((c) => !c.ok).map((c) => c.name);
export const explain = (report: ConformanceReport) =>
  report.rows.map((r) => `${r.number} ${r.id}: ${r.status} ${r.reason ?? ''}`).join('\n');

/**
 * The whole matrix against a `taskplane host` in its own process, with its restart, deploy and revoke
 * hooks: its A2A interface, or its MCP server when `tool` names the tool to run.
 */
export function reportOnHost(
  agent: Awaited<ReturnType<typeof startHostAgent>>,
  mcp?: { tool: string },
): Promise<ConformanceReport> {
  return runConformance({
    target: mcp ? `${agent.url}/mcp` : agent.url,
    ...(mcp ? { tool: mcp.tool } : {}),
    headers: { authorization: `Bearer ${HOST_KEY}` },
    otherHeaders: { authorization: `Bearer ${OTHER_KEY}` },
    hooks: { restart: agent.restartCmd, deploy: agent.restartCmd, revoke: revokeCmd(agent) },
    ...BOUNDS,
  });
}
