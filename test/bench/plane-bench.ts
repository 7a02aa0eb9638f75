/**
 * `npm run bench:plane`: the control plane (in this process) against the real durable host (its own
 * process, `taskplane host --db memory:`), over loopback HTTP. For each delivery configuration it runs
 * a batch of demo tasks to completion and prints requests per task and the delay from the host's status change (its status timestamp) to the
 * envelope's update (p50, p99), which is the engine's per-mechanism observation-delay signal.
 * Reconciliation is on (default 10-min interval) and one round is run while the tasks are in flight.
 *
 * Beside them, the anchor (`sdk`): the official @a2a-js/sdk client following the same tasks on the same
 * host with nothing stored, so the plane's delay reads against what Node, HTTP and the machine leave; with
 * BENCH_ROUNDS, a last line gives the stream setup's p95/p99 as a ratio of the anchor's.
 *
 * Then the create latency (create-latency.ts): POST /v1/tasks over HTTP on an SQLite plane against an
 * agent on the official SDK server, in its own process, that takes 2 s to answer SendMessage. Create
 * answers once the envelope is durable, so its p50/p99 should not depend on the agent (goal: p99 < 10 ms).
 *
 *   npm run bench:plane -- [tasks=40] [creates=200]        (creates=0 skips the create latency;
 *                                                          BENCH_SETUPS=stream,push,payload,sdk picks setups;
 *                                                          BENCH_YOUNG=default,2 compares V8 young
 *                                                          generation sizes (young-generation.ts);
 *                                                          BENCH_ROUNDS=k runs each k times in one process
 *                                                          and pools the live samples of rounds 2..k
 *                                                          (p50/p95/p99, share over 10 ms);
 *                                                          BENCH_RATE=n sends n creates a second on a fixed
 *                                                          schedule, so builds compared get the same load;
 *                                                          BENCH_TASK_MS=ms sets each task's run time (1500):
 *                                                          about rate × time tasks are open at once;
 *                                                          BENCH_PLANE_DB=sqlite:/tmp/p.db puts the plane on
 *                                                          SQLite; BENCH_DEBUG=1 prints the slowest samples,
 *                                                          the plane's event-loop delay, what the slow
 *                                                          samples waited through (either process's
 *                                                          collector or held loop: stall-probe.ts) and how
 *                                                          long each main thread waited for a CPU; BENCH_ALLOC=1
 *                                                          counts what the plane allocates per task (V8's
 *                                                          sampling heap profiler, collected objects
 *                                                          included; =survivors: only what outlived a
 *                                                          scavenge; BENCH_ALLOC_TOP=n also prints the n
 *                                                          largest allocation sites); BENCH_FROM=dist runs the plane
 *                                                          from dist/; BENCH_HEAP=file
 *                                                          writes a heap snapshot at the end of a setup)
 */
import { readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { formatCreateLatency, measureCreateLatency, startSlowAgent } from './create-latency.ts';
import { spawnHost } from '../support/process.ts';
import { sdkClient } from '../host/helpers.ts';
import { SendMessageRequest, TaskState } from '@a2a-js/sdk';
import type { RunningServer } from '../../src/server/start-server.ts';
import type { PlaneOptions } from '../../src/plane/options.ts';
import type { Envelope, EnvelopeEvent } from '../../src/core/envelope.ts';
import { isTerminal } from '../../src/core/states.ts';
import { over, percentile, spread } from './stats.ts';
import { YOUNG_RESULT_PREFIX, YOUNG_ROUND_2 } from './young-generation.ts';
import { parseStallLines, startStallProbe, type StallSpan } from './stall-probe.ts';

const STALL_PROBE = fileURLToPath(new URL('./stall-probe.ts', import.meta.url));

// BENCH_FROM=dist runs the plane as it ships (dist/, compiled by tsc: `npm run build` first) rather than
// from the TypeScript sources through tsx, whose transform adds a helper call per named closure.
const { startServer } = (
  process.env.BENCH_FROM === 'dist'
    ? await import('../../dist/server/start-server.js' as string)
    : await import('../../src/server/start-server.ts')
) as typeof import('../../src/server/start-server.ts');

const TASKS = Number(process.argv[2] ?? 40);
/** BENCH_RATE: creates per second, sent on a fixed schedule (0: one after another, each awaited). */
const RATE = Number(process.env.BENCH_RATE ?? 0);
const CREATES = Number(process.argv[3] ?? 200);
const silent = pino({ level: 'silent' });
/**
 * BENCH_TASK_MS: how long each demo task runs (its 5 steps spread over it). With BENCH_RATE, about
 * rate × duration tasks are open at once: 150 a second for 7,000 ms holds ~1,000 streams open together.
 */
const INPUT = { durationMs: Number(process.env.BENCH_TASK_MS ?? 1500), steps: 5, artifactChunks: 1 };

interface Row {
  setup: string;
  tasks: number;
  succeeded: number;
  requestsPerTask: number;
  mechanism: string;
  p50: number | null;
  p99: number | null;
  samples: number;
  /** Every live delay, sorted (pooled across rounds for BENCH_ROUNDS). */
  live: number[];
  /** The same transitions' delay until their change notice (visible to readers), sorted. */
  visible: number[];
  reconcilePages: number;
  /** The plane's collector pauses while the tasks ran, ms: minor (scavenges) and major. */
  gc: { minor: number[]; major: number[] };
  /** CPU time (user + system) per task over the whole run, ms; null where it cannot be read. */
  planeCpuPerTask: number;
  hostCpuPerTask: number | null;
}

/** A child's CPU time so far (user + system, ms) from /proc; null off Linux. */
function childCpuMs(pid: number | undefined): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 a second on Linux).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return null;
  }
}

/**
 * BENCH_ALLOC: bytes this process allocates while `fn` runs, from V8's sampling heap profiler with the
 * objects later collected kept in the profile (each sample stands for ~4 KiB; the sum is an estimate
 * whose error is far below the differences it is used to show). What the young generation must absorb,
 * and so how often it is scavenged, follows from it.
 */
interface AllocationNode {
  selfSize: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children: AllocationNode[];
}

async function allocated<T>(fn: () => Promise<T>): Promise<{ result: T; bytes: number | null }> {
  if (!process.env.BENCH_ALLOC) return { result: await fn(), bytes: null };
  const session = new Session();
  session.connect();
  try {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      // BENCH_ALLOC=survivors: only what outlived a scavenge, which is what a scavenge spends its pause copying.
      includeObjectsCollectedByMinorGC: process.env.BENCH_ALLOC !== 'survivors',
    });
    const result = await fn();
    const { profile } = await session.post('HeapProfiler.stopSampling');
    let bytes = 0;
    const bySite = new Map<string, number>();
    const visit = (node: AllocationNode): void => {
      bytes += node.selfSize;
      if (node.selfSize > 0) {
        const f = node.callFrame;
        const site = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(src|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;
        bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
      }
      node.children.forEach(visit);
    };
    visit(profile.head as never);
    if (process.env.BENCH_ALLOC_TOP) {
      const top = [...bySite].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.BENCH_ALLOC_TOP));
      for (const [site, n] of top)
        console.log(`  ${(n / TASKS / 1024).toFixed(1).padStart(6)} KiB/task  ${site}`);
    }
    return { result, bytes };
  } finally {
    session.disconnect();
  }
}

/**
 * The store's events after `afterSeq`, page by page until an empty one (a store returns at most its own
 * page size, whatever is asked for).
 */
async function* eventPages(server: RunningServer, afterSeq: number): AsyncGenerator<EnvelopeEvent[]> {
  for (let after = afterSeq; ;) {
    const page = await server.store.listEvents({ afterSeq: after, limit: 5_000 });
    if (page.length === 0) return;
    yield page;
    after = page.at(-1)!.seq;
  }
}

/**
 * Each process's main thread: ms on a CPU and ms runnable but waiting for one (Linux's schedstat), or
 * null where /proc has no such file.
 */
