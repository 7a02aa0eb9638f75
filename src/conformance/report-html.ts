import { summarize, type ConformanceReport, type RowReport, type TimelineKind } from './report.ts';

/**
 * The report as one self-contained HTML page (no script, no external asset), for sending to a vendor:
 * the verdict per row with its checks, jobs and a timeline of faults and observations, the matrix's
 * measures and the procurement checklist answered from the evidence.
 */
const esc = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const COLORS: Record<TimelineKind, string> = {
  fault: '#e5484d',
  hook: '#8e4ec6',
  request: '#8b8d98',
  plane: '#3e63dd',
  agent: '#12a594',
  push: '#f76b15',
  check: '#30a46c',
  note: '#8b8d98',
};

const STATUS_LABEL = {
  passed: 'passed',
  failed: 'FAILED',
  not_run: 'not run',
  not_applicable: 'not applicable',
} as const;

function timelineSvg(row: RowReport): string {
  const entries = row.timeline;
  if (entries.length === 0) return '';
  const width = 720;
  const lanes: TimelineKind[] = ['fault', 'hook', 'request', 'plane', 'agent', 'push', 'check'];
  const span = Math.max(1, ...entries.map((e) => e.atMs));
  const x = (ms: number) => 90 + (Math.max(0, ms) / span) * (width - 110);
  const marks = entries
    .filter((e) => lanes.includes(e.kind))
    .map((e) => {
      const y = 14 + lanes.indexOf(e.kind) * 18;
      const color = e.kind === 'check' && e.text.startsWith('FAIL') ? COLORS.fault : COLORS[e.kind];
      return `<circle cx="${x(e.atMs).toFixed(1)}" cy="${y}" r="4" fill="${color}"><title>${esc(`${(e.atMs / 1000).toFixed(2)} s ${e.kind}: ${e.text}`)}</title></circle>`;
    })
    .join('');
  const labels = lanes
    .map(
      (l, i) =>
        `<text x="4" y="${18 + i * 18}" class="lane">${l}</text><line x1="90" x2="${width - 20}" y1="${14 + i * 18}" y2="${14 + i * 18}" class="grid"/>`,
    )
    .join('');
  const h = 14 + lanes.length * 18;
  return `<svg class="timeline" viewBox="0 0 ${width} ${h + 14}" width="${width}" height="${h + 14}" role="img" aria-label="timeline of row ${row.number}">${labels}${marks}<text x="90" y="${h + 10}" class="lane">0 s</text><text x="${width - 60}" y="${h + 10}" class="lane">${(span / 1000).toFixed(1)} s</text></svg>`;
}

function rowSection(row: RowReport): string {
  const checks = row.checks
    .map(
      (c) =>
        `<li class="${c.ok ? 'ok' : 'bad'}">${c.ok ? '✓' : '✗'} <b>${esc(c.name)}</b> — ${esc(c.detail)}</li>`,
    )
    .join('');
  const jobs = row.jobs.length
    ? `<table><tr><th>job</th><th>engine</th><th>agent</th><th>remote tasks</th><th>requests</th><th>usage</th></tr>${row.jobs
        .map(
          (j) =>
            `<tr><td>${esc(j.label)}</td><td>${esc(j.finalState)}</td><td>${esc(j.agentState ?? 'unknown to the agent')}</td><td>${esc(j.remoteTaskIds.join(', ') || '—')}</td><td>${j.requests}</td><td>${esc(
              j.usage
                ? Object.entries(j.usage)
                    .map(([u, v]) => `${v} ${u}`)
                    .join(', ')
                : '—',
            )}</td></tr>`,
        )
        .join('')}</table>`
    : '';
  const events = row.timeline
    .map(
      (e) =>
        `<li><span class="t">${(e.atMs / 1000).toFixed(2)} s</span> <span class="k" style="color:${COLORS[e.kind]}">${e.kind}</span> ${esc(e.text)}</li>`,
    )
    .join('');
  return `<section id="${esc(row.id)}" class="row ${row.status}">
<h3>${row.number}. ${esc(row.title)} <span class="badge ${row.status}">${STATUS_LABEL[row.status]}</span></h3>
${row.reason ? `<p class="reason">${esc(row.reason)}</p>` : ''}
${timelineSvg(row)}
${checks ? `<ul class="checks">${checks}</ul>` : ''}
${jobs}
${events ? `<details><summary>timeline (${row.timeline.length} entries)</summary><ol class="events">${events}</ol></details>` : ''}
</section>`;
}

