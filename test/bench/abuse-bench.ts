/**
 * `npm run bench:abuse`: one abusive tenant next to one normal tenant on the control plane (SQLite, real
 * sockets). Three processes: the plane, the abusive tenant, and this one, the normal tenant, so neither
 * client's work runs on the plane's event loop. The normal tenant creates tasks at a steady pace (25 a
 * second) and its create latency is measured alone, then in rounds that alternate the abusive tenant
 * running and paused (SIGSTOP, its streams and connections left open), then alone again. The abusive
 * tenant holds 1,000 SSE streams open and posts bodies past the limit (declared and chunked), deeply
 * nested JSON, pathological acceptance schemas, huge webhooks and a stream of its own creates that wake
 * its streams, four at a time, each sent again as soon as it is answered. Prints, per phase, the normal
 * tenant's create p50/p99 at the client and inside the plane, the plane's event loop delay and CPU, the
 * ratio loaded / unloaded p99 (goal ≤ 2×) and loaded / paused (the same, side by side: on a shared
 * machine the speed drifts between phases), and what the abusive tenant got back. A benchmark, not a
 * test: figures move with the load on the machine.
 *
 *   npm run bench:abuse -- [creates=400] [streams=1000]
 *
 * ABUSE_KINDS=huge,endless,… runs only the abusive requests whose names start so (`none`: streams
 * only); ABUSE_MAX_STREAMS=N sets the plane's per-tenant stream limit (default 500, so 500 of the
 * 1,000 streams are refused); ABUSE_LIMITS='{"writesPerSecondPerTenant":100}' sets other per-tenant
 * limits; ABUSE_ROUNDS (5), ABUSE_NORMAL_RATE (25; 0 sends one create after another as fast as they are
 * answered), ABUSE_DB (`memory:` takes the disk out), ABUSE_PLANE_NODE_ARGS (`--cpu-prof`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import * as diagnostics from 'node:diagnostics_channel';
import { Agent, request, type IncomingMessage } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { SystemClock } from '../../src/core/clock.ts';
import { startServer } from '../../src/server/start-server.ts';
import { FakeRemote } from '../plane/fake-remote.ts';

const NORMAL_KEY = 'normal-key-0123456789';
const ABUSER_KEY = 'abuser-key-0123456789';

interface Reply {
  status: number;
  body: string;
}

function post(agent: Agent, url: string, path: string, key: string, body: string | Buffer): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        agent,
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A chunked body that keeps coming until the server answers (or `maxBytes` is sent). */
function endlessPost(agent: Agent, url: string, key: string, maxBytes: number): Promise<Reply> {
  return new Promise((resolve) => {
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    let done = false;
    const req = request(`${url}/v1/tasks`, {
      agent,
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    });
    const finish = (r: Reply) => {
      if (done) return;
      done = true;
      req.destroy();
      resolve(r);
    };
    req.on('response', (res) => {
      res.resume();
      finish({ status: res.statusCode!, body: '' });
    });
    req.on('error', () => finish({ status: 0, body: '' }));
    const pump = () => {
      while (!done && sent < maxBytes) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      if (!done) req.end();
    };
    pump();
  });
}

/** Loaded and paused phases alternate this many times (ABUSE_ROUNDS). */
const ROUNDS = Number(process.env.ABUSE_ROUNDS ?? 5);
/** After the abusive tenant is stopped or resumed, the normal tenant waits this long before it measures. */
const SETTLE_MS = 300;

/** The loaded run stops here even if creates are left: a stalled plane is a result, not a hang. */
const LOADED_DEADLINE_MS = 120_000;

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))]!;
};

/**
 * The normal tenant's pace, creates a second (ABUSE_NORMAL_RATE; 0: one after another, as fast as they
 * are answered). A normal tenant is not a flood: back to back it would use most of the plane itself,
 * and any second tenant would then take its turns away, however fairly they were shared.
 */
const NORMAL_RATE = Number(process.env.ABUSE_NORMAL_RATE ?? 25);

/**
 * `n` creates one after another at NORMAL_RATE (a create due while the last is unanswered is sent when
 * it is answered), or as many as finish within `deadlineMs`; their latencies in ms.
 */