function mainThreadTimes(pids: number[]): Array<[onCpu: number, waiting: number]> | null {
  try {
    return pids.map((pid) => {
      const [onCpu, waiting] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8')
        .split(' ')
        .map(Number);
      return [onCpu! / 1e6, waiting! / 1e6];
    });
  } catch {
    return null;
  }
}

/** BENCH_DEBUG: how long the plane's and the host's main threads waited for a CPU while the tasks ran. */
function runQueueWait(
  pids: [plane: number, host: number],
  before: ReturnType<typeof mainThreadTimes>,
): string | null {
  const after = before && mainThreadTimes(pids);
  if (!before || !after) return null;
  const part = (name: string, i: number) =>
    `${name} ${(after[i]![0] - before[i]![0]).toFixed(0)} ms on a CPU, ${(after[i]![1] - before[i]![1]).toFixed(0)} ms runnable and waiting for one`;
  return `main threads while the tasks ran: ${part('plane', 0)}; ${part('host', 1)}`;
}

/**
 * BENCH_DEBUG: of the samples over 10 ms (each a wait from the host's status stamp to the plane's decision,
 * epoch ms), how many waited through a collector pause of the plane's or the host's, or a hold of either's
 * event loop with no pause in it (other work, or the process not scheduled). A sample can count under several.
 */
function stallReport(
  late: Array<[delay: number, stamp: number]>,
  plane: StallSpan[],
  host: StallSpan[],
): string {
  const overlaps = (a: [number, number], b: [number, number]) => a[0] < b[1] && b[0] < a[1];
  const busy = (spans: StallSpan[]) =>
    spans.filter(
      ([kind, start, end]) =>
        kind === 'loop' && !spans.some(([k, s, e]) => k !== 'loop' && overlaps([s, e], [start, end])),
    );
  const classes: Array<[string, StallSpan[]]> = [
    ['plane scavenge', plane.filter(([k]) => k === 'minor')],
    ['plane major GC', plane.filter(([k]) => k === 'major')],
    ['plane loop held, no GC', busy(plane)],
    ['host GC', host.filter(([k]) => k !== 'loop')],
    ['host loop held, no GC', busy(host)],
  ];
  const hit = (spans: StallSpan[], [delay, stamp]: [number, number]) =>
    spans.some(([, s, e]) => overlaps([s, e], [stamp, stamp + delay]));
  const counts = classes.map(([name, spans]) => `${name} ${late.filter((w) => hit(spans, w)).length}`);
  const none = late.filter((w) => !classes.some(([, spans]) => hit(spans, w))).length;
  return `samples over 10 ms: ${late.length}; in their wait: ${counts.join(', ')}; none of these: ${none} (host probe: ${host.length} spans)`;
}

/** When the first write notice at or after `seq` arrived (notices sorted by seq), or undefined. */
function noticeAt(notices: Array<[number, number]>, seq: number): number | undefined {
  let lo = 0;
  let hi = notices.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (notices[mid]![0] < seq) lo = mid + 1;
    else hi = mid;
  }
  return notices[lo]?.[1];
}

/** Waits until every id reached a terminal state, reading only new events on each store change (cheap). */
async function allTerminal(server: RunningServer, ids: string[], afterSeq: number): Promise<Envelope[]> {
  const left = new Set(ids);
  let after = afterSeq;
  for (;;) {
    const changed = new Promise<void>((resolve) => {
      const off = server.store.onChange(() => {
        off();
        resolve();
      });
    });
    // Every page there is now, then wait for the next change.
    for await (const page of eventPages(server, after))
      for (const e of page) {
        after = e.seq;
        if (e.type === 'state_changed' && isTerminal(e.data.to as Envelope['state']))
          left.delete(e.envelopeId);
      }
    if (left.size === 0) return Promise.all(ids.map((id) => server.plane.get('default', id)));
    await changed;
  }
}

