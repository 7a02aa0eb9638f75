import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SeededRandom } from '../core/random.ts';
import { TaskplaneError } from '../core/errors.ts';
import { answerChecklist } from './checklist.ts';
import type { HookName } from './hooks.ts';
import { aggregateMeasures } from './measures.ts';
import { PushRelay } from './push-relay.ts';
import { REPORT_VERSION, type ConformanceReport, type RowReport } from './report.ts';
import { describeCall } from './row-facts.ts';
import { RowKit, RowNotRun, RowStopped, TARGET, type Session } from './row-kit.ts';
import { runOrder, selectRows, type RowDef } from './rows.ts';
import { openTarget, type Protocol } from './target.ts';
import { WireProxy } from './wire-proxy.ts';

export interface ConformanceOptions {
  /**
   * Base URL of the A2A 1.0 agent (its card at `/.well-known/agent-card.json`), or the Streamable HTTP
   * endpoint of the MCP tasks server (`…/mcp`).
   */
  target: string;
  /** The target's protocol. @default A2A when its card answers, else MCP */
  protocol?: Protocol;
  /** MCP: the tool every job calls, with the test contract as its arguments. Required for MCP. */
  tool?: string;
  /** Headers on every call to the agent (its credentials). @default none */
  headers?: Record<string, string>;
  /**
   * Credentials of another caller: every job's task is also read with these, and the agent must refuse
   * (unauthorized-object access). @default not checked
   */
  otherHeaders?: Record<string, string>;
  hooks?: Partial<Record<HookName, string>>;
  /** Row ids or numbers; every row when empty. */
  rows?: string[];
  /** Seed of the fault schedule (which frame a stream is cut after, the jobs' context ids). @default 1 */
  seed?: number;
  /** How long a job works (the test contract's durationMs). @default 1500 */
  jobMs?: number;
  /** Bound on one row. @default 60000 */
  rowTimeoutMs?: number;
  /** Bound on one hook. @default 60000 */
  hookTimeoutMs?: number;
  /** Bound on the whole run; rows that would start past it are not run. @default 300000 */
  totalTimeoutMs?: number;
  /**
   * A2A: send this input with every job instead of the test contract, for an agent that does not
   * implement it; row 6 (input request) and row 8's side-effect job are then not run. Refused for MCP
   * targets, whose jobs' calls are told apart by the contract's label. @default the contract
   */
  input?: unknown;
  /** Called as rows start and end. */
  progress?: (event: { row: RowDef; index: number; total: number; result?: RowReport }) => void;
}

/**
 * `taskplane conformance`: runs the selected rows of the failure matrix against one A2A agent or MCP
 * tasks server, each on the real engine with its own SQLite store in a temp dir, through the fault
 * proxy, and returns the report. Rows run one after another (their faults and counts must not mix).
 */
