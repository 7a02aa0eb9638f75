/**
 * The control plane engine, sans-I/O: it reaches time, randomness, storage and remotes only
 * through the ports it is given, so production, tests and the lab run the same code.
 *
 * ```ts
 * const plane = new Plane({ clock, random, store, connectors: (target) => connector, logger, options });
 * await plane.start();                       // recovery: resume watching every non-terminal envelope
 * const { envelope } = await plane.create({ tenant, target, input, idempotencyKey });  // durable, `accepted`
 * await plane.create(req, { wait: 'started' });   // …or wait for the remote's first answer
 * await plane.answer(tenant, envelope.id, { requestId, value });   // 409 on wrong id / second answer
 * await plane.cancel(tenant, envelope.id);   // records intent, calls remote, learns the true outcome
 * await plane.handleWebhook(target, { headers, rawBody, envelopeId });  // push ingress (throws unauthenticated)
 * await plane.reconcileNow();                // one reconciliation round now (the loop runs every interval)
 * await plane.signals(tenant);               // that tenant's jobs only; signals() = the whole process (operators)
 * await plane.purgeExpired();                // one retention purge round now (finished jobs past retentionUntil)
 * await plane.setWorkflowBudget(tenant, 'wf-1', { usage: { cents: 500 }, tasks: 20 });  // over all its tasks
 * await plane.workflow(tenant, 'wf-1');       // sums per target, cost per accepted completion, the budget
 * await plane.stop();                        // ends every loop and watcher promptly, releases its leases
 * await plane.stop({ abandon: true });       // …keeps them, as a crash would (tests, the lab)
 * ```
 *
 * On a store several processes share, each job is watched by one plane at a time (per-job watch leases,
 * plane/watch-leases.ts); a job's `timeoutMs` fires on its own timer (plane/timeouts.ts); budgets refuse
 * new remote work once used up (plane/budgets.ts, per workflow plane/workflow-budgets.ts); an acceptance
 * verifier is called through the `verifier` port and resumed after a restart (plane/verifier.ts).
 *
 * Every observation goes through `observe` (plane/observe.ts), the one forward-only path. Which
 * delivery mechanisms are used is configuration (plane/options.ts): stream / push / poll, the
 * reconciliation interval and the lost policy.
 */
import type { Clock } from '../core/clock.ts';
import type { Random } from '../core/random.ts';
import { newEnvelope, type Envelope, type EnvelopeEvent, type ObservationSource } from '../core/envelope.ts';
import { TaskplaneError } from '../core/errors.ts';
import { isTerminal } from '../core/states.ts';
import { newId } from '../core/ids.ts';
import { inputHash } from '../core/canonical-json.ts';
import type { EnvelopeQuery, EnvelopeStore, Page } from '../store/store.ts';
import type { InboundWebhook, RemoteSnapshot } from '../connectors/connector.ts';
import { readArtifacts, type ArtifactContent } from './artifact-content.ts';
import {
  checkAcceptanceSchema,
  checkAcceptanceSchemaOffLoop,
  checkTargetInput,
  type SchemaCompiler,
} from './acceptance.ts';
import { checkAcceptanceExtras } from './acceptance-checks.ts';
import {
  checkTaskVerifier,
  forEachDueVerification,
  runVerification,
  targetVerifier,
  tenantVerifierSecret,
  type VerifierPort,
} from './verifier.ts';
import { decideByPerson, type AcceptanceDecision } from './acceptance-decision.ts';
import { onActorRevoked, type ActorRevokedReport } from './actor-revoked.ts';
import { checkBudget, enforceRunningBudgets, tenantBudgetExhausted } from './budgets.ts';
import {
  WorkflowDeadlines,
  admitToWorkflow,
  checkWorkflowBudgetInput,
  taskLineage,
  checkWorkflowId,
  enforceWorkflowBudget,
  setWorkflowBudget,
  workflowView,
  type WorkflowView,
} from './workflow-budgets.ts';
import type { CreateGuard, TargetUsage, WorkflowBudgetRecord } from '../store/store.ts';
import {
  answerInDoubt,
  answerInput,
  cancelTask,
  resendAnswer,
  type AnswerRequest,
} from './answer-and-cancel.ts';
import {
  connectorFor,
  describeError,
  waitFor,
  type ConnectorResolver,
  type PlaneContext,
  type StartOutcome,
  jobFields,
} from './context.ts';
import { silentLogger, type Logger } from '../core/logger.ts';
import { JobWatcher, mechanismFor, type Mechanism, type WatcherState } from './job-watcher.ts';
import { observe, type ObserveResult } from './observe.ts';
import { planeConfig, type PlaneConfig, type PlaneOptions } from './options.ts';
import { HeardLog } from './heard-log.ts';
import { Reconciler, listActiveEnvelopes, recordCardChanged, type ReconcileReport } from './reconciler.ts';
import { SignalCounters, type LatencyHistograms } from './signals.ts';
import {
  collectOpenJobSignals,
  collectSignals,
  type OpenJobSignals,
  type PlaneSignals,
} from './signal-report.ts';
import type { TargetActivitySnapshot } from './target-activity.ts';
import { cancelUndelivered, sendCancel } from './cancel-delivery.ts';
import { ensureStarted, startOnce } from './start-remote.ts';
import { StartQueue } from './start-queue.ts';
import type { NextTurn } from './turns.ts';
import { noteStartFailed, prepareConnector } from './start-attempts.ts';
import { handleWebhook, type WebhookResult } from './webhook-ingress.ts';
import { TimeoutTimers } from './timeouts.ts';
import { WatchLeases, leaseLoops } from './watch-leases.ts';
import { WorkerLoop } from './worker-loop.ts';
import { RetentionSweeper, type BeforePurge, type RetentionStats } from './retention-sweeper.ts';

