/**
 * The plane of the create-latency bench, run as its own process (create-latency.ts spawns it), so the
 * bench's HTTP client does not run on the plane's event loop, as a caller's would not. It serves an
 * SQLite or memory plane with one A2A target, `slow`, and answers the bench on stdin, one command per line:
 * `begin` starts measuring its event-loop delay and CPU, `end` prints them as one JSON line. Prints
 * `create plane ready <url>` once it listens.
 *
 *   npx tsx test/bench/create-plane.ts <src dir> <sqlite|memory> <agent url> <api key>
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import pino from 'pino';

const [src, store, agentUrl, key] = process.argv.slice(2) as [string, 'sqlite' | 'memory', string, string];

/** CPU time of this process's main (event-loop) thread so far, in ms (Linux /proc; 10 ms ticks). */
function loopCpuMs(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

const { startServer } = (await import(
  join(src, 'server/start-server.ts')
)) as typeof import('../../src/server/start-server.ts');
const { A2AConnector } = (await import(
  join(src, 'connectors/a2a/a2a-connector.ts')
)) as typeof import('../../src/connectors/a2a/a2a-connector.ts');
const dir = mkdtempSync(join(tmpdir(), 'taskplane-bench-create-'));
const server = await startServer({
  port: 0,
  db: store === 'sqlite' ? `sqlite:${join(dir, 'plane.db')}` : 'memory:',
  apiKeys: `default:${key}`,
  connectors: { slow: new A2AConnector({ target: 'slow', baseUrl: agentUrl }) },
  dashboard: false,
  lab: false,
  defaultMetrics: false,
  logger: pino({ level: 'silent' }),
  // One tenant creating back to back measures the create path, not the per-tenant write rate (its
  // default, 50 a second, would refuse part of the run; bench:abuse measures the limits).
  limits: { writesPerSecondPerTenant: 10_000, writeBurstPerTenant: 10_000 },
});

const delay = monitorEventLoopDelay({ resolution: 1 });
let cpu0 = 0;
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line === 'begin') {
    delay.reset();
    delay.enable();
    cpu0 = loopCpuMs();
  } else if (line === 'end') {
    const cpuMs = loopCpuMs() - cpu0;
    delay.disable();
    process.stdout.write(
      `${JSON.stringify({ cpuMs, loopDelayP99: delay.percentile(99) / 1e6, loopDelayMax: delay.max / 1e6 })}\n`,
    );
  }
});
// The bench closes stdin when it is done: close the plane and leave no files behind.
lines.on('close', () => {
  void server.close().finally(() => {
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
});
process.stdout.write(`create plane ready ${server.url}\n`);