/**
 * Starts TASKS jobs with `create`: one after another, each awaited (creates back to back), or with
 * BENCH_RATE at that pace whatever their answers take, so the load offered (tasks in flight) is the same
 * for every build compared: one after another, a faster start means more tasks running at once, and a
 * worse tail for a better plane.
 */
async function startAll<T>(create: () => Promise<T>): Promise<T[]> {
  if (RATE <= 0) {
    const created: T[] = [];
    for (let i = 0; i < TASKS; i++) created.push(await create());
    return created;
  }
  const t0 = performance.now();
  const pending: Promise<T>[] = [];
  for (let i = 0; i < TASKS; i++) {
    const wait = t0 + (i * 1000) / RATE - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(create());
  }
  return Promise.all(pending);
}

/**
 * The host the tasks run on, as its own process, as it would be in production, so its work (and its
 * garbage collection) does not sit on the plane's event loop and inflate the plane's figures.
 */
function benchHost(): ReturnType<typeof spawnHost> {
  return spawnHost(['--port', '0', '--db', 'memory:', '--allow-private-webhooks'], {
    env: {
      LOG_LEVEL: 'warn',
      // BENCH_DEBUG: the host reports its own pauses and loop holds (stall-probe.ts) on stderr.
      ...(process.env.BENCH_DEBUG
        ? { BENCH_STALL_PROBE: 'stderr', NODE_OPTIONS: `--import tsx --import ${STALL_PROBE}` }
        : {}),
    },
  });
}

/** The part of an SDK stream frame the anchor reads. */
interface AnchorFrame {
  payload?: { $case: string; value: { status?: { state: number; timestamp?: string } } };
}

/**
 * The anchor: the official @a2a-js/sdk client in this process doing what the plane does for the stream
 * setup, with nothing behind it: the same tasks on the same host, started the same way (each
 * SendStreamingMessage awaited until its first frame, the Task), every stream then read to its end.
 * Its delay per state change is the frame's arrival minus the status timestamp, the same clocks as the
 * plane's; as the plane's "live", each task's first state change is left out.
 * No store, no record, no reconciliation: what it measures is what Node, HTTP and this machine leave of
 * the 10 ms before any durable work, so the plane's figures read against it.
 */
async function runSdkAnchor(setup: string): Promise<Row> {
  const { proc: host, url: hostUrl } = await benchHost();
  const client = await sdkClient(hostUrl, 'JSONRPC');
  const stalls: StallSpan[] = [];
  const stopProbe = startStallProbe((span) => stalls.push(span), { loop: false });
  const live: number[] = [];
  let completed = 0;
  const cpu0 = process.cpuUsage();
  const hostCpu0 = childCpuMs(host.child.pid);
  try {
    let n = 0;
    // Answers once the Task is in, with the rest of the stream still being read (`read`): an async function
    // answering the reading promise itself would wait for it, and start the tasks one whole task at a time.
    const follow = async (): Promise<{ read: Promise<void> }> => {
      const stream = client.sendMessageStream(
        SendMessageRequest.fromJSON({
          message: { messageId: `anchor-${process.pid}-${n++}`, role: 'ROLE_USER', parts: [{ data: INPUT }] },
        }),
      );
      // As the plane's record, which starts `accepted` (SUBMITTED) and counts its changes from there.
      let last: number = TaskState.TASK_STATE_SUBMITTED;
      let changes = 0;
      const frame = (r: IteratorResult<unknown>): boolean => {
        if (r.done) return false;
        const payload = (r.value as AnchorFrame).payload;
        const status =
          payload?.$case === 'task' || payload?.$case === 'statusUpdate' ? payload.value.status : undefined;
        if (status && status.state !== last) {
          if (++changes > 1 && status.timestamp) live.push(Date.now() - Date.parse(status.timestamp));
          last = status.state;
          if (status.state === TaskState.TASK_STATE_COMPLETED) completed++;
        }
        return true;
      };
      frame(await stream.next());
      const read = (async () => {
        while (frame(await stream.next()));
      })();
      return { read };
    };
    const reading = await startAll(follow);
    await Promise.all(reading.map((r) => r.read));
    const cpu = process.cpuUsage(cpu0);
    const hostCpu = childCpuMs(host.child.pid);
    live.sort((a, b) => a - b);
    const gc = { minor: [] as number[], major: [] as number[] };
    for (const [kind, start, end] of stalls) if (kind !== 'loop') gc[kind].push(end - start);
    return {
      setup,
      tasks: TASKS,
      succeeded: completed,
      requestsPerTask: 1,
      mechanism: 'stream',
      p50: percentile(live, 50) ?? null,
      p99: percentile(live, 99) ?? null,
      samples: live.length,
      live,
      visible: live,
      reconcilePages: 0,
      gc,
      planeCpuPerTask: (cpu.user + cpu.system) / 1000 / TASKS,
      hostCpuPerTask: hostCpu !== null && hostCpu0 !== null ? (hostCpu - hostCpu0) / TASKS : null,
    };
  } finally {
    stopProbe();
    await host.stop();
  }
}