async function normalCreates(url: string, n: number, deadlineMs = Infinity): Promise<number[]> {
  const end = performance.now() + deadlineMs;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  const start = performance.now();
  for (let i = 0; i < n && performance.now() < end; i++) {
    const due = NORMAL_RATE > 0 ? start + (i * 1000) / NORMAL_RATE : 0;
    if (due > performance.now()) await new Promise((r) => setTimeout(r, due - performance.now()));
    const body = JSON.stringify({ target: 'fake', input: { order: i, note: 'normal tenant' } });
    const t0 = performance.now();
    const res = await post(agent, url, '/v1/tasks', NORMAL_KEY, body);
    latencies.push(performance.now() - t0);
    // 202: the create is durable and its start runs behind the answer; 201: the remote answered first.
    if (res.status !== 201 && res.status !== 202)
      throw new Error(`normal create answered ${res.status}: ${res.body}`);
  }
  agent.destroy();
  return latencies;
}

/**
 * Nested anyOf with backtracking patterns and many properties: costly to compile, within the body,
 * schema size (16 KiB) and schema depth (32) limits, so the plane compiles it.
 */
function pathologicalSchema(i: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string', pattern: '^(a+)+$' };
  for (let d = 0; d < 7; d++)
    schema = {
      anyOf: [
        { type: 'string', pattern: `^(a|aa)+${d}$` },
        { type: 'object', properties: { [`p${d}`]: schema } },
      ],
    };
  const properties: Record<string, unknown> = {};
  for (let p = 0; p < 200; p++) properties[`f${i}_${p}`] = { type: 'string', pattern: `^(x+x+)+y${p}$` };
  return { type: 'object', properties, additionalProperties: schema };
}

