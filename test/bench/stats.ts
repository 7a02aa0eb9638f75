/** The p-th percentile of sorted samples (nearest rank), null when there are none. */
export function percentile(sorted: readonly number[], p: number): number | null {
  return sorted.length
    ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
    : null;
}

/** The middle sample (for an even count, the upper of the two middle ones); `samples` is left as it is. */
export function median(samples: readonly number[]): number {
  return [...samples].sort((a, b) => a - b)[samples.length >> 1]!;
}

/** How many samples exceed `limit`, and their share in percent ('-' when there are none), for a report. */
export function over(samples: readonly number[], limit: number): { count: number; share: string } {
  const count = samples.filter((d) => d > limit).length;
  return { count, share: samples.length ? ((100 * count) / samples.length).toFixed(1) : '-' };
}

/** "p50/p95/p99" of sorted samples, '-' for each when there are none. */
export function spread(sorted: readonly number[]): string {
  return [50, 95, 99].map((p) => percentile(sorted, p) ?? '-').join('/');
}
