import { describe, expect, it } from 'vitest';
import { EXAMPLE_ROWS, MISSIONS, exampleSettings, missionSettings } from '../../src/lab/missions.ts';
import { runLab } from '../../src/lab/run.ts';

/**
 * The page's sixteen rows show what went wrong: a run that duplicated work, lost outcomes or missed
 * inputs has those jobs among its rows, labelled; a solved run's rows are clean.
 */
const row = (name: string) => EXAMPLE_ROWS.find((r) => r.name === name)!;

describe('the rows the lab page draws', () => {
  it('a resend-on-drop run shows its duplicates and unknown outcomes, each row true to its label', async () => {
    const result = await runLab(exampleSettings(row('example:resend-on-drop')));
    expect(result.timeline).toHaveLength(16);
    const problems = new Set(result.timeline.map((t) => t.problem));
    expect(problems).toContain('duplicate');
    expect([...problems].some((p) => p === 'unknown' || p === 'lost')).toBe(true);
    for (const t of result.timeline) {
      if (t.problem === 'duplicate') expect(t.attempts.some((a) => a.dup)).toBe(true);
      if (t.problem === 'unknown' || t.problem === 'lost') expect(t.learnedMs).toBeNull();
    }
    // Arrival order, as the chart's rows read.
    const arrivals = result.timeline.map((t) => t.arrivalMs);
    expect(arrivals).toEqual([...arrivals].sort((a, b) => a - b));
  });

  it('a push run through an outage shows the inputs it missed', async () => {
    const result = await runLab(exampleSettings(row('example:push-1-retry')));
    expect(result.metrics.missedInputs).toBeGreaterThanOrEqual(1);
    expect(result.timeline.map((t) => t.problem)).toContain('missed_input');
  });

  it("a solved mission's rows carry no problem", async () => {
    const result = await runLab(missionSettings(MISSIONS[3]!, 'solved'));
    expect(result.metrics.unknownOutcomes).toBe(0);
    expect(result.timeline).toHaveLength(16);
    expect(result.timeline.every((t) => t.problem === null)).toBe(true);
  });
});
