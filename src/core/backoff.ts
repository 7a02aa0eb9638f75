import { configError } from './errors.ts';
import type { Random } from './random.ts';

export interface BackoffOptions {
  /** First interval before jitter. @default 1000 */
  initialIntervalMs?: number;
  /** Growth per attempt. @default 2 */
  multiplier?: number;
  /** Largest interval before jitter. @default 60000 */
  maximumIntervalMs?: number;
  /**
   * Full jitter (AWS architecture blog, "Exponential Backoff and Jitter"): the wait is uniform in
   * [0, interval], which spreads a herd of reconnecting clients best. 'none' waits exactly the interval.
   * @default 'full'
   */
  jitter?: 'full' | 'none';
  /** Give up once this much time has passed since the first attempt; undefined means never. */
  deadlineMs?: number;
}

export interface BackoffPolicy {
  initialIntervalMs: number;
  multiplier: number;
  maximumIntervalMs: number;
  jitter: 'full' | 'none';
  deadlineMs: number | undefined;
}

/** Options → defaults → validated policy; a bad value names its field. */
export function backoffPolicy(options: BackoffOptions = {}, fieldPrefix = ''): BackoffPolicy {
  const policy: BackoffPolicy = {
    initialIntervalMs: options.initialIntervalMs ?? 1000,
    multiplier: options.multiplier ?? 2,
    maximumIntervalMs: options.maximumIntervalMs ?? 60_000,
    jitter: options.jitter ?? 'full',
    deadlineMs: options.deadlineMs,
  };
  const f = (name: string) => fieldPrefix + name;
  if (!(policy.initialIntervalMs > 0)) throw configError(f('initialIntervalMs'), 'must be > 0');
  if (!(policy.multiplier >= 1)) throw configError(f('multiplier'), 'must be >= 1');
  if (!(policy.maximumIntervalMs >= policy.initialIntervalMs)) {
    throw configError(f('maximumIntervalMs'), 'must be >= initialIntervalMs');
  }
  if (policy.jitter !== 'full' && policy.jitter !== 'none')
    throw configError(f('jitter'), "must be 'full' or 'none'");
  if (policy.deadlineMs !== undefined && !(policy.deadlineMs > 0))
    throw configError(f('deadlineMs'), 'must be > 0');
  return policy;
}

/** The interval ceiling for attempt `attempt` (0-based), before jitter. */
export function backoffCeiling(policy: BackoffPolicy, attempt: number): number {
  return Math.min(policy.maximumIntervalMs, policy.initialIntervalMs * Math.pow(policy.multiplier, attempt));
}

/**
 * The wait before retry number `attempt` (0-based), or undefined when the deadline leaves no room.
 * `elapsedMs` is the time since the first attempt.
 */
export function nextBackoff(
  policy: BackoffPolicy,
  attempt: number,
  random: Random,
  elapsedMs = 0,
): number | undefined {
  const ceiling = backoffCeiling(policy, attempt);
  const wait = policy.jitter === 'full' ? Math.floor(random.next() * (ceiling + 1)) : ceiling;
  if (policy.deadlineMs !== undefined) {
    const left = policy.deadlineMs - elapsedMs;
    if (left <= 0) return undefined;
    return Math.min(wait, left);
  }
  return wait;
}
