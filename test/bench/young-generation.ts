/**
 * `BENCH_YOUNG=default,2 npm run bench:plane -- 1000 0`: the plane's live stream delay with V8's young
 * generation at each size given (`--max-semi-space-size`, MiB; `default` leaves Node's own), side by
 * side in one run. Each setting runs plane-bench.ts again in a child process with that flag (the plane
 * lives in the bench's process; the host keeps Node's default), in the order A B … B A so that a machine
 * getting slower or faster during the run weighs on every setting alike. Each child runs BENCH_ROUNDS
 * rounds (default 4) and reports rounds 2..k; a setting's figures pool its children's samples.
 *
 * Why this matters (docs/deploy.md, "Young generation"): a scavenge stops the event loop while it copies
 * what survived, and a plane following many streams has many objects alive across a scavenge, so a
 * large young generation means rare but long pauses, and every stream event arriving during one waits.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { over, spread } from './stats.ts';

/** The line a child prints its figures on (JSON after the prefix). */
export const YOUNG_RESULT_PREFIX = 'young-generation result: ';
/**
 * The line a child prints as its second round starts, with the time since it started (ms): the
 * scavenges counted are those after it. (V8 prints its trace through C stdio, buffered apart from
 * console.log, so the order of lines on a pipe says nothing about when each was written.)
 */
export const YOUNG_ROUND_2 = 'young-generation round 2 starts at ms ';

interface ChildResult {
  live: number[];
  visible: number[];
  minor: number[];
  major: number[];
  planeCpuPerTask: number[];
  /** Bytes the plane's scavenges copied in rounds 2..k (kept in the young generation, or promoted). */
  copied: number;
}

/**
 * What the scavenges of a child's rounds 2..k copied, from V8's `--trace-gc-nvp` lines (one per
 * collection, `gc=s` for a scavenge): the bytes that survived into the young generation's other half plus
 * those promoted to the old one. A scavenge's pause is mostly this copying, so per task it is the figure
 * that tells whether a change shortens pauses, with far less spread than the delays themselves.
 */
function scavengeCopied(out: string): number {
  const from = Number(out.split(YOUNG_ROUND_2)[1]?.split('\n')[0] ?? 0);
  // `[pid:isolate]  <ms since the isolate started> ms: pause=… gc=s …`. tsx's module loader runs on a
  // thread with an isolate of its own: the plane's is the one that collects most.
  const scavenges = new Map<string, number[]>();
  for (const line of out.split('\n')) {
    const m = /^\[\d+:(0x[0-9a-f]+)\]\s+(\d+) ms: .* gc=s /.exec(line);
    if (!m || Number(m[2]) < from) continue;
    const copied =
      Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0) +
      Number(/ new_space_survived=(\d+)/.exec(line)?.[1] ?? 0);
    const isolate = scavenges.get(m[1]!) ?? [];
    isolate.push(copied);
    scavenges.set(m[1]!, isolate);
  }
  const plane = [...scavenges.values()].sort((a, b) => b.length - a.length)[0] ?? [];
  return sum(plane);
}

function flagsFor(setting: string): string[] {
  if (setting === 'default') return [];
  if (!/^\d+$/.test(setting) || Number(setting) < 1)
    throw new Error(`BENCH_YOUNG: "${setting}" is neither "default" nor a size in MiB (a whole number ≥ 1)`);
  return [`--max-semi-space-size=${setting}`];
}

function runChild(setting: string): Promise<ChildResult> {
  const script = fileURLToPath(new URL('./plane-bench.ts', import.meta.url));
  const args = [...flagsFor(setting), '--trace-gc-nvp', '--import', 'tsx', script, ...process.argv.slice(2)];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, BENCH_YOUNG_CHILD: '1', BENCH_ROUNDS: process.env.BENCH_ROUNDS ?? '4' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith(YOUNG_RESULT_PREFIX));
      if (code !== 0 || !line) reject(new Error(`bench child (${setting}) exited ${code}:\n${out}`));
      else
        resolve({
          ...(JSON.parse(line.slice(YOUNG_RESULT_PREFIX.length)) as Omit<ChildResult, 'copied'>),
          copied: scavengeCopied(out),
        });
    });
  });
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const TASKS = Number(process.argv[2] ?? 40);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? 0;

export async function compareYoungGenerations(list: string): Promise<void> {
  const settings = list.split(',').map((s) => s.trim());
  settings.forEach(flagsFor);
  const order = [...settings, ...[...settings].reverse()];
  const pooled = new Map<string, ChildResult[]>(settings.map((s) => [s, []]));
  for (const [i, setting] of order.entries()) {
    console.log(`young generation ${setting}: run ${i + 1} of ${order.length}…`);
    pooled.get(setting)!.push(await runChild(setting));
  }
  console.log(
    `plane live stream delay by young generation (--max-semi-space-size, MiB), ${process.argv[2] ?? 40} tasks, BENCH_RATE=${process.env.BENCH_RATE ?? 0}, rounds 2..${process.env.BENCH_ROUNDS ?? 4} of ${order.length / settings.length} runs each:`,
  );
  console.log(
    'young gen   live p50/p95/p99 ms (n)    over 10 ms   visible p50/p95/p99, over 10 ms   scavenges/round  median/max ms  copied KiB/task  GC ms/round  major/round  plane CPU ms/task',
  );
  for (const [setting, results] of pooled) {
    const live = results.flatMap((r) => r.live).sort((a, b) => a - b);
    const visible = results.flatMap((r) => r.visible).sort((a, b) => a - b);
    const minor = results.flatMap((r) => r.minor);
    const major = results.flatMap((r) => r.major);
    const rounds = results.reduce((n, r) => n + r.planeCpuPerTask.length, 0);
    const cols = [
      setting.padEnd(10),
      `${spread(live)} (${live.length})`.padEnd(25),
      `${over(live, 10).share} %`.padEnd(11),
      `${spread(visible)}, ${over(visible, 10).share} %`.padEnd(30),
      (minor.length / rounds).toFixed(0).padEnd(15),
      `${median(minor).toFixed(1)}/${Math.max(0, ...minor).toFixed(1)}`.padEnd(13),
      (sum(results.map((r) => r.copied)) / rounds / TASKS / 1024).toFixed(1).padEnd(15),
      ((sum(minor) + sum(major)) / rounds).toFixed(0).padEnd(11),
      (major.length / rounds).toFixed(1).padEnd(11),
      median(results.flatMap((r) => r.planeCpuPerTask)).toFixed(2),
    ];
    console.log(cols.join('  '));
  }
}
