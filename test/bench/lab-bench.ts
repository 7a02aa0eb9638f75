/**
 * `npm run bench:lab`: how fast the lab runs (issue 5 goals: one 240-task run < 1 s, the full
 * `taskplane lab` < 10 s, 10,000 tasks < 60 s on the 2-core CI machine), and the worked example's
 * medians over 20 seeds against LAB.md's bands, and the four missions' solutions over the same seeds.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  EXAMPLE_ROWS,
  MISSIONS,
  bandExtras,
  bandMisses,
  exampleSettings,
  missionSettings,
} from '../../src/lab/missions.ts';
import { runLab } from '../../src/lab/run.ts';
import { DEFAULT_SETTINGS, withSettings } from '../../src/lab/settings.ts';

const ms = (t0: number) => performance.now() - t0;
const fmt = (x: number) => `${(x / 1000).toFixed(2)} s`;
const verdict = (x: number, goal: number) =>
  x < goal ? `ok (goal < ${fmt(goal)})` : `SLOW (goal < ${fmt(goal)})`;

async function timed(label: string, goalMs: number, fn: () => Promise<unknown> | unknown): Promise<void> {
  const t0 = performance.now();
  await fn();
  const t = ms(t0);
  console.log(`${label.padEnd(52)} ${fmt(t).padStart(9)}  ${verdict(t, goalMs)}`);
}

console.log('lab speed');
// Warm-up so module loading is not counted in the single-run figure.
await runLab(withSettings(DEFAULT_SETTINGS, { tasks: 20 }));
await timed('one 240-task run (engine, push + reconcile, all faults)', 1000, () => runLab(DEFAULT_SETTINGS));
await timed('one 240-task run (engine, stream, all faults)', 1000, () =>
  runLab(withSettings(DEFAULT_SETTINGS, { delivery: 'stream' })),
);
// The CLI from the sources: the bench measures this checkout, not whatever dist/ was last built from.
const bin = fileURLToPath(new URL('../support/cli-from-source.mjs', import.meta.url));
await timed('full `taskplane lab` (9 runs, new process)', 10_000, () =>
  execFileSync('node', [bin, 'lab'], { stdio: 'ignore' }),
);
await timed('10,000 tasks (engine, push + reconcile, all faults)', 60_000, () =>
  runLab(withSettings(DEFAULT_SETTINGS, { tasks: 10_000 })),
);
await timed('10,000 tasks (engine, stream, all faults)', 60_000, () =>
  runLab(withSettings(DEFAULT_SETTINGS, { tasks: 10_000, delivery: 'stream' })),
);
await timed('10,000 tasks (naive, 15-s polling, all faults)', 60_000, () =>
  runLab(
    withSettings(DEFAULT_SETTINGS, { tasks: 10_000, delivery: 'poll', idempotent: false, reconcileMin: 0 }),
  ),
);

const SEEDS = Array.from({ length: 20 }, (_, i) => i + 1);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const r2 = (x: number) => Math.round(x * 100) / 100 || 0;
/** `median  [min..max]`, right-aligned. */
const spread = (xs: number[]) =>
  `${String(r2(median(xs))).padStart(8)}  [${r2(Math.min(...xs))}..${r2(Math.max(...xs))}]`;

console.log(
  '\nworked example over 20 seeds (1..20): median [min..max] per metric, and seeds inside the band',
);
const KEYS = [
  'duplicates',
  'unknownPct',
  'lostOutcomes',
  'missedInputs',
  'requestsPerTask',
  'requestsPerTaskListBased',
  'duplicatesAbsorbed',
  'resubmitted',
  'meanNotifyDelayS',
] as const;
for (const row of EXAMPLE_ROWS) {
  const metrics = [];
  const answers: number[] = [];
  let inBand = 0;
  for (const seed of SEEDS) {
    const r = await runLab(exampleSettings(row, withSettings(DEFAULT_SETTINGS, { seed })));
    metrics.push(r.metrics);
    answers.push(bandExtras(r).answersPerTask);
    if (bandMisses(row, r).length === 0) inBand++;
  }
  const med: Record<string, number> = {};
  for (const k of KEYS) med[k] = median(metrics.map((m) => m[k]));
  const medianMetrics = {
    ...metrics[0]!,
    ...med,
    tasks: 240,
    unknownOutcomes: Math.round((med.unknownPct! * 240) / 100),
  };
  const medianInBand = row.checks.every((c) => c.ok(medianMetrics, { answersPerTask: median(answers) }));
  console.log(
    `\n${row.name}  (${row.band})  median in band: ${medianInBand ? 'yes' : 'NO'}; seeds in band: ${inBand}/20`,
  );
  console.log(
    `  ${'extra (req/task − send − answers)'.padEnd(26)} ${spread(metrics.map((m, i) => m.requestsPerTask - 1 - answers[i]!))}`,
  );
  for (const k of KEYS) console.log(`  ${k.padEnd(26)} ${spread(metrics.map((m) => m[k]))}`);
}

console.log(
  '\nmissions solved by the default engine configuration over 20 seeds (1..20): median [min..max], and stars per seed',
);
for (const mission of MISSIONS) {
  const metrics = [];
  const stars: number[] = [];
  for (const seed of SEEDS) {
    const settings = missionSettings(mission, 'solved', withSettings(DEFAULT_SETTINGS, { seed }));
    const r = await runLab(settings);
    metrics.push(r.metrics);
    stars.push(mission.stars(r.metrics, settings));
  }
  const count = (n: number) => stars.filter((s) => s === n).length;
  console.log(
    `\nmission:${mission.id} ${mission.title}  stars: median ${median(stars)}; ★★★ ${count(3)}, ★★ ${count(2)}, ★ ${count(1)}, none ${count(0)} of 20`,
  );
  for (const k of [
    'duplicates',
    'unknownOutcomes',
    'missedInputs',
    'requestsPerTask',
    'requestsPerTaskListBased',
    'meanNotifyDelayS',
  ] as const) {
    console.log(`  ${k.padEnd(26)} ${spread(metrics.map((m) => m[k]))}`);
  }
}