async function run(
  setup: string,
  mechanism: 'stream' | 'push',
  plane: PlaneOptions,
  publicUrl: 'self' | null,
): Promise<Row> {
  const { proc: host, url: hostUrl } = await benchHost();
  const server = await startServer({
    port: 0,
    db: process.env.BENCH_PLANE_DB ?? 'memory:',
    apiKeys: 'default:bench-key-0123456789',
    targets: { demo: { baseUrl: hostUrl, idempotentStart: true } },
    publicUrl,
    plane,
    dashboard: false,
    defaultMetrics: false,
    logger: silent,
  });
  // The last event seq before this run (a database file given by BENCH_PLANE_DB keeps earlier rounds'):
  // the run reads only the events after it, so earlier rounds never weigh on its figures.
  let seq0 = 0;
  for await (const page of eventPages(server, 0)) seq0 = page.at(-1)!.seq;
  // Collector pauses on the plane's thread while the tasks ran, minor (scavenge) and major, and with
  // BENCH_DEBUG each hold of its event loop: BENCH_DEBUG tells which of them the slow samples waited through.
  const planeStalls: StallSpan[] = [];
  const stopProbe = startStallProbe((span) => planeStalls.push(span), {
    loop: Boolean(process.env.BENCH_DEBUG),
  });
  const hostStderrFrom = host.stderr.length;
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  // When each event became visible to the plane's readers (its change notice: on the durable stores, after
  // its commit), by seq: what a client following the job sees, where the event's own time (`at`) is when
  // the plane decided it.
  // One notice per write, carrying the write's last seq: an event is visible with the first notice at or
  // after its seq.
  const notices: Array<[seq: number, at: number]> = [];
  const stopVisible = server.store.onChange((n) => {
    if (n.kind === 'envelope') notices.push([n.seq, performance.timeOrigin + performance.now()]);
  });
  const planeCpu0 = process.cpuUsage();
  const pids: [number, number] = [process.pid, host.child.pid!];
  const sched0 = process.env.BENCH_DEBUG ? mainThreadTimes(pids) : null;
  const hostCpu0 = childCpuMs(host.child.pid);
  try {
    // Tasks start as startAll paces them (each create returns once the remote has the job), then run together.
    const create = () =>
      server.plane.create({ tenant: 'default', target: 'demo', input: INPUT }, { wait: 'started' });
    const { result: ran, bytes: allocatedBytes } = await allocated(async () => {
      const created = await startAll(create);
      // One reconciliation round while they run: one paged list call for the target, whatever the task count.
      const r0 = performance.now();
      const reports = await server.plane.reconcileNow('demo');
      if (process.env.BENCH_DEBUG)
        console.log(
          `reconcile round: ${r0.toFixed(0)}–${performance.now().toFixed(0)} ms since process start`,
        );
      const envs = await allTerminal(
        server,
        created.map((c) => c.envelope.id),
        seq0,
      );
      return { reports, envs };
    });
    const { reports, envs } = ran;
    if (allocatedBytes !== null)
      console.log(
        `plane allocated${process.env.BENCH_ALLOC === 'survivors' ? ' (outlived a scavenge)' : ''}: ${(allocatedBytes / TASKS / 1024).toFixed(0)} KiB per task`,
      );
    // Delay per transition from the event log: the envelope's update time minus the host's status
    // timestamp. "live" leaves out each task's first transition, which the host makes while the
    // start request itself is still in flight (it measures start-up, not change propagation).
    // This run's jobs only: a plane database given by BENCH_PLANE_DB is the same file in every round.
    const mine = new Set(envs.map((e) => e.id));
    const events = [];
    for await (const page of eventPages(server, seq0))
      events.push(...page.filter((e) => mine.has(e.envelopeId)));
    notices.sort((a, b) => a[0] - b[0]);
    const seen = new Set<string>();
    const live: number[] = [];
    const visible: number[] = [];
    const slow: [number, number][] = [];
    for (const e of events) {
      if (
        e.type !== 'state_changed' ||
        e.data.source !== mechanism ||
        typeof e.data.remoteVersion !== 'number'
      )
        continue;
      if (!seen.has(e.envelopeId)) {
        seen.add(e.envelopeId);
        continue;
      }
      live.push(e.at - e.data.remoteVersion);
      const shown = noticeAt(notices, e.seq);
      if (shown !== undefined) visible.push(Math.round(shown - e.data.remoteVersion));
      if (process.env.BENCH_DEBUG) slow.push([e.at - e.data.remoteVersion, e.data.remoteVersion]);
    }
    if (process.env.BENCH_DEBUG) {
      console.log(
        'slowest (delay ms, host stamp ms since process start):',
        JSON.stringify(
          slow
            .sort((a, b) => b[0] - a[0])
            .slice(0, 12)
            .map(([delay, stamp]) => [delay, Math.round(stamp - performance.timeOrigin)]),
        ),
      );
      const waited = runQueueWait(pids, sched0);
      if (waited) console.log(waited);
      console.log(
        stallReport(
          slow.filter(([delay]) => delay > 10),
          planeStalls,
          parseStallLines(host.stderr.slice(hostStderrFrom)),
        ),
      );
    }
    live.sort((a, b) => a - b);
    visible.sort((a, b) => a - b);
    if (process.env.BENCH_DEBUG) console.log(mechanism, JSON.stringify(live));
    const planeCpu = process.cpuUsage(planeCpu0);
    if (process.env.BENCH_HEAP)
      console.log('heap snapshot', (await import('node:v8')).writeHeapSnapshot(process.env.BENCH_HEAP));
    loopDelay.disable();
    stopProbe();
    const gcPauses = { minor: [] as number[], major: [] as number[] };
    for (const [kind, start, end] of planeStalls) if (kind !== 'loop') gcPauses[kind].push(end - start);
    if (process.env.BENCH_DEBUG)
      for (const [kind, pauses] of Object.entries(gcPauses)) {
        const sorted = [...pauses].sort((a, b) => a - b);
        console.log(
          `plane ${kind} GC: ${sorted.length} pauses, median ${(sorted[sorted.length >> 1] ?? 0).toFixed(1)} ms, max ${(sorted.at(-1) ?? 0).toFixed(1)} ms, total ${sorted.reduce((a, b) => a + b, 0).toFixed(0)} ms`,
        );
      }
    if (process.env.BENCH_DEBUG)
      console.log(
        `plane event-loop delay: p50 ${(loopDelay.percentile(50) / 1e6).toFixed(1)} p99 ${(loopDelay.percentile(99) / 1e6).toFixed(1)} max ${(loopDelay.max / 1e6).toFixed(1)} ms`,
      );
    const hostCpu = childCpuMs(host.child.pid);
    const s = await server.plane.signals();
    const d = s.observationDelay[mechanism];
    return {
      setup,
      tasks: TASKS,
      succeeded: envs.filter((e) => e.state === 'succeeded').length,
      requestsPerTask: s.requests.total / TASKS,
      mechanism,
      p50: d?.p50Ms ?? null,
      p99: d?.p99Ms ?? null,
      samples: d?.count ?? 0,
      live,
      visible,
      reconcilePages: reports[0]?.listPages ?? 0,
      gc: gcPauses,
      planeCpuPerTask: (planeCpu.user + planeCpu.system) / 1000 / TASKS,
      hostCpuPerTask: hostCpu !== null && hostCpu0 !== null ? (hostCpu - hostCpu0) / TASKS : null,
    };
  } finally {
    stopVisible();
    await server.close();
    await host.stop();
  }
}