export async function runConformance(options: ConformanceOptions): Promise<ConformanceReport> {
  const rows = runOrder(selectRows(options.rows));
  const headers = options.headers ?? {};
  const seed = options.seed ?? 1;
  const started = Date.now();
  const remote = await openTarget(options.target, headers, {
    ...(options.protocol ? { protocol: options.protocol } : {}),
    ...(options.tool ? { tool: options.tool } : {}),
  });
  const agent = remote.agent;
  if (agent.protocol === 'mcp' && options.input !== undefined)
    throw new TaskplaneError(
      'invalid_argument',
      "--input: not for MCP targets: the run tells the jobs' tool calls apart by the test contract's label argument",
      { field: 'input' },
    );
  const workDir = mkdtempSync(join(tmpdir(), 'taskplane-conformance-'));
  const proxy = await WireProxy.start(options.target, remote.wire);
  const upstream = new URL(options.target);
  const session: Session = {
    target: options.target,
    headers,
    hooks: options.hooks ?? {},
    proxy,
    relay: undefined as unknown as PushRelay,
    remote,
    // A2A: the base URL (the card, rewritten by the proxy, names the interfaces); MCP: the endpoint.
    engineUrl: agent.protocol === 'mcp' ? `${proxy.url}${upstream.pathname}${upstream.search}` : proxy.url,
    truth: remote.connector('truth', options.target, headers),
    stranger: options.otherHeaders
      ? remote.connector('stranger', options.target, options.otherHeaders)
      : null,
    random: new SeededRandom(seed),
    workDir,
    jobMs: options.jobMs ?? 1500,
    rowTimeoutMs: options.rowTimeoutMs ?? 60_000,
    hookTimeoutMs: options.hookTimeoutMs ?? 60_000,
    agent,
    currentPlane: null,
    input: options.input,
  };
  session.relay = await PushRelay.start(async (req) => {
    const plane = session.currentPlane;
    if (!plane) throw new TaskplaneError('unavailable', 'no engine is running');
    return (await plane.handleWebhook(TARGET, req)).status;
  });
  const totalTimeoutMs = options.totalTimeoutMs ?? 300_000;
  const reports: RowReport[] = [];
  const kits: RowKit[] = [];
  try {
    for (const [index, row] of rows.entries()) {
      options.progress?.({ row, index, total: rows.length });
      const result = await runRow(session, row, started + totalTimeoutMs, kits);
      reports.push(result);
      options.progress?.({ row, index, total: rows.length, result });
    }
  } finally {
    await proxy.close();
    await session.relay.close();
    rmSync(workDir, { recursive: true, force: true });
  }
  const ran = reports.filter((r) => r.status === 'passed' || r.status === 'failed');
  const requests: Record<string, number> = {};
  for (const c of proxy.calls) requests[c.method] = (requests[c.method] ?? 0) + 1;
  return {
    version: REPORT_VERSION,
    target: options.target,
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    seed,
    agent,
    // A run in which no row ran proved nothing: it does not pass.
    passed: ran.length > 0 && ran.every((r) => r.status === 'passed'),
    rows: [...reports].sort((a, b) => a.number - b.number),
    measures: aggregateMeasures(kits, reports, proxy.calls),
    checklist: answerChecklist(reports, kits, agent),
    requests,
    notes: [
      ...proxy.unproxied.map(
        (u) => `The card lists ${u} on another origin: requests there bypass the proxy.`,
      ),
    ],
  };
}

function notRun(row: RowDef, reason: string): RowReport {
  return {
    id: row.id,
    number: row.number,
    title: row.title,
    status: 'not_run',
    reason,
    checks: [],
    jobs: [],
    timeline: [],
    durationMs: 0,
  };
}

async function runRow(
  session: Session,
  row: RowDef,
  runDeadline: number,
  kits: RowKit[],
): Promise<RowReport> {
  const notApplicable = row.notApplicable?.(session) ?? null;
  if (notApplicable) return { ...notRun(row, notApplicable), status: 'not_applicable' };
  if (row.hook && !session.hooks[row.hook]) return notRun(row, `needs --${row.hook}-cmd`);
  const unavailable = row.unavailable?.(session) ?? null;
  if (unavailable) return notRun(row, unavailable);
  if (Date.now() + Math.min(session.rowTimeoutMs, 10_000) > runDeadline)
    return notRun(row, 'the run reached its time bound (--timeout-ms) before this row');
  const kit = new RowKit(session, row.id);
  kits.push(kit);
  let stopped: string | null = null;
  try {
    await row.run(kit);
  } catch (err) {
    if (err instanceof RowNotRun) {
      await kit.close();
      return { ...notRun(row, err.message), timeline: kit.timeline };
    }
    stopped = err instanceof RowStopped ? err.message : `error: ${(err as Error).message ?? String(err)}`;
    kit.note('check', `row stopped: ${stopped}`);
  }
  session.proxy.disarmAll();
  for (const c of kit.calls())
    kit.note(
      'request',
      `${describeCall(c)} → ${c.status ?? 'no answer'}${c.fault ? ` [${c.fault}]` : ''}`,
      c.at,
    );
  const jobs = [];
  for (const job of kit.jobs) jobs.push(await kit.evidence(job).catch(() => null));
  await kit.collectEvents();
  await kit.close();
  const failed = kit.checks.find((c) => !c.ok);
  const ok = stopped === null && failed === undefined && kit.checks.length > 0;
  return {
    id: row.id,
    number: row.number,
    title: row.title,
    status: ok ? 'passed' : 'failed',
    reason:
      stopped ??
      (failed ? `${failed.name}: ${failed.detail}` : kit.checks.length === 0 ? 'no check ran' : null),
    checks: kit.checks,
    jobs: jobs.filter((j) => j !== null),
    timeline: kit.timeline,
    durationMs: Date.now() - kit.t0,
  };
}
