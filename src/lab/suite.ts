import type { LabMetrics } from './ledger.ts';
import {
  EXAMPLE_ROWS,
  MISSIONS,
  bandMisses,
  exampleSettings,
  missionSettings,
  type Mission,
} from './missions.ts';
import { runLab, type RunResult } from './run.ts';
import { describeFaults, usesEngine, type LabSettings } from './settings.ts';

/** One entry of `taskplane lab --json` (field names are a public interface). */
export interface JsonRun {
  name: string;
  settings: Omit<LabSettings, 'client'> & { client: 'engine' | 'naive' };
  metrics: LabMetrics;
  stars: number | null;
}

export interface SuiteRun {
  result: RunResult;
  stars: number | null;
  mission?: Mission;
  /** For example rows: which band checks failed (empty when inside the band). */
  bandMisses?: string[];
}

export type SuiteProgress = (done: number, total: number, fraction: number, name: string) => void;

export interface PlannedRun {
  name: string;
  settings: LabSettings;
  mission?: Mission;
  example?: (typeof EXAMPLE_ROWS)[number];
}

export function planExample(base: LabSettings): PlannedRun[] {
  return EXAMPLE_ROWS.map((row) => ({ name: row.name, settings: exampleSettings(row, base), example: row }));
}

export function planMissionsSolved(base: LabSettings, ids: number[] = [1, 2, 3, 4]): PlannedRun[] {
  return MISSIONS.filter((m) => ids.includes(m.id)).map((m) => ({
    name: `mission:${m.id}`,
    settings: missionSettings(m, 'solved', base),
    mission: m,
  }));
}

/** Runs the plan in order (each run is independent and deterministic). */
export async function runPlan(plan: PlannedRun[], progress?: SuiteProgress): Promise<SuiteRun[]> {
  const out: SuiteRun[] = [];
  for (const [i, p] of plan.entries()) {
    progress?.(i, plan.length, 0, p.name);
    const result = await runLab(p.settings, {
      name: p.name,
      onProgress: (f) => progress?.(i, plan.length, f, p.name),
    });
    const run: SuiteRun = { result, stars: p.mission ? p.mission.stars(result.metrics, p.settings) : null };
    if (p.mission) run.mission = p.mission;
    if (p.example) run.bandMisses = bandMisses(p.example, result);
    out.push(run);
  }
  progress?.(plan.length, plan.length, 1, '');
  return out;
}

export function toJsonRun(run: SuiteRun): JsonRun {
  const { client: _client, ...rest } = run.result.settings;
  return {
    name: run.result.name,
    settings: { ...rest, client: usesEngine(run.result.settings) ? 'engine' : 'naive' },
    metrics: run.result.metrics,
    stars: run.stars,
  };
}

/** A short description of how the client is set up, for tables. */
export function describeSetup(s: LabSettings): string {
  const parts: string[] = [s.delivery];
  if (s.delivery === 'stream') parts.push(s.onDrop);
  if (s.delivery === 'push') parts.push(`${s.pushRetries} retr${s.pushRetries === 1 ? 'y' : 'ies'}`);
  if (s.delivery === 'poll') parts.push(`${s.pollS} s`);
  parts.push(s.reconcileMin > 0 ? `reconcile ${s.reconcileMin} min` : 'no reconcile');
  parts.push(s.idempotent ? 'idempotent' : 'not idempotent');
  parts.push(`faults ${describeFaults(s.faults)}`);
  return parts.join(', ');
}

const pad = (s: string, n: number) => (s.length >= n ? s : s + ' '.repeat(n - s.length));
const lpad = (s: string, n: number) => (s.length >= n ? s : ' '.repeat(n - s.length) + s);

export function starText(stars: number | null): string {
  if (stars === null) return '';
  return '★'.repeat(stars) + '☆'.repeat(3 - stars);
}

/** The figures table, one line per run. */
export function formatTable(runs: SuiteRun[]): string {
  const head = [
    pad('run', 24),
    pad('client', 6),
    lpad('dups', 5),
    lpad('unknown', 8),
    lpad('lost', 5),
    lpad('missed', 6),
    lpad('req/task', 8),
    lpad('list', 6),
    lpad('absorbed', 8),
    lpad('resub', 5),
    lpad('delay', 7),
    '  result',
  ];
  const lines = [head.join(' ')];
  for (const r of runs) {
    const m = r.result.metrics;
    let verdict = '';
    if (r.bandMisses)
      verdict = r.bandMisses.length === 0 ? 'in band' : `OUT OF BAND: ${r.bandMisses.join('; ')}`;
    if (r.stars !== null) verdict = starText(r.stars);
    lines.push(
      [
        pad(r.result.name, 24),
        pad(r.result.engine ? 'engine' : 'naive', 6),
        lpad(String(m.duplicates), 5),
        lpad(`${m.unknownPct}%`, 8),
        lpad(String(m.lostOutcomes), 5),
        lpad(String(m.missedInputs), 6),
        lpad(m.requestsPerTask.toFixed(2), 8),
        lpad(m.requestsPerTaskListBased.toFixed(2), 6),
        lpad(String(m.duplicatesAbsorbed), 8),
        lpad(String(m.resubmitted), 5),
        lpad(`${m.meanNotifyDelayS}s`, 7),
        '  ' + verdict,
      ].join(' '),
    );
  }
  return lines.join('\n');
}
