import { join } from 'node:path';
import type { Connector, RemoteSnapshot } from '../connectors/connector.ts';
import { SystemClock } from '../core/clock.ts';
import { CryptoRandom, type SeededRandom } from '../core/random.ts';
import { TaskplaneError } from '../core/errors.ts';
import type { Envelope, EnvelopeEvent } from '../core/envelope.ts';
import { isTerminal, type NormalizedState } from '../core/states.ts';
import type { Plane } from '../plane/plane.ts';
import type { PlaneOptions } from '../plane/options.ts';
import { openStore } from '../store/open-store.ts';
import type { Store } from '../store/store.ts';
import { runHook, type HookName, type HookResult } from './hooks.ts';
import type { PushRelay } from './push-relay.ts';
import type { Check, JobEvidence, TimelineEntry, TimelineKind } from './report.ts';
import { contractInput, type TestContract } from './test-contract.ts';
import type { Target } from './target.ts';
import {
  describeCall,
  describeEvent,
  engineBackward,
  firstAt,
  refusesCredentials,
  wireBackward,
} from './row-facts.ts';
import type { WireCall, WireProxy } from './wire-proxy.ts';

/** What every row shares: the proxy, the push relay, the direct line to the agent, the settings. */
export interface Session {
  target: string;
  headers: Record<string, string>;
  hooks: Partial<Record<HookName, string>>;
  proxy: WireProxy;
  relay: PushRelay;
  /** Reads the agent directly (not through the proxy, so nothing is faulted or counted). */
  truth: Connector;
  /** Reads the agent directly as another caller (`--other-header`), or null when not given. */
  stranger: Connector | null;
  /** The target's protocol: its wire reader and the engine's connector to the proxy. */
  remote: Target;
  /** Where the engine reaches the target through the proxy. */
  engineUrl: string;
  random: SeededRandom;
  workDir: string;
  jobMs: number;
  rowTimeoutMs: number;
  hookTimeoutMs: number;
  agent: { protocol: 'a2a' | 'mcp'; streaming: boolean; push: boolean };
  /** The user's job input (`--input`) sent instead of the test contract; undefined = the contract. */
  input?: unknown;
  /** The engine the push relay hands deliveries to (the current row's). */
  currentPlane: Plane | null;
}

export const TENANT = 'conformance';
export const TARGET = 'agent';

/**
 * Engine settings for a conformance run: the production engine, with its waits scaled to a test that
 * must finish in minutes (reattach and start retries within a second, reconciliation every 2 s).
 */
export function conformancePlaneOptions(
  publicUrl: string | null,
  delivery?: PlaneOptions['delivery'],
): PlaneOptions {
  return {
    ...(delivery ? { delivery } : {}),
    publicUrl,
    requestTimeoutMs: 5000,
    stream: { reattach: { initialIntervalMs: 100, maximumIntervalMs: 1000 } },
    startRetry: { initialIntervalMs: 100, maximumIntervalMs: 1000 },
    reconcile: {
      intervalMs: 2000,
      startGraceMs: 1000,
      orphanMarginMs: 2000,
      defaultExpectedDurationMs: 5000,
    },
    startDeadlineMs: 60_000,
    // One engine per row: no other plane to share jobs with.
    watch: { leases: 'off' },
  };
}

export interface Job {
  label: string;
  envelopeId: string;
  contextId: string;
}

/** A row could not go on (a bound passed, a hook failed): the row fails with this as its reason. */
export class RowStopped extends Error {}

/** What the row needs turned out to be missing once it started (the target's own settings): not run. */
export class RowNotRun extends Error {}

/**
 * One row's run: its own engine on its own SQLite file in the run's temp dir, its jobs, its timeline,
 * and the checks every row applies to its jobs.
 */
export class RowKit {
  readonly t0 = Date.now();
  readonly timeline: TimelineEntry[] = [];
  readonly checks: Check[] = [];
  readonly jobs: Job[] = [];
  /** Figures measured in this row, by measure name (report.ts aggregates them). */
  readonly samples: Record<string, number[]> = {};
  /** Whether every push this row received carried a signature (null: no push seen). */
  signedPushes: boolean | null = null;
  plane!: Plane;
  private store!: Store;
  private readonly firstSeq: number;
  private readonly stopListening: () => void;
  private delivery: PlaneOptions['delivery'] | undefined;

