import type { SeededRandom } from '../core/random.ts';

/**
 * The lab's world, fixed by the lab's published defaults (docs/lab.md). Times are virtual epoch ms,
 * starting at 0. Where those leave a value open, the choice and its reason are given here.
 */
export const MINUTE_MS = 60_000;

export const WORLD = {
  /** 240 tasks arrive uniformly over the first 120 simulated minutes. */
  arrivalWindowMs: 120 * MINUTE_MS,
  /** Log-normal duration: median 6 min, sigma 0.9 gives a mean of 6·e^(0.9²/2) ≈ 9.0 min (tasks average about nine minutes). */
  medianDurationMs: 6 * MINUTE_MS,
  durationSigma: 0.9,
  /** Clipped to 1–60 min ("a few minutes to an hour"). The clip moves the mean by under 0.2 min. */
  minDurationMs: 1 * MINUTE_MS,
  maxDurationMs: 60 * MINUTE_MS,
  /** 15 % of tasks pause once for input. */
  inputShare: 0.15,
  /**
   * Where in its work a pausing task asks: uniform over 20–80 % of the work. Ours: the lab's model says only
   * "part-way"; this keeps the pause away from both ends so it is never merged with start or finish.
   */
  inputAtMin: 0.2,
  inputAtMax: 0.8,
  /** The agent fails a task whose input is not answered within 15 min. */
  inputTimeoutMs: 15 * MINUTE_MS,
  /** The run ends at 240 min at the latest. */
  horizonMs: 240 * MINUTE_MS,
  /** Each open stream drops after an exponential time, mean 8 min. */
  flapMeanMs: 8 * MINUTE_MS,
  /** The client's webhook receiver is down from minute 30 to minute 42. */
  outageStartMs: 30 * MINUTE_MS,
  outageEndMs: 42 * MINUTE_MS,
  /** Push retry schedule: base 5 s, doubling; after k retries the wait is 5·(2^k − 1) s. */
  pushBaseMs: 5_000,
  /**
   * Share of webhook responses lost after the receiver processed them. Ours: the model says "a share";
   * 20 % makes duplicates common enough (≈ 0.3 per task with 1–2 pushes each) that a non-idempotent
   * handler visibly does side effects twice in every run, while most deliveries still succeed first time.
   */
  lostAckShare: 0.2,
  /** The agent restarts at minute 60 with no persistence. Ours: it is back at once (no downtime). */
  restartAtMs: 60 * MINUTE_MS,
  /**
   * One-way network latency for requests, stream events and webhooks. Ours: 50 ms, a cross-region hop;
   * it only sets the floor of the notification delay for streams and push.
   */
  latencyMs: 50,
  /**
   * How long the naive clients wait before reconnecting or resending after a drop. Ours: 1 s, the
   * typical first reconnect delay of an SSE client (EventSource's default retry is a few seconds).
   */
  reconnectDelayMs: 1_000,
} as const;

/** One unit of delegated work: the same job may be run by several remote tasks (duplicates, resubmits). */
export interface JobSpec {
  index: number;
  arrivalMs: number;
  durationMs: number;
  /** Work done (ms) when the task asks for input, or null when it never asks. */
  inputAtWorkMs: number | null;
}

/** Standard normal draw (Box–Muller), from two uniform draws of `random`. */
function normal(random: SeededRandom): number {
  const u = Math.max(random.next(), 1e-12);
  const v = random.next();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/**
 * The jobs of one run. Drawn from their own random stream so changing how the client behaves (which
 * changes how many network draws happen) never changes the work itself.
 */
export function generateJobs(count: number, random: SeededRandom): JobSpec[] {
  const arrivals: number[] = [];
  for (let i = 0; i < count; i++) arrivals.push(Math.floor(random.next() * WORLD.arrivalWindowMs));
  arrivals.sort((a, b) => a - b);
  return arrivals.map((arrivalMs, index) => {
    const raw = WORLD.medianDurationMs * Math.exp(WORLD.durationSigma * normal(random));
    const durationMs = Math.round(Math.min(WORLD.maxDurationMs, Math.max(WORLD.minDurationMs, raw)));
    const pauses = random.next() < WORLD.inputShare;
    const at = WORLD.inputAtMin + (WORLD.inputAtMax - WORLD.inputAtMin) * random.next();
    return { index, arrivalMs, durationMs, inputAtWorkMs: pauses ? Math.round(durationMs * at) : null };
  });
}

/** Exponential draw with the given mean. */
export function exponential(random: SeededRandom, meanMs: number): number {
  return -Math.log(1 - random.next()) * meanMs;
}

/**
 * The 16 jobs the page draws: "sixteen of the longer tasks". Taken from the longest quarter (at least
 * 16 jobs), evenly spread over arrival time, so the bars cross the outage and the restart instead of
 * bunching up among the few longest jobs.
 */
export function pickShownJobs(jobs: readonly JobSpec[], count = 16): number[] {
  const byLength = [...jobs].sort((a, b) => b.durationMs - a.durationMs || a.index - b.index);
  const pool = byLength
    .slice(0, Math.max(count, Math.ceil(jobs.length / 4)))
    .sort((a, b) => a.arrivalMs - b.arrivalMs || a.index - b.index);
  if (pool.length <= count) return pool.map((j) => j.index);
  const picked: number[] = [];
  for (let i = 0; i < count; i++) picked.push(pool[Math.floor((i * pool.length) / count)]!.index);
  return picked;
}
