// Lifecycle signals as small charts over time (GET /v1/signals, sampled every few seconds while the page
// is open): push delay per mechanism, input waiting by age, orphans, duplicates absorbed, requests per
// task. The plane keeps counters, not history, so the history is this tab's own: kept in sessionStorage
// so a reload does not wipe it. SVG drawn here, no chart library.

import { el, svg, duration } from './dom.js';

const HISTORY_ITEM = 'taskplane.signals';
/** Samples kept: 10 minutes at one per 5 s. */
const KEEP = 120;
const W = 160;
const H = 40;

let history = [];
try {
  history = JSON.parse(sessionStorage.getItem(HISTORY_ITEM) ?? '[]');
  if (!Array.isArray(history)) history = [];
} catch {
  history = [];
}

const MECHANISMS = ['stream', 'push', 'poll', 'reconcile'];

/** What each chart plots of one /v1/signals answer: named series of numbers (null: no data yet). */
const CHARTS = [
  {
    id: 'delay',
    title: 'notification delay p50',
    series: (s) => Object.fromEntries(MECHANISMS.map((m) => [m, s.observationDelay?.[m]?.p50Ms ?? null])),
    format: duration,
  },
  {
    id: 'input-age',
    title: 'input waiting, by age',
    series: (s) => ({
      '< 1 min': s.inputRequiredByAge.under1m,
      '1–5 min': s.inputRequiredByAge.under5m,
      '5–15 min': s.inputRequiredByAge.under15m,
      '> 15 min': s.inputRequiredByAge.over15m,
    }),
  },
  { id: 'orphans', title: 'orphans', series: (s) => ({ orphans: s.orphans }) },
  {
    id: 'dups',
    title: 'duplicates absorbed',
    series: (s) => ({ webhook: s.duplicatesAbsorbed.webhook, observation: s.duplicatesAbsorbed.observation }),
  },
  {
    id: 'rpt',
    title: 'requests per task',
    series: (s) => ({ 'per task': s.requests.perTask }),
    format: (v) => (v === null ? '–' : v.toFixed(2)),
  },
];

/** Samples closer together than this replace each other: bursts of events do not crowd out the past. */
const SPACING_MS = 4000;

/** Adds one sample (what each chart plots, and when). */
export function recordSignals(signals, at = Date.now()) {
  const sample = { at };
  for (const c of CHARTS) sample[c.id] = c.series(signals);
  const last = history[history.length - 1];
  if (last && at - last.at < SPACING_MS && history.length > 1)
    history[history.length - 1] = { ...sample, at: last.at };
  else history.push(sample);
  if (history.length > KEEP) history = history.slice(-KEEP);
  try {
    sessionStorage.setItem(HISTORY_ITEM, JSON.stringify(history));
  } catch {
    /* storage full: the charts go on from memory */
  }
}

function chart(c) {
  const names = [...new Set(history.flatMap((h) => Object.keys(h[c.id] ?? {})))];
  const values = history.flatMap((h) => Object.values(h[c.id] ?? {})).filter((v) => typeof v === 'number');
  const max = Math.max(1, ...values);
  const n = history.length;
  const x = (i) => (n <= 1 ? W : (i / (n - 1)) * W);
  const y = (v) => H - 2 - (v / max) * (H - 4);
  const lines = names.map((name, k) => {
    const points = [];
    history.forEach((h, i) => {
      const v = h[c.id]?.[name];
      if (typeof v === 'number') points.push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`);
    });
    return svg('polyline', { class: `series series-${k}`, points: points.join(' '), 'data-series': name });
  });
  const latest = history[n - 1]?.[c.id] ?? {};
  const format = c.format ?? ((v) => (v === null ? '–' : String(v)));
  const legend = names.map((name, k) =>
    el(
      'li',
      { class: `series-${k}`, 'data-series': name },
      names.length > 1 ? `${name} ` : '',
      el('b', {}, format(latest[name] ?? null)),
    ),
  );
  return el(
    'figure',
    { class: 'chart', 'data-chart': c.id, 'data-samples': String(n) },
    el('figcaption', {}, c.title),
    svg(
      'svg',
      {
        viewBox: `0 0 ${W} ${H}`,
        width: W,
        height: H,
        role: 'img',
        'aria-label': `${c.title} over the last ${n} samples`,
      },
      svg('line', { class: 'axis', x1: 0, y1: H - 1, x2: W, y2: H - 1 }),
      ...lines,
    ),
    el('ul', { class: 'legend' }, ...legend),
  );
}

export function renderCharts(container) {
  container.replaceChildren(...CHARTS.map(chart));
}