export interface PlanePorts {
  clock: Clock;
  random: Random;
  store: EnvelopeStore;
  connectors: ConnectorResolver;
  logger?: Logger;
  options?: PlaneOptions;
  /** Lease owner name; unique per process. @default a random id */
  instanceId?: string;
  /**
   * Where acceptance schemas are compiled (server/worker-schema-compiler.ts: a worker thread with a deadline,
   * which the server wires). @default in process, on the event loop (the lab, tests)
   */
  schemaCompiler?: SchemaCompiler;
  /**
   * Runs a function on a later turn of the event loop: new jobs' starts wait for it, so a create's answer
   * is written before its start's work runs, and a burst of starts is spread over several turns
   * (plane/start-queue.ts); a reconciliation pass observes a listed page a few jobs a turn. The server
   * passes one built on setImmediate. @default none: starts run at once, a page in one go
   */
  nextTurn?: NextTurn;
  /**
   * Receives each batch of finished jobs past their retention before it is purged (the server's
   * `--export-before-purge` writes their events as JSONL); a throw keeps the batch (retention-sweeper.ts).
   * @default none: purged without export
   */
  beforePurge?: BeforePurge;
  /**
   * How acceptance verifiers are called (plane/verifier.ts): the server wires one with the SSRF guard.
   * @default none: a create naming a verifier is refused, and due verifications wait for a plane with one
   */
  verifier?: VerifierPort;
}

/**
 * How long create waits for the remote. By default not at all: create returns once the envelope is
 * durable (state `accepted`) and the start runs behind it. `started` waits for the first remote answer
 * (or the first failed attempt); a number waits at most that many milliseconds for it.
 */
export interface CreateOptions {
  wait?: 'started' | number;
}

export interface CreateTaskRequest {
  tenant: string;
  target: string;
  input: unknown;
  /** Same key + same input → the same envelope; same key + different input → 409. */
  idempotencyKey?: string | null;
  actor?: string | null;
  /** Id of the API key making the request, recorded so a revocation can find the key's jobs. */
  keyId?: string | null;
  requestKind?: string;
  workflowId?: string | null;
  parentId?: string | null;
  /** Our contextId for the remote conversation; a fresh one when absent. */
  contextId?: string | null;
  expectedDurationMs?: number | null;
  timeoutMs?: number | null;
  /**
   * Business acceptance (docs/plane.md "Acceptance"): the JSON Schema the output must satisfy, the
   * hashes artifacts must have, the receipt id the output must carry.
   */
  acceptance?: {
    schema?: Record<string, unknown>;
    artifactHashes?: Record<string, string>;
    receipt?: { pointer: string };
    /** An external verifier: {url, timeoutMs?, maxAttempts?} (plane/verifier.ts). */
    verifier?: unknown;
  } | null;
  /** Spend cap for this job in the remote's usage unit; once reached, no new remote work for it. */
  budget?: { limit: number; unit: string } | null;
}

/**
 * Watchers a restart starts at once (Plane.takeUp): enough to keep a store's connections busy, few
 * enough that the reads they queue finish well inside a pooled connection's connect timeout.
 */
const TAKE_UP_WAVE = 100;

function requireString(field: string, value: unknown, max = 200): string {
  if (typeof value !== 'string' || value === '' || value.length > max) {
    throw new TaskplaneError(
      'invalid_argument',
      `${field}: must be a non-empty string of at most ${max} characters`,
      { field },
    );
  }
  return value;
}

function optionalPositive(field: string, value: unknown): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !(value > 0))
    throw new TaskplaneError('invalid_argument', `${field}: must be a number > 0`, { field });
  return value;
}

