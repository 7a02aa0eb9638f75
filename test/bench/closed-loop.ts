/**
 * Runs `total` calls with at most `concurrency` in flight (a closed loop: each caller sends its next
 * call when the last is answered), bounded to 60 s whatever happens; returns req/s, p99 latency (ms) and
 * how many calls were answered.
 */
export async function closedLoop(
  total: number,
  concurrency: number,
  one: () => Promise<unknown>,
): Promise<{ rps: number; p99: number; requests: number }> {
  const latencies: number[] = [];
  let next = 0;
  const start = performance.now();
  const deadline = start + 60_000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total && performance.now() < deadline) {
        next++;
        const t0 = performance.now();
        await one();
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    rps: latencies.length / seconds,
    p99: latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))]!,
    requests: latencies.length,
  };
}