  constructor(
    readonly session: Session,
    readonly rowId: string,
  ) {
    this.firstSeq = session.proxy.calls.length;
    this.stopListening = session.proxy.onCall((call) => {
      if (call.fault) this.note('fault', `${call.fault} on ${describeCall(call)}`);
    });
  }

  get deadline(): number {
    return this.t0 + this.session.rowTimeoutMs;
  }

  note(kind: TimelineKind, text: string, at = Date.now()): void {
    this.timeline.push({ atMs: at - this.t0, kind, text });
  }

  sample(name: string, value: number): void {
    (this.samples[name] ??= []).push(value);
  }

  check(name: string, ok: boolean, detail: string): boolean {
    this.checks.push({ name, ok, detail });
    this.note('check', `${ok ? 'pass' : 'FAIL'}: ${name} — ${detail}`);
    return ok;
  }

  /** Requests this row made so far. */
  calls(): WireCall[] {
    return this.session.proxy.calls.slice(this.firstSeq);
  }

  async startPlane(delivery?: PlaneOptions['delivery']): Promise<void> {
    this.delivery = delivery ?? this.delivery;
    this.store = await openStore(`sqlite:${join(this.session.workDir, `${this.rowId}.db`)}`);
    const connector = this.session.remote.connector(TARGET, this.session.engineUrl, this.session.headers);
    const push = this.delivery?.push ?? false;
    // The engine loads with the first row that runs, not with the row list (`taskplane --help` reads it).
    const { Plane } = await import('../plane/plane.ts');
    this.plane = new Plane({
      clock: new SystemClock(),
      random: new CryptoRandom(),
      store: this.store,
      connectors: (t) => (t === TARGET ? connector : undefined),
      options: conformancePlaneOptions(push ? this.session.relay.url : null, {
        stream: true,
        push: false,
        // Without a stream (an MCP 2025-11-25 server, an A2A agent that declares none) the engine polls,
        // as a user's would; reconciliation alone could miss a state that lasts a few seconds.
        poll: !this.session.agent.streaming,
        ...this.delivery,
      }),
    });
    this.session.currentPlane = this.plane;
    await this.plane.start();
  }

  /** The engine dies as a crash would (no clean release), its store is closed; the jobs stay on disk. */
  async crashPlane(): Promise<void> {
    await this.plane.stop({ abandon: true });
    await this.store.close();
    this.note('plane', 'engine stopped as in a crash (nothing released)');
  }

  async restartPlane(): Promise<void> {
    await this.startPlane();
    this.note('plane', 'engine started again on the same store (recovery)');
  }

  async close(): Promise<void> {
    this.stopListening();
    await this.plane?.stop().catch(() => {});
    await this.store?.close().catch(() => {});
    if (this.session.currentPlane === this.plane) this.session.currentPlane = null;
  }

  /** Creates a job; `arm` sets its faults up first, given the context id its requests will carry. */
  async job(label: string, contract: TestContract, arm?: (contextId: string) => void): Promise<Job> {
    const contextId = `cf-${this.rowId}-${label}-${Math.floor(this.session.random.next() * 1e9).toString(36)}`;
    arm?.(contextId);
    const { envelope } = await this.plane.create({
      tenant: TENANT,
      target: TARGET,
      input:
        this.session.input !== undefined
          ? this.session.input
          : // The label is the job's context id: an MCP tools/call carries no context, so the proxy tells
            // the jobs' calls apart by it.
            contractInput({ ...contract, label: contextId }),
      contextId,
      idempotencyKey: contextId,
      expectedDurationMs: Math.max(1000, contract.durationMs ?? this.session.jobMs),
    });
    const job = { label, envelopeId: envelope.id, contextId };
    this.jobs.push(job);
    this.note('plane', `job ${label} created (${envelope.id}, context ${contextId})`);
    return job;
  }

  async envelope(job: Job): Promise<Envelope> {
    return this.plane.get(TENANT, job.envelopeId);
  }