export class Plane {
  readonly config: PlaneConfig;
  private readonly ctx: PlaneContext;
  private readonly controller = new AbortController();
  private readonly watchers = new Map<string, JobWatcher>();
  private readonly background = new Set<Promise<unknown>>();
  private readonly reconciler: Reconciler;
  private reconcileLoop: WorkerLoop<string> | null = null;
  private readonly leases: WatchLeases;
  private readonly timeouts: TimeoutTimers;
  private readonly deadlines: WorkflowDeadlines;
  private leaseLoops: Array<WorkerLoop<string> | WorkerLoop<Envelope[]>> = [];
  private readonly startQueue: StartQueue;
  /** Jobs whose first start this plane has begun (beginStart) and not yet finished. */
  private readonly beginning = new Set<string>();
  /** Jobs whose verifier calls run in this process now. */
  private readonly verifying = new Set<string>();
  private started = false;
  private stopNotices: (() => void) | null = null;
  private readonly acceptanceListeners = new Set<(tenant: string, envelopeId: string) => void>();
  private readonly retention: RetentionSweeper;

  constructor(private readonly ports: PlanePorts) {
    this.config = planeConfig(ports.options);
    const instanceId = ports.instanceId ?? newId(ports.clock, ports.random, 'pln_');
    this.ctx = {
      clock: ports.clock,
      random: ports.random,
      store: ports.store,
      connectors: ports.connectors,
      logger: ports.logger ?? silentLogger,
      config: this.config,
      counters: new SignalCounters(),
      signal: this.controller.signal,
      wake: (id) => this.watchers.get(id)?.wake(),
      ensureWatching: (id) => this.spawn(this.watch(id)),
      spawn: (work) => this.spawn(work),
      streamAttached: (id) => this.watchers.get(id)?.state === 'attached',
      revisions: new Map(),
      startsInFlight: new Set(),
      mayStart: (id) => this.leases.fresh(id),
      heard: new HeardLog(),
      nextTurn: ports.nextTurn ?? null,
      ...(ports.schemaCompiler ? { schemaCompiler: ports.schemaCompiler } : {}),
      onRevision: (target, from, to) => this.spawn(recordCardChanged(this.ctx, target, from, to)),
      onVerificationDue: (id) => this.verify(id),
      onAcceptance: (envelope) => {
        for (const listener of this.acceptanceListeners) {
          try {
            listener(envelope.tenant, envelope.id);
          } catch (err) {
            this.ctx.logger.warn({ err: describeError(err) }, 'acceptance listener failed');
          }
        }
      },
      onUsage: (envelope) => {
        if (this.config.budgets.cancelRunning)
          this.spawn(
            enforceRunningBudgets(this.ctx, envelope, (id, actor) => cancelTask(this.ctx, id, actor)),
          );
        if (envelope.workflowId !== null)
          this.spawn(this.enforceWorkflow(envelope.tenant, envelope.workflowId));
      },
      startAgain: async (envelope) => {
        const outcome = await startOnce(this.ctx, envelope, { resend: true });
        // The remote id is null now: ensureStarted keeps trying with the same messageId.
        if (outcome.kind === 'retry') this.spawn(ensureStarted(this.ctx, envelope.id, { waitFirst: true }));
        return outcome;
      },
    };
    this.reconciler = new Reconciler(this.ctx, instanceId);
    this.leases = new WatchLeases(this.ctx, instanceId);
    this.timeouts = new TimeoutTimers(this.ctx);
    this.deadlines = new WorkflowDeadlines(this.ctx, (tenant, workflowId) =>
      this.enforceWorkflow(tenant, workflowId),
    );
    this.startQueue = new StartQueue(this.ctx.nextTurn);
    this.retention = new RetentionSweeper({
      clock: ports.clock,
      store: ports.store,
      logger: this.ctx.logger,
      config: this.config.retention,
      owner: instanceId,
      signal: this.controller.signal,
      ...(ports.beforePurge ? { beforePurge: ports.beforePurge } : {}),
    });
  }

