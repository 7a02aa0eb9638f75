import type { ConformanceReport, RowReport } from '../../src/conformance/report.ts';

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
