import { summarize, type ConformanceReport, type RowReport } from './report.ts';

const pad = (s: string, n: number) => (s.length >= n ? s.slice(0, n) : s + ' '.repeat(n - s.length));

const STATUS: Record<RowReport['status'], string> = {
  passed: 'pass',
  failed: 'FAIL',
  not_run: 'not run',
  not_applicable: 'n/a',
};

/** One line per row: number, id, status, and why (the first failed check, or why it did not run). */
export function formatRowLine(r: RowReport): string {
  const why =
    r.status === 'passed'
      ? `${r.checks.length} checks, ${(r.durationMs / 1000).toFixed(1)} s`
      : (r.reason ?? '');
  return `${pad(String(r.number), 3)} ${pad(r.id, 22)} ${pad(STATUS[r.status], 8)} ${why}`;
}

/** A progress bar line for a terminal (rewritten in place with \r). */
export function progressLine(done: number, total: number, current: string): string {
  const width = 24;
  const filled = total === 0 ? width : Math.round((done / total) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ${current}`;
}

export function formatReport(report: ConformanceReport): string {
  const lines: string[] = [];
  const a = report.agent;
  lines.push(`taskplane conformance — ${report.target}`);
  lines.push(
    `agent: ${a.name ?? '?'} ${a.version ?? ''} (${a.bindings.join(', ') || 'no usable interface'}; streaming ${a.streaming ? 'yes' : 'no'}, push ${a.push ? 'yes' : 'no'}); seed ${report.seed}`,
  );
  lines.push('');
  lines.push(`${pad('#', 3)} ${pad('row', 22)} ${pad('result', 8)} evidence`);
  for (const r of report.rows) lines.push(formatRowLine(r));
  lines.push('');
  lines.push('measures:');
  for (const [name, m] of Object.entries(report.measures))
    lines.push(
      `  ${pad(name, 28)} ${m.value === null ? 'not measured' : `${m.value} ${m.unit}`}  (${m.note})`,
    );
  lines.push('');
  const s = summarize(report.rows);
  lines.push(
    `${s.passed} passed, ${s.failed} failed, ${s.notRun} not run, ${s.notApplicable} not applicable in ${(report.durationMs / 1000).toFixed(1)} s — ${report.passed ? 'every row that ran passed' : 'FAILED'}`,
  );
  return lines.join('\n');
}