  /** Waits (bounded by the row's deadline) until the job's envelope satisfies `pred`. */
  async until(job: Job, what: string, pred: (env: Envelope) => boolean): Promise<Envelope> {
    for (;;) {
      const env = await this.envelope(job);
      if (pred(env)) return env;
      if (Date.now() > this.deadline)
        throw new RowStopped(
          `job ${job.label} never ${what} within ${this.session.rowTimeoutMs} ms (state ${env.state})`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  terminal(job: Job): Promise<Envelope> {
    return this.until(job, 'reached a final state', (e) => isTerminal(e.state));
  }

  running(job: Job): Promise<Envelope> {
    return this.until(job, 'was seen working', (e) => e.remoteId !== null && e.state !== 'accepted');
  }

  async hook(name: HookName): Promise<HookResult> {
    const command = this.session.hooks[name];
    if (!command) throw new RowStopped(`no --${name}-cmd`);
    this.note('hook', `--${name}-cmd started: ${command}`);
    const result = await runHook(command, this.session.hookTimeoutMs);
    this.note(
      'hook',
      `--${name}-cmd ended (${result.code === null ? 'timed out' : `exit ${result.code}`}) after ${result.durationMs} ms`,
    );
    if (result.code !== 0)
      throw new RowStopped(
        `--${name}-cmd failed (${result.code === null ? 'timed out' : `exit ${result.code}`}): ${result.output.slice(-300)}`,
      );
    await this.agentBack();
    return result;
  }

  /** After a hook: waits until the agent answers its card again. */
  private async agentBack(): Promise<void> {
    for (;;) {
      try {
        await this.session.truth.prepare?.(AbortSignal.timeout(2000), { fresh: true });
        this.note('agent', 'agent answers again');
        return;
      } catch (err) {
        // A refusal of our credentials is an answer (after --revoke-cmd it is the expected one); an MCP
        // server, unlike an A2A card, asks for them on its first call.
        if (refusesCredentials(err)) {
          this.note('agent', 'agent answers again (refusing our credentials)');
          return;
        }
        if (Date.now() > this.deadline) throw new RowStopped('the agent did not come back after the hook');
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /** The agent's own word on a task, read directly; null when it answers that it does not know it. */
  async truth(remoteId: string): Promise<{ state: NormalizedState; native: string } | null> {
    try {
      const s = await this.session.truth.get(remoteId, AbortSignal.timeout(5000));
      return { state: s.state, native: s.nativeState };
    } catch (err) {
      if (err instanceof TaskplaneError && err.code === 'not_found') return null;
      throw err;
    }
  }

  /** The agent's whole answer for a task (artifacts, result), read directly. */
  truthSnapshot(remoteId: string): Promise<RemoteSnapshot> {
    return this.session.truth.get(remoteId, AbortSignal.timeout(5000));
  }

  events(job: Job): Promise<EnvelopeEvent[]> {
    return this.plane.events(TENANT, { afterSeq: 0, envelopeId: job.envelopeId, limit: 1000 });
  }

  /** Task ids the agent created for a job: the tasks its answers to the job's creating messages named. */
  remoteTaskIds(job: Job): string[] {
    const ids = new Set<string>();
    for (const c of this.calls())
      if (c.creates && c.contextId === job.contextId) for (const s of c.states) ids.add(s.taskId);
    return [...ids];
  }

  /** Creating messages for a job that reached the agent (the proxy forwarded them). */
  creations(job: Job): WireCall[] {
    return this.calls().filter(
      (c) => c.creates && c.contextId === job.contextId && c.fault !== 'drop-before',
    );
  }

  async evidence(job: Job): Promise<JobEvidence> {
    const env = await this.envelope(job);
    const ids = this.remoteTaskIds(job);
    const agent = env.remoteId ? await this.truth(env.remoteId).catch(() => null) : null;
    const mine = new Set([...ids, ...(env.remoteId ? [env.remoteId] : [])]);
    return {
      label: job.label,
      envelopeId: job.envelopeId,
      messageId: env.messageId,
      contextId: job.contextId,
      remoteTaskIds: ids,
      finalState: env.state,
      agentState: agent?.native ?? null,
      requests: this.calls().filter(
        (c) => c.contextId === job.contextId || (c.taskId !== null && mine.has(c.taskId)),
      ).length,
      usage: this.usage(mine),
    };
  }

  /**
   * What the agent said these tasks cost: its latest report for each task (a report is the task's total
   * so far), summed over the tasks by unit; null when it reported none.
   */
  usage(tasks: Set<string>): Record<string, number> | null {
    const latest = new Map<string, Record<string, number>>();
    for (const c of this.calls())
      for (const u of c.usage) if (tasks.has(u.taskId)) latest.set(u.taskId, u.usage);
    if (latest.size === 0) return null;
    const sum: Record<string, number> = {};
    for (const usage of latest.values())
      for (const [unit, v] of Object.entries(usage)) sum[unit] = (sum[unit] ?? 0) + v;
    return sum;
  }

  /**
   * The checks every job gets: one remote task, the true final state, no backward state (in the engine
   * and on the wire), one outcome recorded.
   */
  async standardChecks(job: Job): Promise<void> {
    const env = await this.envelope(job);
    const ids = this.remoteTaskIds(job);
    this.check(
      `${job.label}: one remote task`,
      ids.length === 1,
      ids.length === 1
        ? `task ${ids[0]}`
        : `the agent created ${ids.length} tasks for one job: ${ids.join(', ') || 'none'}`,
    );
    if (!env.remoteId || !isTerminal(env.state)) {
      this.check(
        `${job.label}: true final state`,
        false,
        `the engine ended in ${env.state} without a final answer`,
      );
    } else {
      const truth = await this.truth(env.remoteId).catch((err: unknown) => ({ error: String(err) }));
      if (truth === null)
        this.check(
          `${job.label}: true final state`,
          false,
          `the agent no longer knows task ${env.remoteId} (TaskNotFound)`,
        );
      else if ('error' in truth)
        this.check(`${job.label}: true final state`, false, `the agent could not be read: ${truth.error}`);
      else
        this.check(
          `${job.label}: true final state`,
          truth.state === env.state,
          `engine ${env.state}, agent ${truth.native} on task ${env.remoteId}`,
        );
    }
    const events = await this.events(job);
    const changes = events.filter((e) => e.type === 'state_changed');
    const backward = engineBackward(changes);
    const wire = wireBackward(this.calls(), new Set(ids), this.session.remote.wire);
    this.check(
      `${job.label}: no backward state`,
      backward === null && wire === null,
      backward ?? wire ?? `${changes.length} engine transitions, agent states in order`,
    );
    if (this.session.stranger && env.remoteId) await this.strangerCheck(job, env.remoteId);
    const outcomes = changes.filter((e) => isTerminal(e.data.to as NormalizedState));
    this.check(
      `${job.label}: one outcome recorded`,
      outcomes.length === 1,
      `${outcomes.length} final outcome(s) recorded${outcomes.length ? `: ${outcomes.map((e) => String(e.data.to)).join(', ')}` : ''}`,
    );
  }

  /** Another caller reads the job's task: the agent must refuse (not found or not allowed). */
  private async strangerCheck(job: Job, remoteId: string): Promise<void> {
    let answered = false;
    let refusal = '';
    try {
      await this.session.stranger!.get(remoteId, AbortSignal.timeout(5000));
      answered = true;
    } catch (err) {
      refusal = err instanceof TaskplaneError ? err.code : String(err);
    }
    this.sample('unauthorizedAttempts', 1);
    this.sample('unauthorizedAnswered', answered ? 1 : 0);
    this.check(
      `${job.label}: another caller is refused`,
      !answered,
      answered ? `task ${remoteId} was readable with --other-header` : `refused (${refusal})`,
    );
  }

  /** Start latency, time to first progress and notification delay of one job, from its events. */
  private timings(job: Job, events: EnvelopeEvent[]): void {
    const created = firstAt(events, (e) => e.type === 'created');
    if (created === null) return;
    const bound = firstAt(events, (e) => e.type === 'bound');
    if (bound !== null) this.sample('startLatencyMs', bound - created);
    const progress = firstAt(events, (e) => e.type === 'state_changed' && e.data.to !== 'accepted');
    if (progress !== null) this.sample('firstProgressMs', progress - created);
    const final = events.find((e) => e.type === 'state_changed' && isTerminal(e.data.to as NormalizedState));
    const ids = new Set(this.remoteTaskIds(job));
    const agentFinal = this.calls()
      .flatMap((c) => c.states)
      .filter(
        (s) => ids.has(s.taskId) && this.session.remote.wire.isTerminal(s.state) && s.timestampMs !== null,
      )
      .map((s) => s.timestampMs!)
      .sort((a, b) => a - b)[0];
    if (final && agentFinal !== undefined) this.sample('notifyDelayMs', Math.max(0, final.at - agentFinal));
    this.sample('jobs', 1);
    if (final) this.sample('outcomesLearned', 1);
    if (bound !== null) this.sample('accepted', 1);
  }

  /** Engine events of the row's jobs, into the timeline. */
  async collectEvents(): Promise<void> {
    for (const job of this.jobs) {
      const events = await this.events(job).catch(() => []);
      for (const e of events) this.note('plane', `${job.label}: ${describeEvent(e)}`, e.at);
      this.timings(job, events);
    }
    this.timeline.sort((a, b) => a.atMs - b.atMs);
  }
}
