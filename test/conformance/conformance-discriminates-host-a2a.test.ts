import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConformanceReport } from '../../src/conformance/report.ts';
import { startHostAgent } from './agent-processes.ts';
import { byId, explain, reportOnHost } from './conformance-discriminates.ts';

describe('taskplane conformance against taskplane host', () => {
  let agent: Awaited<ReturnType<typeof startHostAgent>>;
  let report: ConformanceReport;
  beforeAll(async () => {
    agent = await startHostAgent();
    report = await reportOnHost(agent);
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
