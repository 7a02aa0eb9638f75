/**
 * Create latency: `POST /v1/tasks` over HTTP, one create after another, against an agent that takes 2 s
 * to answer SendMessage (slow-agent.ts, its own process), posted from this process to a plane in its own
 * process (create-plane.ts), as any caller's would be. A create answers once the envelope is durable
 * and the start runs behind the answer, so its latency should not depend on the agent (goal on SQLite:
 * p99 < 10 ms). Beside the latency it prints the plane's event-loop delay (perf_hooks) while the creates
 * ran: a create waits behind whatever else the loop is doing, mostly the background starts of the
 * creates before it.
 *
 *   npx tsx test/bench/create-latency.ts [creates=200] [rounds=3] [checkout…]
 *
 * With checkouts (paths of other trees of this repository, each with node_modules), each round runs
 * every checkout's plane in turn, against the same agent, so the figures compare within
 * one run on this drifting machine; the medians over rounds are printed last. `npm run bench:plane` runs
 * one round of this checkout.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { spawnProcess, type TestProcess } from '../support/process.ts';
import { median, percentile } from './stats.ts';

export interface CreateLatency {
  p50: number;
  p99: number;
  max: number;
  n: number;
  accepted: number;
  /** Event-loop delay while the creates ran (perf_hooks.monitorEventLoopDelay, 1 ms resolution), ms. */
  loopDelayP99: number;
  loopDelayMax: number;
  /** CPU time of the plane's event-loop thread per create while they ran (the request and everything the
   * plane did in the background meanwhile), µs; moves far less with the machine's load than latency. */
  loopCpuPerCreateUs: number;
}

const HERE = fileURLToPath(new URL('.', import.meta.url));

/** Starts the slow agent in its own process; `close()` ends it. */
export async function startSlowAgent(startDelayMs = 2_000): Promise<{ url: string; close(): Promise<void> }> {
  const proc: TestProcess = await spawnProcess(
    process.execPath,
    ['--import', 'tsx', join(HERE, 'slow-agent.ts'), String(startDelayMs)],
    { ready: /slow agent ready (http:\/\/\S+)/ },
  );
  return { url: proc.readyMatch![1]!, close: async () => void (await proc.stop()) };
}

/**
 * `creates` creates one after another (after 20 warm-up ones) on a plane from the checkout whose source
 * directory is `src` (default this one), on SQLite or the memory store. The plane runs in its own process
 * (create-plane.ts), as it does for any caller; this process is only the client.
 */
export async function measureCreateLatency(o: {
  agentUrl: string;
  store: 'sqlite' | 'memory';
  creates: number;
  src?: string;
}): Promise<CreateLatency> {
  const src = o.src ?? fileURLToPath(new URL('../../src/', import.meta.url));
  const key = 'bench-key-create-123';
  const plane = spawn(
    process.execPath,
    [
      // e.g. CREATE_PLANE_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/prof' to see where the plane's time goes
      ...(process.env.CREATE_PLANE_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      '--import',
      'tsx',
      join(HERE, 'create-plane.ts'),
      src,
      o.store,
      o.agentUrl,
      key,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const exited = once(plane, 'exit');
  const lines = createInterface({ input: plane.stdout });
  const nextLine = async (): Promise<string> => {
    const [line] = (await Promise.race([
      once(lines, 'line'),
      exited.then(() => {
        throw new Error('the bench plane exited before it answered');
      }),
    ])) as [string];
    return line;
  };
  const times: number[] = [];
  let accepted = 0;
  let loop: { cpuMs: number; loopDelayP99: number; loopDelayMax: number };
  try {
    const ready = /create plane ready (\S+)/.exec(await nextLine());
    if (!ready) throw new Error('the bench plane did not say where it listens');
    const url = ready[1]!;
    const post = async (i: number) => {
      const t0 = performance.now();
      const res = await fetch(`${url}/v1/tasks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ target: 'slow', input: `job ${i}` }),
      });
      await res.arrayBuffer();
      if (res.status === 202) accepted++;
      return performance.now() - t0;
    };
    for (let i = 0; i < 20; i++) await post(-i); // warm-up: connections, JIT, the agent card
    accepted = 0;
    plane.stdin.write('begin\n');
    for (let i = 0; i < o.creates; i++) times.push(await post(i));
    plane.stdin.write('end\n');
    loop = JSON.parse(await nextLine()) as typeof loop;
  } finally {
    plane.stdin.end();
    await exited;
  }
  times.sort((a, b) => a - b);
  return {
    p50: percentile(times, 50) ?? Number.NaN,
    p99: percentile(times, 99) ?? Number.NaN,
    max: times[times.length - 1]!,
    n: times.length,
    accepted,
    loopDelayP99: loop.loopDelayP99,
    loopDelayMax: loop.loopDelayMax,
    loopCpuPerCreateUs: (loop.cpuMs * 1000) / times.length,
  };
}

export function formatCreateLatency(store: string, c: CreateLatency): string {
  return `create (POST /v1/tasks, ${store}, agent answers SendMessage after 2 s): p50 ${c.p50.toFixed(2)} ms, p99 ${c.p99.toFixed(2)} ms, max ${c.max.toFixed(2)} ms over ${c.n} creates (${c.accepted} answered 202); event-loop delay p99 ${c.loopDelayP99.toFixed(1)} ms, max ${c.loopDelayMax.toFixed(1)} ms; event-loop CPU ${c.loopCpuPerCreateUs.toFixed(0)} µs per create${store === 'sqlite' ? '; goal p99 < 10 ms' : ''}`;
}

async function main(): Promise<void> {
  const creates = Number(process.argv[2] ?? 200);
  const rounds = Number(process.argv[3] ?? 3);
  const checkouts = process.argv.slice(4);
  const srcs = checkouts.length
    ? checkouts.map((c) => resolve(c, 'src'))
    : [fileURLToPath(new URL('../../src/', import.meta.url))];
  const agent = await startSlowAgent();
  const p99s = new Map<string, number[]>();
  const cpus = new Map<string, number[]>();
  try {
    for (let r = 1; r <= rounds; r++) {
      for (const src of srcs) {
        for (const store of ['sqlite', 'memory'] as const) {
          const c = await measureCreateLatency({ agentUrl: agent.url, store, creates, src });
          const k = `${src} ${store}`;
          p99s.set(k, [...(p99s.get(k) ?? []), c.p99]);
          cpus.set(k, [...(cpus.get(k) ?? []), c.loopCpuPerCreateUs]);
          console.log(`round ${r} ${src}\n  ${formatCreateLatency(store, c)}`);
        }
      }
    }
  } finally {
    await agent.close();
  }
  console.log('medians over rounds: p99 ms, event-loop CPU µs per create');
  for (const [k, xs] of p99s)
    console.log(
      `  ${k}: p99 ${median(xs).toFixed(2)} ms (${xs.map((x) => x.toFixed(1)).join(', ')}), CPU ${median(cpus.get(k)!).toFixed(0)} µs (${cpus
        .get(k)!
        .map((x) => x.toFixed(0))
        .join(', ')})`,
    );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