export function renderHtmlReport(report: ConformanceReport): string {
  const s = summarize(report.rows);
  const a = report.agent;
  const summaryRows = report.rows
    .map(
      (r) =>
        `<tr><td>${r.number}</td><td><a href="#${esc(r.id)}">${esc(r.title)}</a></td><td><span class="badge ${r.status}">${STATUS_LABEL[r.status]}</span></td><td>${esc(r.reason ?? '')}</td></tr>`,
    )
    .join('');
  const measures = Object.entries(report.measures)
    .map(
      ([k, m]) =>
        `<tr><td>${esc(k)}</td><td>${m.value === null ? '<i>not measured</i>' : esc(`${m.value} ${m.unit}`)}</td><td>${esc(m.note)}</td></tr>`,
    )
    .join('');
  const checklist = report.checklist
    .map(
      (q) =>
        `<tr><td>${esc(q.question)}</td><td>${q.answer === 'not measured' ? '<i>not measured</i>' : esc(q.answer)}</td><td>${q.rows.map((id) => `<a href="#${esc(id)}">${esc(id)}</a>`).join(' ')}</td></tr>`,
    )
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>taskplane conformance — ${esc(a.name ?? report.target)}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:980px;color:#1c2024;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin-top:28px}h3{font-size:15px;margin:0 0 6px}
table{border-collapse:collapse;width:100%;margin:8px 0}td,th{border-bottom:1px solid #e0e1e6;padding:4px 6px;text-align:left;vertical-align:top}
.badge{border-radius:4px;padding:1px 6px;font-size:12px;color:#fff}.badge.passed{background:#30a46c}.badge.failed{background:#e5484d}.badge.not_run{background:#8b8d98}.badge.not_applicable{background:#b0b4ba}
.verdict{font-size:16px;padding:8px 12px;border-radius:6px;margin:12px 0}.verdict.ok{background:#e9f9ee}.verdict.bad{background:#feebec}
.row{border:1px solid #e0e1e6;border-radius:6px;padding:10px 12px;margin:12px 0}.row.failed{border-color:#e5484d}
.reason{color:#60646c;margin:2px 0 6px}.checks{padding-left:18px}.checks .bad{color:#ce2c31}
.timeline .lane{font-size:11px;fill:#60646c}.timeline .grid{stroke:#e0e1e6}
.events{font:12px/1.4 ui-monospace,monospace;padding-left:18px}.events .t{color:#60646c}
.muted{color:#60646c}
</style></head><body>
<h1>taskplane conformance report</h1>
<p class="muted">${esc(report.target)} — ${esc(a.name ?? '?')} ${esc(a.version ?? '')} (${esc(a.bindings.join(', '))}; streaming ${a.streaming ? 'yes' : 'no'}, push ${a.push ? 'yes' : 'no'}) — ${esc(report.startedAt)}, ${(report.durationMs / 1000).toFixed(1)} s, seed ${report.seed}, report version ${report.version}</p>
<div class="verdict ${report.passed ? 'ok' : 'bad'}">${s.passed} passed, ${s.failed} failed, ${s.notRun} not run, ${s.notApplicable} not applicable — ${report.passed ? 'every row that ran passed' : 'some rows failed'}</div>
<table><tr><th>#</th><th>row</th><th>result</th><th>evidence</th></tr>${summaryRows}</table>
<h2>Procurement checklist</h2>
<table><tr><th>question</th><th>answer from this run</th><th>rows</th></tr>${checklist}</table>
<h2>Measures</h2>
<table><tr><th>measure</th><th>value</th><th>how</th></tr>${measures}</table>
<h2>Rows</h2>
${report.rows.map(rowSection).join('\n')}
${report.notes.length ? `<h2>Notes</h2><ul>${report.notes.map((n) => `<li>${esc(n)}</li>`).join('')}</ul>` : ''}
</body></html>
`;
}
