/**
 * `npm run bench:abuse`: one abusive tenant next to one normal tenant on the control plane (SQLite, real
 * sockets). The normal tenant creates tasks one after another and the create latency is measured twice:
 * alone, then while the abusive tenant (in its own process, so its client work does not run on the
 * plane's event loop) holds 1,000 SSE streams open, posts bodies past the limit (declared and chunked),
 * deeply nested JSON, pathological acceptance schemas, and a stream of its own creates that wake its
 * streams. Prints the normal tenant's create p50/p99 unloaded and loaded and their ratio (goal: p99
 * within 2×), and what the abusive tenant got back. A benchmark, not a test: figures move with the load
 * on the machine.
 *
 *   npm run bench:abuse -- [creates=400] [streams=1000]
 *
 * ABUSE_KINDS=huge,endless,… runs only the abusive requests whose names start so (`none`: streams
 * only); ABUSE_MAX_STREAMS=N sets the plane's per-tenant stream limit (default 500, so 500 of the
 * 1,000 streams are refused).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
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

/** The loaded run stops here even if creates are left: a stalled plane is a result, not a hang. */
const LOADED_DEADLINE_MS = 120_000;

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))]!;
};

/** `n` creates one after another, or as many as finish within `deadlineMs`; their latencies in ms. */
async function normalCreates(url: string, n: number, deadlineMs = Infinity): Promise<number[]> {
  const end = performance.now() + deadlineMs;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const latencies: number[] = [];
  for (let i = 0; i < n && performance.now() < end; i++) {
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

async function main(): Promise<void> {
  const creates = Number(process.argv[2] ?? 400);
  const streams = Number(process.argv[3] ?? 1000);
  const dir = mkdtempSync(join(tmpdir(), 'taskplane-abuse-'));
  const remote = new FakeRemote(new SystemClock());
  const server = await startServer({
    port: 0,
    db: `sqlite:${join(dir, 'plane.db')}`,
    connectors: { fake: remote.connector('fake') },
    apiKeys: `normal:${NORMAL_KEY},abuser:${ABUSER_KEY}`,
    dashboard: false,
    lab: false,
    defaultMetrics: false,
    logger: pino({ level: 'silent' }),
    // ABUSE_MAX_STREAMS lifts the per-tenant stream limit, to measure the streams themselves.
    ...(process.env.ABUSE_MAX_STREAMS
      ? { limits: { maxStreamsPerTenant: Number(process.env.ABUSE_MAX_STREAMS) } }
      : {}),
  });
  try {
    await normalCreates(server.url, 50); // warm-up
    const unloaded = await normalCreates(server.url, creates);

    const child = spawn(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(import.meta.url), '--abuser', server.url, String(streams)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let lastCounts = '[]';
    let lineBuf = '';
    const ready = new Promise<[number, number]>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`abusive tenant exited (${code})`)));
      child.stdout.on('data', (d: Buffer) => {
        lineBuf += d.toString();
        for (let nl = lineBuf.indexOf('\n'); nl >= 0; nl = lineBuf.indexOf('\n')) {
          const line = lineBuf.slice(0, nl);
          lineBuf = lineBuf.slice(nl + 1);
          if (line.startsWith('ready ')) {
            const [open, refused] = line.slice(6).split(' ').map(Number);
            resolve([open!, refused!]);
          }
          if (line.startsWith('counts ')) lastCounts = line.slice(7);
        }
      });
    });
    const [open, refusedStreams] = await ready;
    const loaded = await normalCreates(server.url, creates, LOADED_DEADLINE_MS);
    child.kill('SIGKILL');

    const row = (label: string, xs: number[]) =>
      `${`${label} (${xs.length})`.padEnd(52)} p50 ${percentile(xs, 0.5).toFixed(1).padStart(7)} ms   p99 ${percentile(xs, 0.99).toFixed(1).padStart(7)} ms`;
    console.log(`normal tenant: ${creates} creates one after another, SQLite, loopback HTTP`);
    console.log(row('unloaded', unloaded));
    console.log(row(`loaded (abusive tenant, ${open} SSE streams open)`, loaded));
    if (refusedStreams > 0)
      console.log(`abusive tenant: ${refusedStreams} streams refused (its stream limit)`);
    if (loaded.length < creates)
      console.log(
        `STALLED: ${loaded.length} of ${creates} loaded creates finished in ${LOADED_DEADLINE_MS / 1000} s`,
      );
    const ratio = percentile(loaded, 0.99) / percentile(unloaded, 0.99);
    console.log(`p99 loaded / unloaded: ${ratio.toFixed(2)}×  ${ratio <= 2 ? 'ok' : 'OVER'} (goal ≤ 2×)`);
    console.log('abusive tenant, answers during the loaded run (kind status: count):');
    for (const [k, n] of JSON.parse(lastCounts) as Array<[string, number]>)
      console.log(`  ${k.padEnd(30)} ${n}`);
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--abuser') await abuser(process.argv[3]!, Number(process.argv[4] ?? 1000));
else await main();
