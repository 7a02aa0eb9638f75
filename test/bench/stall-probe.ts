/**
 * Where a process stopped answering: each collector pause, and each time its event loop was held past
 * a bound for another reason (a timer due every 2 ms that fired late). Spans are in epoch milliseconds
 * (`performance.timeOrigin` + the entry's time), so spans from two processes line up.
 *
 * plane-bench.ts (BENCH_DEBUG=1) runs one in its own process for the plane and loads this file into the
 * host it spawns (`NODE_OPTIONS="--import tsx --import <this file>"` with BENCH_STALL_PROBE=stderr), whose
 * spans come back as `stall-probe <kind> <start> <end>` lines on the host's stderr.
 */
import { PerformanceObserver, constants, performance } from 'node:perf_hooks';

export type StallKind = 'minor' | 'major' | 'loop';
export type StallSpan = [kind: StallKind, start: number, end: number];

const TICK_MS = 2;

/**
 * Reports every collector pause and, with `loop`, every loop hold past `heldMs` (a timer every 2 ms,
 * so off unless asked for); returns the stop function.
 */
export function startStallProbe(
  report: (span: StallSpan) => void,
  { loop = true, heldMs = 5 }: { loop?: boolean; heldMs?: number } = {},
): () => void {
  const origin = performance.timeOrigin;
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
      const minor = kind === constants.NODE_PERFORMANCE_GC_MINOR;
      report([minor ? 'minor' : 'major', origin + e.startTime, origin + e.startTime + e.duration]);
    }
  });
  gc.observe({ entryTypes: ['gc'] });
  if (!loop) return () => gc.disconnect();
  let due = performance.now() + TICK_MS;
  let timer: NodeJS.Timeout;
  const tick = () => {
    const now = performance.now();
    if (now - due > heldMs) report(['loop', origin + due, origin + now]);
    due = now + TICK_MS;
    timer = setTimeout(tick, TICK_MS);
    timer.unref();
  };
  timer = setTimeout(tick, TICK_MS);
  timer.unref();
  return () => {
    gc.disconnect();
    clearTimeout(timer);
  };
}

/** The spans in a host's stderr (its `stall-probe …` lines). */
export function parseStallLines(text: string): StallSpan[] {
  const spans: StallSpan[] = [];
  for (const m of text.matchAll(/^stall-probe (minor|major|loop) ([\d.]+) ([\d.]+)$/gm))
    spans.push([m[1] as StallKind, Number(m[2]), Number(m[3])]);
  return spans;
}

if (process.env.BENCH_STALL_PROBE === 'stderr')
  startStallProbe(([kind, start, end]) =>
    process.stderr.write(`stall-probe ${kind} ${start.toFixed(1)} ${end.toFixed(1)}\n`),
  );