/** The abusive tenant, in its own process: streams, then abusive requests until killed. */
async function abuser(url: string, streams: number): Promise<void> {
  // The plane may close a connection while this client is still writing a refused body: expected here.
  process.on('uncaughtException', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') throw err;
  });
  const counts = new Map<string, number>();
  const count = (what: string, status: number) => {
    const k = `${what} ${status}`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  };
  const sseAgent = new Agent({ keepAlive: false, maxSockets: Infinity });
  let open = 0;
  let refused = 0;
  await Promise.all(
    Array.from(
      { length: streams },
      () =>
        new Promise<void>((resolve, reject) => {
          const req = request(`${url}/v1/events?from=now`, {
            agent: sseAgent,
            headers: { authorization: `Bearer ${ABUSER_KEY}` },
          });
          req.on('response', (res) => {
            // Past the tenant's stream limit the plane answers 429 (server/tenant-limits.ts).
            if (res.statusCode === 200) open++;
            else refused++;
            res.resume();
            resolve();
          });
          req.on('error', reject);
          req.end();
        }),
    ),
  );
  process.stdout.write(`ready ${open} ${refused}\n`);
  setInterval(() => process.stdout.write(`counts ${JSON.stringify([...counts])}\n`), 500).unref();

  const huge = Buffer.from(JSON.stringify({ target: 'fake', input: 'x'.repeat(4 * 1024 * 1024) }));
  const deep = `{"target":"fake","input":${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  const kinds: Array<[string, (i: number) => Promise<Reply>]> = [
    ['huge body', () => post(agent, url, '/v1/tasks', ABUSER_KEY, huge)],
    ['endless chunked body', () => endlessPost(agent, url, ABUSER_KEY, 64 * 1024 * 1024)],
    ['deep JSON', () => post(agent, url, '/v1/tasks', ABUSER_KEY, deep)],
    [
      'pathological schema',
      (i) =>
        post(
          agent,
          url,
          '/v1/tasks',
          ABUSER_KEY,
          JSON.stringify({ target: 'fake', input: { i }, acceptance: { schema: pathologicalSchema(i) } }),
        ),
    ],
    ['huge webhook', () => post(agent, url, '/v1/webhooks/a2a/fake?envelope=x', 'none', huge)],
    [
      'own create',
      (i) => post(agent, url, '/v1/tasks', ABUSER_KEY, JSON.stringify({ target: 'fake', input: { i } })),
    ],
  ];
  const only = process.env.ABUSE_KINDS?.split(',');
  const active = only ? kinds.filter(([what]) => only.some((o) => what.startsWith(o))) : kinds;
  let i = 0;
  const loop = async () => {
    if (active.length === 0) return;
    for (;;) {
      const n = i++;
      const [what, send] = active[n % active.length]!;
      const res = await send(n).catch(() => ({ status: 0, body: '' }));
      count(what, res.status);
    }
  };
  await Promise.all(Array.from({ length: 4 }, loop));
}

/** Reads `name value…` lines from a child's stdout. */
function lines(child: ChildProcess, onLine: (line: string) => void): void {
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      onLine(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
  });
}

/**
 * The plane, in its own process: neither client's work runs on its event loop or is counted in its CPU.
 * It prints `url <url>`, and `cpu <µs>` (its process CPU, all threads) for each line `cpu` on stdin.
 */
async function planeProcess(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'taskplane-abuse-'));
  const remote = new FakeRemote(new SystemClock());
  const limits: Record<string, number> = {};
  // ABUSE_LIMITS='{"maxStreamsPerTenant":1000}' sets per-tenant limits (tenant-limits.ts) for a run.
  if (process.env.ABUSE_MAX_STREAMS) limits.maxStreamsPerTenant = Number(process.env.ABUSE_MAX_STREAMS);
  Object.assign(limits, JSON.parse(process.env.ABUSE_LIMITS ?? '{}') as Record<string, number>);
  const server = await startServer({
    port: 0,
    // ABUSE_DB=memory: takes the disk out, to tell the store's share of a slowdown from the event loop's.
    db: process.env.ABUSE_DB ?? `sqlite:${join(dir, 'plane.db')}`,
    connectors: { fake: remote.connector('fake') },
    apiKeys: `normal:${NORMAL_KEY},abuser:${ABUSER_KEY}`,
    dashboard: false,
    lab: false,
    defaultMetrics: false,
    logger: pino({ level: 'silent' }),
    limits,
  });
  const stop = async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  // Inside the plane, per phase: how long the normal tenant's requests took from their headers to the
  // end of the answer, and how late the event loop ran; the rest of what the client sees is the machine.
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  loopDelay.enable();
  let inside: number[] = [];
  const began = new WeakMap<object, number>();
  diagnostics.subscribe('http.server.request.start', (m) => {
    const { request, response } = m as { request: IncomingMessage; response: object };
    if (request.headers.authorization === `Bearer ${NORMAL_KEY}`) began.set(response, performance.now());
  });
  diagnostics.subscribe('http.server.response.finish', (m) => {
    const t0 = began.get((m as { response: object }).response);
    if (t0 !== undefined) inside.push(performance.now() - t0);
  });
  process.stdin.on('data', (d: Buffer) => {
    for (const cmd of d.toString().split('\n')) {
      if (cmd === 'cpu') {
        const { user, system } = process.cpuUsage();
        const stats = { inside, loopP99: loopDelay.percentile(99) / 1e6 };
        inside = [];
        loopDelay.reset();
        process.stdout.write(`cpu ${user + system} ${JSON.stringify(stats)}\n`);
      }
    }
  });
  process.stdin.on('end', () => void stop());
  process.stdout.write(`url ${server.url}\n`);
}

async function main(): Promise<void> {
  const creates = Number(process.argv[2] ?? 400);
  const streams = Number(process.argv[3] ?? 1000);
  const self = fileURLToPath(import.meta.url);
  // ABUSE_PLANE_NODE_ARGS='--cpu-prof' profiles the plane.
  const nodeArgs = process.env.ABUSE_PLANE_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const plane = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', self, '--plane'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  interface PlaneSample {
    cpu: number;
    /** The normal tenant's requests since the last sample, inside the plane (ms). */
    inside: number[];
    /** The plane's event loop delay p99 since the last sample (ms). */
    loopP99: number;
  }
  const cpuWaiters: Array<(s: PlaneSample) => void> = [];
  const urlReady = new Promise<string>((resolve, reject) => {
    plane.once('exit', (code) => reject(new Error(`the plane exited (${code})`)));
    lines(plane, (line) => {
      if (line.startsWith('url ')) resolve(line.slice(4));
      if (line.startsWith('cpu ')) {
        const [cpu, stats] = [line.slice(4, line.indexOf(' ', 4)), line.slice(line.indexOf(' ', 4) + 1)];
        cpuWaiters.shift()?.({ cpu: Number(cpu), ...(JSON.parse(stats) as Omit<PlaneSample, 'cpu'>) });
      }
    });
  });
  const planeCpu = () =>
    new Promise<PlaneSample>((resolve) => {
      cpuWaiters.push(resolve);
      plane.stdin!.write('cpu\n');
    });
  let child: ChildProcess | undefined;
  try {
    const url = await urlReady;
    await normalCreates(url, 50); // warm-up
    /** One phase's figures: the normal tenant's latencies at the client and inside the plane. */
    interface Phase {
      client: number[];
      inside: number[];
      loopP99: number;
      cpuUs: number;
      seconds: number;
    }
    const phase = (): Phase => ({ client: [], inside: [], loopP99: 0, cpuUs: 0, seconds: 0 });
    const measure = async (into: Phase, n: number, deadlineMs?: number) => {
      const before = await planeCpu();
      const t0 = performance.now();
      into.client.push(...(await normalCreates(url, n, deadlineMs)));
      into.seconds += (performance.now() - t0) / 1000;
      const after = await planeCpu();
      into.cpuUs += after.cpu - before.cpu;
      into.inside.push(...after.inside);
      into.loopP99 = Math.max(into.loopP99, after.loopP99);
    };
    const unloaded = phase();
    await measure(unloaded, creates);

    child = spawn(process.execPath, ['--import', 'tsx', self, '--abuser', url, String(streams)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let lastCounts = '[]';
    const ready = new Promise<[number, number]>((resolve, reject) => {
      child!.once('exit', (code) => reject(new Error(`abusive tenant exited (${code})`)));
      lines(child!, (line) => {
        if (line.startsWith('ready ')) {
          const [open, refused] = line.slice(6).split(' ').map(Number);
          resolve([open!, refused!]);
        }
        if (line.startsWith('counts ')) lastCounts = line.slice(7);
      });
    });
    const [open, refusedStreams] = await ready;
    // Loaded and paused alternate in ROUNDS rounds (the abusive tenant stopped with SIGSTOP, its streams
    // and connections left open): on a shared machine whose speed drifts from second to second, the
    // ratio of the two, taken side by side, is the figure; the unloaded rows are the plane alone.
    const perRound = Math.ceil(creates / ROUNDS);
    const loaded = phase();
    const paused = phase();
    const started = performance.now();
    for (let r = 0; r < ROUNDS && performance.now() - started < LOADED_DEADLINE_MS; r++) {
      child.kill('SIGCONT');
      await new Promise((res) => setTimeout(res, SETTLE_MS));
      await measure(loaded, perRound, LOADED_DEADLINE_MS - (performance.now() - started));
      child.kill('SIGSTOP');
      await new Promise((res) => setTimeout(res, SETTLE_MS));
      await measure(paused, perRound);
    }
    child.removeAllListeners('exit');
    child.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 1000));
    // Again alone: on a shared machine the difference between the two unloaded rows is the drift.
    const after = phase();
    await measure(after, creates);

    const ms = (x: number) => x.toFixed(1).padStart(7);
    const row = (label: string, p: Phase) =>
      `${`${label} (${p.client.length})`.padEnd(50)} p50 ${ms(percentile(p.client, 0.5))} p99 ${ms(percentile(p.client, 0.99))}` +
      ` | inside p50 ${ms(percentile(p.inside, 0.5))} p99 ${ms(percentile(p.inside, 0.99))}` +
      ` | loop delay p99 ${ms(p.loopP99)} | CPU ${((p.cpuUs / 1e4 / p.seconds) | 0).toString().padStart(3)} %`;
    const pace = NORMAL_RATE > 0 ? `${NORMAL_RATE} a second` : 'one after another';
    console.log(
      `normal tenant: ${creates} creates, ${pace}; SQLite, loopback HTTP, plane in its own process`,
    );
    console.log(
      "create latency in ms at the client | inside the plane | the plane's event loop delay | plane CPU (all threads, % of a core)",
    );
    console.log(row('unloaded', unloaded));
    console.log(row(`loaded (abusive tenant, ${open} SSE streams open)`, loaded));
    console.log(row('abusive tenant paused, between loaded rounds', paused));
    console.log(row('unloaded again, after', after));
    if (refusedStreams > 0)
      console.log(`abusive tenant: ${refusedStreams} streams refused (its stream limit)`);
    if (loaded.client.length < perRound * ROUNDS)
      console.log(
        `STALLED: ${loaded.client.length} of ${perRound * ROUNDS} loaded creates finished in ${LOADED_DEADLINE_MS / 1000} s`,
      );
    const p99 = (p: Phase) => percentile(p.client, 0.99);
    const ratio = p99(loaded) / p99(unloaded);
    console.log(`p99 loaded / unloaded: ${ratio.toFixed(2)}×  ${ratio <= 2 ? 'ok' : 'OVER'} (goal ≤ 2×)`);
    const side = p99(loaded) / p99(paused);
    console.log(`p99 loaded / paused, side by side: ${side.toFixed(2)}×  ${side <= 2 ? 'ok' : 'OVER'}`);
    console.log('abusive tenant, answers during the loaded run (kind status: count):');
    for (const [k, n] of JSON.parse(lastCounts) as Array<[string, number]>)
      console.log(`  ${k.padEnd(30)} ${n}`);
  } finally {
    child?.kill('SIGKILL');
    plane.stdin!.end();
    await new Promise((r) => plane.once('exit', r));
  }
}

if (process.argv[2] === '--abuser') await abuser(process.argv[3]!, Number(process.argv[4] ?? 1000));
else if (process.argv[2] === '--plane') await planeProcess();
else await main();