// The delivery configurations compared; BENCH_SETUPS=stream,push,payload,sdk runs only those named (sdk: the anchor).
const SETUPS: Array<{
  name: string;
  setup: string;
  mechanism: 'stream' | 'push';
  plane: PlaneOptions;
  publicUrl: 'self' | null;
}> = [
  {
    name: 'stream',
    setup: 'stream (SendStreamingMessage, reattach)',
    mechanism: 'stream',
    plane: { delivery: { stream: true, push: false } },
    publicUrl: null,
  },
  {
    name: 'push',
    setup: 'push, fetch on every delivery',
    mechanism: 'push',
    plane: { delivery: { stream: false, push: true }, webhook: { fetchState: 'always' } },
    publicUrl: 'self',
  },
  {
    name: 'payload',
    setup: 'push, verified payload when complete',
    mechanism: 'push',
    plane: { delivery: { stream: false, push: true }, webhook: { fetchState: 'when-incomplete' } },
    publicUrl: 'self',
  },
];
if (process.env.BENCH_YOUNG && !process.env.BENCH_YOUNG_CHILD) {
  // The young generation's size side by side: this bench again in a child per setting (young-generation.ts).
  const { compareYoungGenerations } = await import('./young-generation.ts');
  await compareYoungGenerations(process.env.BENCH_YOUNG);
  process.exit(0);
}
const only = process.env.BENCH_SETUPS?.split(',');
/** BENCH_SETUPS name `sdk`: the official SDK client's row, the anchor the stream setup is read against. */
const ANCHOR = 'anchor: @a2a-js/sdk client, no store';
// BENCH_ROUNDS=k runs each setup k times (one after the other, each with a fresh host and plane) and
// pools the live samples of all but the first: one run's p99 rests on its few slowest samples.
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1));
const rows: Row[] = [];
for (let round = 0; round < ROUNDS; round++) {
  if (round === 1 && process.env.BENCH_YOUNG_CHILD)
    console.log(`${YOUNG_ROUND_2}${performance.now().toFixed(0)}`);
  const runs = [
    ...SETUPS.filter((s) => !only || only.includes(s.name)).map(
      (s) => () => run(s.setup, s.mechanism, s.plane, s.publicUrl),
    ),
    ...(!only || only.includes('sdk') ? [() => runSdkAnchor(ANCHOR)] : []),
  ];
  // Every other round in the opposite order, so a machine getting slower or faster weighs on each alike.
  for (const go of round % 2 === 0 ? runs : [...runs].reverse()) rows.push(await go());
}