  /**
   * Aborted by stop(). Every wait and call is linked to it through AbortSignal.any (context.ts
   * childSignal), never by a listener of its own, so its listener count stays flat however many jobs are
   * in flight and no caller needs to lift Node's MaxListeners warning; stop() stops each watcher itself.
   */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Recovery, then the reconciliation loop: every non-terminal envelope is watched again. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.leases.bind();
    // Every write to a watched job's record, by any path of any plane sharing the store: an attached
    // watcher sees whether the job settled elsewhere (job-watcher.ts noticeChange); a parked one reads
    // the job again (another plane's answer or cancel; recheck).
    this.stopNotices = this.ctx.store.onChange((change) => {
      if (change.kind !== 'envelope') return;
      const watcher = this.watchers.get(change.id);
      watcher?.noticeChange(change.seq);
      watcher?.recheck();
    });
    const active = await listActiveEnvelopes(this.ctx.store);
    const workflows = new Map<string, [string, string]>();
    for (const env of active)
      if (env.workflowId !== null)
        workflows.set(JSON.stringify([env.tenant, env.workflowId]), [env.tenant, env.workflowId]);
    for (const [tenant, workflowId] of workflows.values()) await this.deadlines.arm(tenant, workflowId);
    // With watch leases, a job another live plane watches stays its own (it also (re)starts it). The
    // leases are taken in one statement per 1,000 jobs, and watch() is handed the listed envelope: a
    // restart with N open jobs costs N/1,000 lease writes, not 2N writes and N more reads.
    const held = new Set(await this.leases.claimMany(active.map((env) => env.id)));
    this.spawn(this.takeUp(this.takeOn(active.filter((env) => held.has(env.id)))));
    // A count, not the list: the loop below outlives start(), and a closure over `active` would keep
    // every envelope read at recovery in memory for the plane's life.
    const recovered = active.length;
    if (this.leases.enabled) this.startLeaseLoops();
    // Verifications a stopped plane left due resume from their last recorded attempt.
    if (this.ports.verifier) await forEachDueVerification(this.ctx, (id) => this.verify(id));
    if (this.config.reconcile.enabled) {
      this.reconcileLoop = new WorkerLoop<string>({
        name: 'reconcile',
        clock: this.ctx.clock,
        signal: this.controller.signal,
        fetch: () => this.reconciler.dueTargets(),
        handle: async (target) => {
          // The first round after a restart with work in flight is the recovery round: not skipped for a lease.
          await this.reconciler.reconcileTarget(target, {
            force: this.reconcileLoop?.rounds === 0 && recovered > 0,
          });
        },
        error: (err, target) =>
          this.ctx.logger.warn({ target, err: describeError(err) }, 'reconciliation failed'),
        intervalMs: () => this.config.reconcile.intervalMs,
        // After a restart, reconcile at once: the fast path may have missed anything while we were down.
        initialDelayMs: recovered > 0 ? 0 : this.config.reconcile.intervalMs,
      });
      this.reconcileLoop.start();
    }
    if (this.config.retention.purge) this.retention.start();
    this.ctx.logger.info({ recovered }, 'plane started');
  }

  /**
   * Ends every loop, watcher and wait promptly; in-flight remote calls are aborted; leases are released
   * so another plane takes the work over at once. `abandon` keeps the leases, as a crash would (tests
   * and the lab use it to show what another plane does when this one dies).
   */
  async stop(options: { abandon?: boolean } = {}): Promise<void> {
    this.controller.abort(new TaskplaneError('unavailable', 'plane stopped'));
    // A job's watcher is replaced in the map only once it is done, so the map holds every one running.
    for (const watcher of this.watchers.values()) watcher.stop(this.controller.signal.reason);
    this.stopNotices?.();
    this.stopNotices = null;
    this.timeouts.clear();
    this.deadlines.clear();
    await this.reconcileLoop?.finished();
    await this.retention.finished();
    await Promise.all(this.leaseLoops.map((l) => l.finished()));
    await Promise.allSettled([...this.watchers.values()].map((w) => w.done));
    await Promise.allSettled([...this.background]);
    if (options.abandon) return;
    await this.reconciler.releaseLeases();
    await this.leases.releaseAll();
  }

  /** One retention purge round now (the loop runs every `retention.sweepIntervalMs`); how many it deleted. */
  purgeExpired(): Promise<number> {
    return this.retention.sweep();
  }

  /** What the retention purge did since start (/metrics). */
  retentionStats(): RetentionStats {
    return { ...this.retention.stats };
  }

  /** Renewal and adoption of per-job watch leases (plane/watch-leases.ts). */
  private startLeaseLoops(): void {
    this.leaseLoops = leaseLoops(this.ctx, this.leases, this.controller.signal, {
      // Another plane holds this job's lease now (we were paused past the ttl): it watches, we stop.
      stopWatching: (id) => this.watchers.get(id)?.stop(),
      recheck: (id, version) => this.watchers.get(id)?.recheck(version),
      isWatching: (id) => {
        const w = this.watchers.get(id);
        return (w !== undefined && w.state !== 'done') || (this.leases.enabled && this.leases.holds(id));
      },
      adopt: (envs) => this.adopt(envs),
    });
  }

  /**
   * Jobs this plane just took the leases of (a dead plane's): taken on as after a restart, and their
   * watchers started the same way, in take-up waves (a dead plane leaves as many jobs as a restart
   * recovers). Resolves once the last wave's first reads are done, so an adoption round does not start
   * the next batch's watchers on top of them.
   */
  private async adopt(envs: readonly Envelope[]): Promise<void> {
    await this.takeUp(this.takeOn(envs));
  }

  /**
   * Jobs whose leases this plane now holds, recovered at its start or adopted from a dead plane: tracked
   * and their timeouts armed; an unconfirmed start is recovered, and what the previous owner recorded but
   * may not have sent goes out (a cancel never acknowledged, an answer in doubt). Returns the jobs to
   * watch (those bound to a remote job).
   */
  private takeOn(envs: readonly Envelope[]): Envelope[] {
    const toWatch: Envelope[] = [];
    for (const env of envs) {
      this.ctx.counters.track(env.id, env.tenant);
      this.timeouts.arm(env);
      if (env.remoteId === null) this.spawn(ensureStarted(this.ctx, env.id));
      else toWatch.push(env);
      if (cancelUndelivered(env)) this.spawn(sendCancel(this.ctx, env.id));
      if (answerInDoubt(env, Number.POSITIVE_INFINITY, 0)) this.spawn(resendAnswer(this.ctx, env.id));
    }
    return toWatch;
  }

  /**
   * A create retried here for a job whose start nobody has confirmed: when the plane that took it died
   * before starting it (its lease is free, expired, or its process is gone), start it now rather than
   * after its lease expires. A live plane's lease refuses; a lease held here means our own start runs.
   */
  private startIfOrphaned(env: Envelope): void {
    if (env.remoteId !== null || isTerminal(env.state)) return;
    if (this.beginning.has(env.id) || this.leases.holds(env.id)) return;
    this.spawn(
      (async () => {
        if (await this.leases.claim(env.id)) await this.adopt([env]);
      })(),
    );
  }

  async create(
    req: CreateTaskRequest,
    opts: CreateOptions = {},
  ): Promise<{ envelope: Envelope; created: boolean }> {
    const ctx = this.ctx;
    const tenant = requireString('tenant', req.tenant);
    const target = requireString('target', req.target);
    const connector = connectorFor(ctx, target);
    const idempotencyKey =
      req.idempotencyKey == null ? null : requireString('idempotencyKey', req.idempotencyKey);
    const requestKind = req.requestKind ?? 'message';
    if (req.input === undefined)
      throw new TaskplaneError('invalid_argument', 'input: required', { field: 'input' });
    const hash = inputHash({ target, requestKind, input: req.input });
    const budget = checkBudget('budget', req.budget);
    const sameOrConflict = (existing: Envelope) => {
      if (existing.inputHash !== hash) {
        throw new TaskplaneError('conflict', 'idempotencyKey was used with a different input', {
          field: 'idempotencyKey',
        });
      }
      this.startIfOrphaned(existing);
      return { envelope: existing, created: false };
    };
    if (idempotencyKey) {
      const existing = await ctx.store.findEnvelopeByIdempotencyKey(tenant, idempotencyKey);
      if (existing) return sameOrConflict(existing);
    }
    // After the idempotency lookup: a repeat returns its envelope without compiling the schema again.
    const compiler = this.ports.schemaCompiler;
    const schema =
      req.acceptance?.schema === undefined
        ? undefined
        : compiler
          ? await checkAcceptanceSchemaOffLoop(
              req.acceptance.schema,
              compiler,
              this.config.acceptance,
              tenant,
            )
          : checkAcceptanceSchema(req.acceptance.schema, this.config.acceptance);
    const acceptanceExtras = checkAcceptanceExtras(req.acceptance);
    const verifier =
      (await checkTaskVerifier(req.acceptance?.verifier, this.ports.verifier, this.config.acceptance)) ??
      targetVerifier(this.config.acceptance, target);
    // Every field is valid; whether the target takes this input is the next question (422, not 400).
    if (connector.inputSchema) checkTargetInput(target, connector.inputSchema, req.input);
    const overBudget = await tenantBudgetExhausted(ctx, tenant);
    if (overBudget) {
      // Nothing to record it on yet: the refusal (409 with the reason) and a log line say why.
      ctx.logger.warn({ tenant, target, reason: overBudget }, 'new job refused: budget exhausted');
      throw new TaskplaneError('failed_precondition', overBudget, { field: 'budget' });
    }
    const { workflowId, parentId } = await taskLineage(ctx, tenant, req);
    const guard: CreateGuard = workflowId === null ? {} : await admitToWorkflow(ctx, tenant, workflowId);
    const now = ctx.clock.now();
    const id = newId(ctx.clock, ctx.random, 'tsk_');
    const envelope = newEnvelope({
      id,
      tenant,
      actor: req.actor ?? null,
      keyId: req.keyId ?? null,
      workflowId,
      parentId,
      connector: connector.kind,
      target,
      contextId: req.contextId ?? newId(ctx.clock, ctx.random, 'ctx_'),
      messageId: newId(ctx.clock, ctx.random, 'msg_'),
      requestKind,
      input: req.input,
      inputHash: hash,
      idempotencyKey,
      createdAt: now,
      budget,
      timeoutMs: optionalPositive('timeoutMs', req.timeoutMs),
      expectedDurationMs: optionalPositive('expectedDurationMs', req.expectedDurationMs),
      acceptance:
        schema === undefined && !req.acceptance && !verifier
          ? null
          : {
              status: 'pending',
              reasons: [],
              ...(schema ? { schema } : {}),
              ...acceptanceExtras,
              ...(verifier ? { verifier } : {}),
            },
    });
    const created = await ctx.store.createEnvelope(
      envelope,
      [
        {
          envelopeId: id,
          tenant,
          type: 'created',
          at: now,
          data: {
            target,
            messageId: envelope.messageId,
            contextId: envelope.contextId,
            inputHash: hash,
            ...(workflowId !== null ? { workflowId } : {}),
            ...(parentId !== null ? { parentId } : {}),
          },
        },
      ],
      guard,
    );
    if (!created.created) return sameOrConflict(created.envelope);
    if (workflowId !== null) this.spawn(this.deadlines.arm(tenant, workflowId));
    ctx.counters.track(id, tenant);
    this.timeouts.arm(created.envelope);
    // The envelope with its messageId is durable: the caller has its handle, the start runs behind it.
    const started = this.beginStart(created.envelope);
    if (opts.wait === undefined) return { envelope: created.envelope, created: true };
    if (opts.wait === 'started') await started;
    else await Promise.race([started, waitFor(ctx.clock, opts.wait, ctx.signal)]);
    return { envelope: (await ctx.store.getEnvelope(id)) ?? created.envelope, created: true };
  }

  /**
   * The first start of a new job, in the background. The connector learns the remote first (A2A: its
   * card), so the choice between a streaming and a plain start is the remote's, not a default; a
   * streaming start hands the job to its watcher, a plain one to recovery on failure. It waits in the
   * start queue for its turn (plane/start-queue.ts), so the create's answer goes out first.
   */
  private beginStart(env: Envelope): Promise<StartOutcome> {
    const ctx = this.ctx;
    // Stopped before its turn came (or while it waited on the store): nothing was sent, and recovery
    // starts it on the next plane start.
    const stopped = (): StartOutcome => ({
      kind: 'retry',
      error: { code: 'unavailable', message: 'plane stopped' },
    });
    const run = async (): Promise<StartOutcome> => {
      if (ctx.signal.aborted) return stopped();
      // Ours to watch before the remote hears of it, so another plane's adoption sweep never starts it
      // too; if another plane took it first, that plane starts it.
      if (!(await this.leases.claim(env.id))) {
        this.timeouts.disarm(env.id);
        return { kind: 'retry', error: { code: 'unavailable', message: 'another plane owns this job' } };
      }
      const connector = connectorFor(ctx, env.target);
      try {
        await prepareConnector(ctx, env, connector);
      } catch (err) {
        // Cannot tell how to start yet; nothing was sent. Retried with backoff like a failed start.
        await noteStartFailed(ctx, env.id, err, false);
        ctx.logger.warn(
          { envelopeId: env.id, err: describeError(err) },
          'target not readable; start retried',
        );
        ctx.spawn(ensureStarted(ctx, env.id, { waitFirst: true }));
        return { kind: 'retry', error: describeError(err) };
      }
      if (ctx.signal.aborted) return stopped();
      if (mechanismFor(ctx, connector) === 'stream' && connector.startStream) {
        // One call starts and streams (A2A SendStreamingMessage); the watcher owns recovery from here.
        return new Promise<StartOutcome>((resolve) => this.startWatcher(env.id, 'stream', resolve));
      }
      const outcome = await startOnce(ctx, env, { resend: false });
      if (outcome.kind === 'retry') {
        ctx.logger.warn(
          { envelopeId: env.id, err: outcome.error },
          'start failed; retrying with the same messageId',
        );
        ctx.spawn(ensureStarted(ctx, env.id, { waitFirst: true }));
      } else {
        ctx.spawn(this.watch(env.id));
      }
      return outcome;
    };
    const queued = new Promise<StartOutcome>((resolve) => this.startQueue.push(() => resolve(run())));
    const started = queued.catch((err: unknown): StartOutcome => {
      ctx.logger.error({ ...jobFields(env), err: describeError(err) }, 'start failed unexpectedly; retried');
      ctx.spawn(ensureStarted(ctx, env.id, { waitFirst: true }));
      return { kind: 'retry', error: describeError(err) };
    });
    // Until its lease is claimed, a start begun here is known only to this set (startIfOrphaned).
    this.beginning.add(env.id);
    void started.finally(() => this.beginning.delete(env.id));
    this.spawn(started);
    return started;
  }

  /** Runs the verifier calls of one job in the background, once per process at a time. */
  private verify(id: string): void {
    const port = this.ports.verifier;
    if (!port || this.verifying.has(id) || this.controller.signal.aborted) return;
    this.verifying.add(id);
    this.spawn(runVerification(this.ctx, id, port).finally(() => this.verifying.delete(id)));
  }

  /**
   * The Standard Webhooks secret (`whsec_…`) verifier requests for `tenant` are signed with
   * (plane/verifier.ts).
   */
  verifierSecret(tenant: string): Promise<string> {
    return tenantVerifierSecret(this.ctx, tenant);
  }

  /** Records a workflow's passed limits and, when its budget asks, cancels its open tasks. */
  private enforceWorkflow(tenant: string, workflowId: string): Promise<string[]> {
    return enforceWorkflowBudget(this.ctx, tenant, workflowId, (id, actor) =>
      cancelTask(this.ctx, id, actor),
    );
  }

  /**
   * Sets a workflow's budget (`body`: {usage?, tasks?, wallTimeMs?, cancelRunning?}); a workflow already
   * past a new limit is enforced at once.
   */
  async setWorkflowBudget(tenant: string, workflowId: string, body: unknown): Promise<WorkflowBudgetRecord> {
    checkWorkflowId('workflowId', workflowId);
    const stored = await setWorkflowBudget(this.ctx, tenant, workflowId, checkWorkflowBudgetInput(body));
    await this.enforceWorkflow(tenant, workflowId);
    await this.deadlines.arm(tenant, workflowId);
    return (await this.ctx.store.getWorkflowBudget(tenant, workflowId)) ?? stored;
  }

  /** A workflow's tasks summed per target, cost per accepted completion, and its budget's state. */
  workflow(tenant: string, workflowId: string): Promise<WorkflowView> {
    return workflowView(this.ctx, tenant, checkWorkflowId('workflowId', workflowId));
  }

  /** Usage and acceptance per target over every task (or one tenant's), for /metrics. */
  usageByTarget(tenant?: string): Promise<TargetUsage[]> {
    return this.ctx.store.summarizeUsage(tenant === undefined ? {} : { tenant });
  }

  /** The envelope when it belongs to `tenant`; another tenant's task is not found (no existence leak). */
  async get(tenant: string, id: string): Promise<Envelope> {
    const env = await this.ctx.store.getEnvelope(id);
    if (!env || env.tenant !== tenant) throw new TaskplaneError('not_found', 'task not found');
    return env;
  }

  /** The content of a task's artifacts, or of one; over the result caps it is read from the remote. */
  async artifacts(tenant: string, id: string, artifactId?: string): Promise<ArtifactContent[]> {
    return readArtifacts(this.ctx, await this.get(tenant, id), artifactId);
  }

  list(tenant: string, query: Omit<EnvelopeQuery, 'tenant'> = {}): Promise<Page<Envelope>> {
    return this.ctx.store.listEnvelopes({ ...query, tenant });
  }

  events(
    tenant: string,
    query: { afterSeq: number; envelopeId?: string; limit?: number },
  ): Promise<EnvelopeEvent[]> {
    return this.ctx.store.listEvents({ ...query, tenant });
  }

  async cancel(tenant: string, id: string, actor: string | null = null): Promise<Envelope> {
    await this.get(tenant, id);
    return cancelTask(this.ctx, id, actor);
  }

  /**
   * Calls `listener` whenever this plane writes an acceptance decision, or changes one: the schema
   * check at completion, the verifier's verdict, a person's. Decisions written by other planes sharing
   * the store are not heard here. Returns the unsubscribe.
   */
  onAcceptanceDecided(listener: (tenant: string, envelopeId: string) => void): () => void {
    this.acceptanceListeners.add(listener);
    return () => this.acceptanceListeners.delete(listener);
  }

  /** A person accepts or rejects a finished task's output (acceptance-decision.ts). */
  async decideAcceptance(tenant: string, id: string, req: AcceptanceDecision): Promise<Envelope> {
    await this.get(tenant, id);
    return decideByPerson(this.ctx, id, req);
  }

  async answer(tenant: string, id: string, req: AnswerRequest): Promise<Envelope> {
    await this.get(tenant, id);
    return answerInput(this.ctx, id, req);
  }

  handleWebhook(
    target: string,
    request: InboundWebhook & { envelopeId?: string | null },
  ): Promise<WebhookResult> {
    return handleWebhook(this.ctx, target, request);
  }

  /**
   * The API key `keyId` of `tenant` was revoked: applies `onActorRevoked` (keep | cancel) to the open
   * jobs it created, with an `actor_revoked` event on each (plane/actor-revoked.ts).
   */
  onActorRevoked(keyId: string, tenant: string): Promise<ActorRevokedReport> {
    return onActorRevoked(this.ctx, keyId, tenant);
  }

  /** The one observe path, for callers outside the engine (the API source, the lab). */
  observe(
    envelopeId: string,
    snapshot: RemoteSnapshot,
    source: ObservationSource = 'api',
  ): Promise<ObserveResult> {
    return observe(this.ctx, envelopeId, snapshot, source);
  }

  /** Runs one reconciliation round now, for one target or every target with active jobs. */
  async reconcileNow(target?: string): Promise<ReconcileReport[]> {
    const targets = target ? [target] : await this.reconciler.dueTargets();
    const reports: ReconcileReport[] = [];
    for (const t of targets) reports.push(await this.reconciler.reconcileTarget(t));
    return reports;
  }

  /**
   * `openJobs`: the signals derived from the open jobs as the caller read them earlier
   * (openJobSignals); without it they are read now, a listing of every open job of `tenant` (of every
   * tenant when it is undefined).
   */
  signals(tenant?: string, openJobs?: OpenJobSignals): Promise<PlaneSignals> {
    return collectSignals(this.ctx, tenant, openJobs);
  }

  /** Orphans and jobs waiting on a person, from a listing of every open job of every tenant (/metrics keeps it). */
  openJobSignals(): Promise<OpenJobSignals> {
    return collectOpenJobSignals(this.ctx);
  }

  /** One tenant's view of one target: last reconciliation round over its jobs, failures, delays. */
  targetActivity(tenant: string, target: string): TargetActivitySnapshot {
    return this.ctx.counters.targets.snapshot(tenant, target);
  }

  /** This process's latency histograms (start, notification delay per mechanism, stream recovery), for /metrics. */
  latencyHistograms(): LatencyHistograms {
    return this.ctx.counters.histograms();
  }

  /** Requests made for one job so far (docs/a2a-notes.md, "Cost unit"). */
  requestsFor(envelopeId: string): number {
    return this.ctx.counters.requestsFor(envelopeId);
  }

  watcherStates(): Record<string, WatcherState> {
    const out: Record<string, WatcherState> = {};
    for (const [id, w] of this.watchers) out[id] = w.state;
    return out;
  }

  private spawn(p: Promise<unknown>): void {
    const tracked = p.catch((err) =>
      this.ctx.logger.error({ err: describeError(err) }, 'background task failed'),
    );
    this.background.add(tracked);
    void tracked.finally(() => this.background.delete(tracked));
  }

  /**
   * Starts the watchers of jobs whose leases this plane already holds (recovered at start, or adopted
   * from a dead plane), TAKE_UP_WAVE at a time: each wave's first reads finish before the next wave
   * begins. Started all at once, every watcher's first reads queue on the store together; on PostgreSQL
   * those still waiting for a pooled connection past its connect timeout fail, and their watchers with
   * them.
   */
  private async takeUp(envs: readonly Envelope[]): Promise<void> {
    for (let i = 0; i < envs.length && !this.controller.signal.aborted; i += TAKE_UP_WAVE) {
      const wave = envs.slice(i, i + TAKE_UP_WAVE);
      await Promise.all(wave.map((env) => this.watch(env.id, env).catch((err) => this.notTakenUp(env, err))));
      await Promise.all(wave.map((env) => this.watchers.get(env.id)?.firstRead));
    }
  }

  /**
   * One job of a take-up or an adoption failed (its watcher did not start): logged with its id, and the
   * rest of its wave and the waves after it go on. Its lease is let go, since a lease held here counts as
   * watched and would keep every plane, this one included, from offering the job again: a later adoption
   * round (here or elsewhere) tries it anew. Reconciliation covers it meanwhile.
   */
  private notTakenUp(env: Envelope, err: unknown): void {
    this.ctx.logger.error({ envelopeId: env.id, err: describeError(err) }, 'watching a job failed');
    const watcher = this.watchers.get(env.id);
    if (watcher === undefined || watcher.state === 'done') this.spawn(this.leases.release(env.id));
  }

  /**
   * Starts the fast-path watcher of an envelope when it has none running. `claimed`: the envelope as
   * listed by a caller that already holds its lease (recovery at start), so neither is done again; only
   * its target is read here (the watcher reads the job itself before it subscribes).
   */
  private async watch(id: string, claimed?: Envelope): Promise<void> {
    if (this.controller.signal.aborted) return;
    const existing = this.watchers.get(id);
    if (existing && existing.state !== 'done') {
      existing.wake();
      return;
    }
    const env = claimed ?? (await this.ctx.store.getEnvelope(id));
    if (!env) return;
    const connector = this.ctx.connectors(env.target);
    if (!connector) return;
    const mechanism = mechanismFor(this.ctx, connector);
    if (mechanism === 'push-only') return;
    if (!claimed && !(await this.leases.claim(id))) return;
    // stop() may have begun while this waited on the store: it waits only for the watchers it saw.
    if (this.controller.signal.aborted) return;
    const raced = this.watchers.get(id);
    if (raced && raced.state !== 'done') return;
    this.startWatcher(id, mechanism);
  }

  private startWatcher(id: string, mechanism: Mechanism, startFirst?: (outcome: StartOutcome) => void): void {
    const watcher = new JobWatcher(this.ctx, id, mechanism, startFirst);
    this.watchers.set(id, watcher);
    void watcher.done.finally(() => {
      if (this.watchers.get(id) !== watcher) return;
      this.watchers.delete(id);
      // Done watching (terminal, or a poll deadline): let the lease go unless we are stopping (stop()
      // decides: release, or keep them as a crash would).
      if (!this.controller.signal.aborted) this.spawn(this.leases.release(id));
    });
  }
}