console.log(
  `plane bench: ${TASKS} demo tasks per setup (${JSON.stringify(INPUT)}), plane in this process, host in its own, loopback HTTP`,
);
console.log(
  'setup                                      ok  req/task  all p50/p99 ms (n)   live p50/p99 ms (n)   visible p50/p99  reconcile pages/round  CPU ms/task plane, host',
);
for (const r of rows) {
  const all = `${r.p50 ?? '-'}/${r.p99 ?? '-'} (${r.samples})`;
  const live = `${percentile(r.live, 50) ?? '-'}/${percentile(r.live, 99) ?? '-'} (${r.live.length})`;
  const visible = `${percentile(r.visible, 50) ?? '-'}/${percentile(r.visible, 99) ?? '-'}`;
  console.log(
    `${r.setup.padEnd(42)} ${String(r.succeeded).padStart(3)}  ${r.requestsPerTask.toFixed(2).padStart(7)}  ${all.padEnd(19)}  ${live.padEnd(20)}  ${visible.padEnd(15)}  ${String(r.reconcilePages).padEnd(21)}  ${r.planeCpuPerTask.toFixed(2)}, ${r.hostCpuPerTask?.toFixed(2) ?? '-'}`,
  );
}
if (ROUNDS > 1) {
  // The first round runs the plane's code cold (its CPU per task is the highest): it warms up, and the
  // pooled figures are those of the rounds after it, as a plane that has been running for a while.
  console.log(
    `delays pooled over rounds 2–${ROUNDS} (the first warms the plane up; each round's row above):`,
  );
  // A setup's samples of rounds 2..k, sorted.
  const pooled = (setup: string, pick: (r: Row) => number[] = (r) => r.live) =>
    rows
      .filter((r) => r.setup === setup)
      .slice(1)
      .flatMap(pick)
      .sort((a, b) => a - b);
  for (const setup of [...new Set(rows.map((r) => r.setup))]) {
    for (const [what, pick] of [
      ['live', (r: Row) => r.live],
      ['visible', (r: Row) => r.visible],
    ] as const) {
      const samples = pooled(setup, pick);
      const slow = over(samples, 10);
      console.log(
        `${setup.padEnd(42)} ${what.padEnd(7)} p50/p95/p99 ${spread(samples)} ms of ${samples.length}; over 10 ms: ${slow.count} (${slow.share} %)`,
      );
      if (setup === ANCHOR) break; // nothing is stored: what it saw is all there is
    }
  }
  const anchor = pooled(ANCHOR);
  const stream = pooled(SETUPS[0]!.setup);
  if (anchor.length > 0 && stream.length > 0) {
    const ratio = (p: number) => {
      const a = percentile(anchor, p)!;
      const b = percentile(stream, p)!;
      return a > 0 ? `${(b / a).toFixed(2)}×` : `${b} ms against 0`;
    };
    console.log(
      `stream live against the anchor, same rounds: p95 ${ratio(95)}, p99 ${ratio(99)}; over 10 ms ${over(stream, 10).share} % against ${over(anchor, 10).share} %`,
    );
  }
}
if (process.env.BENCH_YOUNG_CHILD) {
  // For the comparison driving this run: rounds 2..k of the first setup, in one line it can parse.
  const later = rows.filter((r) => r.setup === rows[0]!.setup).slice(ROUNDS > 1 ? 1 : 0);
  console.log(
    `${YOUNG_RESULT_PREFIX}${JSON.stringify({
      live: later.flatMap((r) => r.live),
      visible: later.flatMap((r) => r.visible),
      minor: later.flatMap((r) => r.gc.minor),
      major: later.flatMap((r) => r.gc.major),
      planeCpuPerTask: later.map((r) => r.planeCpuPerTask),
    })}`,
  );
  process.exit(0);
}
console.log('req/task includes one reconciliation round (its list pages are charged across the tasks).');
console.log(
  'delay = envelope update time − host status timestamp, per transition the mechanism delivered; "live" leaves out each',
);
console.log(
  'task\'s first transition (made by the host while the start request is still in flight). "visible": the same',
);
console.log(
  'transitions until their change notice, when readers (API, SSE) can see them: on SQLite and PostgreSQL after the commit.',
);
console.log(
  'CPU ms/task: user + system time of the plane process (this one, creates and waits included) and of the host, per task.',
);

// The memory store beside it separates the durable write (fsync) from the rest of the request.
const agent = CREATES > 0 ? await startSlowAgent() : null;
if (agent)
  try {
    for (const store of ['sqlite', 'memory'] as const)
      console.log(
        formatCreateLatency(
          store,
          await measureCreateLatency({ agentUrl: agent.url, store, creates: CREATES }),
        ),
      );
  } finally {
    await agent.close();
  }
