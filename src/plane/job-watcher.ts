import { abortable } from './abortable-stream.ts';
import { inStreamSpan } from './tracing.ts';
import type { Envelope } from '../core/envelope.ts';
import { isTaskplaneError } from '../core/errors.ts';
import { isTerminal } from '../core/states.ts';
import { nextBackoff } from '../core/backoff.ts';
import type { Connector, RemoteSnapshot } from '../connectors/connector.ts';
import {
  connectorFor,
  describeError,
  isRetryable,
  remoteCall,
  wasNotSent,
  type PlaneContext,
  type StartOutcome,
  jobFields,
} from './context.ts';
import { observe, type ObserveResult } from './observe.ts';
import { deliverPendingCancel } from './cancel-delivery.ts';
import { handleLost } from './lost-policy.ts';
import { ensureStarted, startOnce } from './start-remote.ts';
import {
  assertMayStart,
  namingTheJob,
  noteStartAttempt,
  noteStartFailed,
  noteStarted,
  recordStartRefused,
  refusedForOurAssumption,
  startRequest,
} from './start-attempts.ts';
import { preparePush, pushEnabled } from './push-tokens.ts';
import { WakeSignal } from './wake-signal.ts';

/**
 * The fast path of one job: a stream watcher that reattaches after drops (never resends), or a poller
 * where no stream is available. Push needs no per-job loop: deliveries arrive at the webhook ingress.
 * Each watcher has an explicit state so tests, the lab and /metrics can see what it is doing.
 */
export type WatcherState = 'starting' | 'attached' | 'backing_off' | 'parked' | 'polling' | 'done';
export type Mechanism = 'stream' | 'poll' | 'push-only';

export function mechanismFor(ctx: PlaneContext, connector: Connector): Mechanism {
  const stream =
    ctx.config.delivery.stream && connector.capabilities.stream && connector.observe !== undefined;
  const push = pushEnabled(ctx, connector);
  if (stream) return 'stream';
  if (ctx.config.delivery.poll || !push) return 'poll';
  return 'push-only';
}

export class JobWatcher {
  state: WatcherState = 'starting';
  readonly done: Promise<void>;
  /** Settles once this watcher has read its job the first time (or ended): what paces a take-up. */
  readonly firstRead: Promise<void>;
  private markRead: () => void = () => {};
  private readonly wakeSignal: WakeSignal;
  /** The plane's context with this watcher's own signal: stop() ends just this watcher. */
  private readonly ctx: PlaneContext;
  private readonly stopper = new AbortController();
  /** The stream this watcher reads now and the job it follows (null before the create names it). */
  private attached: { remoteId: string | null; cut: AbortController } | null = null;
  private checking = false;
  private recheckSettled = false;
  /**
   * Inside this stream's own observe: its result says whether the job settled, and the loop ends on it;
   * a change noticed meanwhile is checked once the observe is done, unless it was this observe's own
   * write: the highest event seq noticed meanwhile (Infinity for a notice without one), against the last
   * seq that write added. Per envelope, seq order is commit order on every store.
   */
  private observing = false;
  private noticedSeq = -1;
  /**
   * The job's record as this watcher's last observe left it, while no other writer is known to have
   * touched it since: the next frame is decided against it instead of reading the record again (one
   * store read per stream event saved; a stale one only costs a failed version check and a read).
   */
  private known: Envelope | undefined;
  /** The envelope version this watcher parked at (null while not parked). */
  private parkedVersion: number | null = null;
  /** A wake() from this process (an answer, a resubmission) arrived: act on it even if nothing changed. */
  private forced = false;

  constructor(
    parent: PlaneContext,
    readonly envelopeId: string,
    readonly mechanism: Mechanism,
    /** Start the job with connector.startStream and report how the start went. */
    startFirst?: (outcome: StartOutcome) => void,
  ) {
    // Its own signal, not one linked to the plane's (AbortSignal.any keeps a signal, a weak reference and
    // a registry entry per link alive as long as the watcher): the plane's stop() stops every watcher
    // itself (plane.ts), and one made after that is stopped from the start.
    if (parent.signal.aborted) this.stopper.abort(parent.signal.reason);
    const ctx = (this.ctx = { ...parent, signal: this.stopper.signal });
    this.firstRead = new Promise<void>((resolve) => (this.markRead = resolve));
    this.wakeSignal = new WakeSignal(ctx.clock, ctx.signal);
    let reported = false;
    const report = (outcome: StartOutcome) => {
      if (reported) return;
      reported = true;
      startFirst?.(outcome);
    };
    this.done = (mechanism === 'stream' ? this.streamLoop(startFirst ? report : undefined) : this.pollLoop())
      .catch((err) => ctx.logger.error({ envelopeId, err: describeError(err) }, 'watcher failed'))
      .finally(() => {
        this.state = 'done';
        this.markRead();
        // Whoever waits on the start must never hang, whatever ended this watcher.
        report({
          kind: 'retry',
          error: { code: 'unavailable', message: 'watcher ended before the start was confirmed' },
        });
      });
  }

  /**
   * Ends this watcher: another plane took its watch lease (the plane's other work goes on), or the plane
   * stops (`reason`: the plane's own, so the watcher's calls fail as every other call of a stopping plane).
   */
  stop(reason?: unknown): void {
    this.stopper.abort(reason);
    this.attached?.cut.abort(this.stopper.signal.reason);
  }

  wake(): void {
    this.forced = true;
    this.wakeSignal.wake();
  }

  /**
   * The job's record was written by some path (this process or another sharing the store: a poll,
   * a webhook, reconciliation, an API call). When that path ended the job or bound it to another
   * remote job, the open stream has nothing left to say, and a silent one would hold this watcher (and
   * its connection) until stop(): it is cut, and the loop's next read ends or moves the watcher.
   */
  noticeChange(seq?: number): void {
    if (this.observing) {
      this.noticedSeq = Math.max(this.noticedSeq, seq ?? Number.POSITIVE_INFINITY);
      return;
    }
    this.known = undefined;
    if (!this.attached) return;
    if (this.checking) {
      this.recheckSettled = true;
      return;
    }
    this.checking = true;
    this.ctx.spawn(this.cutIfSettled());
  }

  private async cutIfSettled(): Promise<void> {
    try {
      do {
        this.recheckSettled = false;
        const attached = this.attached;
        if (!attached) return;
        // State and remote id only: this runs on every write to the job, most of them this stream's own.
        const [env] = await this.ctx.store.envelopeVersions([this.envelopeId]);
        const settled =
          !env || isTerminal(env.state) || (attached.remoteId !== null && env.remoteId !== attached.remoteId);
        if (settled && this.attached === attached) attached.cut.abort();
      } while (this.recheckSettled);
    } catch (err) {
      // The store is closing (stop()): the watcher ends with it.
      this.ctx.logger.debug({ envelopeId: this.envelopeId, err: describeError(err) }, 'settle check failed');
    } finally {
      this.checking = false;
    }
  }

  /**
   * Observes one frame of this watcher's own stream. The write it makes reaches noticeChange too; that
   * is no news to this loop, which reads the result itself, so only a change noticed meanwhile that is
   * not that write and that the result does not already settle is checked (a read per stream event
   * otherwise; cutting a stream that is ending anyway is wasted work).
   */
  private async observeOwn(snap: RemoteSnapshot, source: 'stream' | 'create'): Promise<ObserveResult> {
    this.observing = true;
    this.noticedSeq = -1;
    let result: ObserveResult | undefined;
    try {
      result = await observe(
        this.ctx,
        this.envelopeId,
        snap,
        source,
        this.known ? { known: this.known } : {},
      );
      this.known = result.envelope;
      return result;
    } finally {
      this.observing = false;
      const others = this.noticedSeq > (result?.lastSeq ?? -1);
      if (others) this.known = undefined;
      if (others && !(result && isTerminal(result.envelope.state))) this.noticeChange();
    }
  }

  /**
   * Marks a stream open; the check right after covers a change written between our read and now. The
   * stream reads with `cut.signal`, which a settled job aborts (cutIfSettled) and so does stop(), which
   * cuts whatever stream is attached; one attached after stop() starts cut.
   */
  private attach(remoteId: string | null): AbortController {
    const cut = new AbortController();
    if (this.stopper.signal.aborted) cut.abort(this.stopper.signal.reason);
    this.attached = { remoteId, cut };
    this.noticeChange();
    return cut;
  }

  /**
   * A hint that the job may have changed elsewhere (another plane's write reached the change feed, or
   * the lease round saw a newer `version`): a parked watcher reads the job again and moves on only if
   * it did change. Watchers that are attached, backing off or polling see changes on their own.
   */
  recheck(version?: number): void {
    if (this.state !== 'parked') return;
    if (version !== undefined && version === this.parkedVersion) return;
    this.wakeSignal.wake();
  }

  /** Parks until woken, a timeout or stop(), noting the version it parked at. */
  private async park(env: Envelope, ms: number): Promise<'timeout' | 'woken' | 'stopped'> {
    this.state = 'parked';
    this.parkedVersion = env.version;
    try {
      return await this.wakeSignal.wait(ms);
    } finally {
      this.parkedVersion = null;
    }
  }

  /** After a wake while parked at input: whether to look at the remote again (else park again). */
  private async inputMovedOn(parked: Envelope): Promise<boolean> {
    if (this.forced) {
      this.forced = false;
      return true;
    }
    // An answer recorded elsewhere is not yet the remote's move: wait for the state (or job) to change,
    // which the answering plane records once the remote replied.
    const now = await this.ctx.store.getEnvelope(this.envelopeId);
    return !now || now.state !== 'waiting_for_input' || now.remoteId !== parked.remoteId;
  }

  private async current(): Promise<Envelope | null> {
    try {
      const env = await this.ctx.store.getEnvelope(this.envelopeId);
      return env && !isTerminal(env.state) ? env : null;
    } finally {
      this.markRead();
    }
  }

  /**
   * After a not_found: true when the job ended or was rebound (go on at once), false when it is still
   * the same open job (`unknown` within a retention window): back off like a drop instead of spinning.
   */
  private async movedOn(remoteId: string): Promise<boolean> {
    const env = await this.ctx.store.getEnvelope(this.envelopeId);
    return !env || isTerminal(env.state) || env.remoteId !== remoteId;
  }

  /** Handles the errors every mechanism shares; returns true when the loop should continue at once. */
  private async onRemoteError(env: Envelope, err: unknown, source: 'stream' | 'poll'): Promise<boolean> {
    if (!isTaskplaneError(err)) return false;
    if (err.code === 'not_found' && env.remoteId) {
      await handleLost(this.ctx, env.id, env.remoteId, source);
      return this.movedOn(env.remoteId);
    }
    if (err.code === 'failed_precondition' && env.remoteId) {
      // A2A answers SubscribeToTask on a terminal task with UnsupportedOperationError: read it instead.
      const connector = connectorFor(this.ctx, env.target);
      const remoteId = env.remoteId;
      try {
        const snap = await remoteCall(this.ctx, 'get', env, (signal) => connector.get(remoteId, signal));
        const result = await observe(this.ctx, env.id, snap, source);
        // Still running although the remote refused to stream it: back off like a drop, never spin.
        return isTerminal(result.envelope.state) || result.envelope.remoteId !== remoteId;
      } catch (getErr) {
        if (isTaskplaneError(getErr) && getErr.code === 'not_found') {
          await handleLost(this.ctx, env.id, remoteId, source);
          return this.movedOn(remoteId);
        }
      }
    }
    return false;
  }

  /**
   * Start and stream in one call (connector.startStream). Returns true when the stream ended or
   * dropped after the job was bound (the main loop takes over, reattaching with observe), false when
   * the start outcome is unknown or refused (recovery is already arranged).
   */
  private async streamingStart(
    report: (outcome: StartOutcome) => void,
  ): Promise<'ended' | 'dropped' | 'not_started'> {
    const ctx = this.ctx;
    const env = await ctx.store.getEnvelope(this.envelopeId);
    if (!env) return 'not_started';
    const connector = connectorFor(ctx, env.target);
    let bound = false;
    let maybeSentBefore = false;
    let cut: AbortController | null = null;
    try {
      const push = await preparePush(ctx, env, connector);
      const attempt = await noteStartAttempt(ctx, env.id);
      if (!attempt.send) {
        // Bound or finished elsewhere since it was read: the main loop follows what the record says.
        report({ kind: 'settled', envelope: attempt.envelope });
        return 'not_started';
      }
      maybeSentBefore = attempt.maybeSentBefore;
      assertMayStart(ctx, env.id);
      this.state = 'attached';
      ctx.counters.request('start', env);
      ctx.startsInFlight.add(env.id);
      cut = this.attach(null);
      const signal = cut.signal;
      const stream = connector.startStream!(startRequest(env, push), signal);
      for await (const snap of inStreamSpan('start', env, abortable(connector, stream, signal))) {
        const result = await this.observeOwn(bound ? snap : namingTheJob(snap), bound ? 'stream' : 'create');
        if (!bound) {
          bound = true;
          if (this.attached) this.attached.remoteId = result.envelope.remoteId;
          ctx.startsInFlight.delete(env.id);
          await noteStarted(ctx, result.envelope);
          report({ kind: 'started', envelope: result.envelope });
          // A cancel (or a timeout) that landed while the start was in flight goes out now, beside
          // the stream, which then carries the outcome.
          ctx.spawn(deliverPendingCancel(ctx, env.id));
        }
        if (isTerminal(result.envelope.state)) break;
      }
      ctx.startsInFlight.delete(env.id);
      if (bound) return 'ended';
      report({
        kind: 'retry',
        error: { code: 'unavailable', message: 'stream ended before the first snapshot' },
      });
    } catch (err) {
      ctx.startsInFlight.delete(env.id);
      // Settled by another path while the stream was silent: nothing to recover.
      if (cut?.signal.aborted && !ctx.signal.aborted) return 'ended';
      if (bound) {
        if (ctx.signal.aborted) return 'ended';
        ctx.counters.count('streamDrops', env);
        return 'dropped';
      }
      if (!ctx.signal.aborted && !isRetryable(err)) {
        if (await refusedForOurAssumption(ctx, env, connector, err, 'streaming')) {
          ctx.logger.info(
            { envelopeId: env.id, target: env.target, err: describeError(err) },
            'streaming start refused: the agent does not stream; starting it without a stream',
          );
          const outcome = await startOnce(ctx, env, { resend: true });
          report(outcome);
          if (outcome.kind === 'retry') ctx.spawn(ensureStarted(ctx, env.id, { waitFirst: true }));
          return 'not_started';
        }
        ctx.logger.info(
          { envelopeId: env.id, target: env.target, err: describeError(err) },
          'start refused by the remote',
        );
        report({ kind: 'refused', envelope: await recordStartRefused(ctx, env, err) });
        return 'not_started';
      }
      await noteStartFailed(ctx, env.id, err, wasNotSent(err) ? maybeSentBefore : true);
      report({ kind: 'retry', error: describeError(err) });
    } finally {
      this.attached = null;
    }
    // Outcome unknown: the job may exist. Recover with the same messageId (or find it by contextId).
    ctx.spawn(ensureStarted(ctx, env.id, { waitFirst: true }));
    return 'not_started';
  }

  private async streamLoop(startFirst?: (outcome: StartOutcome) => void): Promise<void> {
    const ctx = this.ctx;
    let attempt = 0;
    let dropped = false;
    /** When the stream last dropped, until a snapshot arrives again: the stream recovery time. */
    let droppedAt: number | null = null;
    // What the previous stream did: decides whether to wait before (re)attaching.
    let last: 'none' | 'ended' | 'dropped' = 'none';
    if (startFirst) {
      const r = await this.streamingStart(startFirst);
      last = r === 'not_started' ? 'none' : r;
      dropped = r === 'dropped';
    }
    while (!ctx.signal.aborted) {
      const env = await this.current();
      if (!env) return;
      const mechanism = mechanismFor(ctx, connectorFor(ctx, env.target));
      if (mechanism !== 'stream') {
        // The remote's description says it does not stream (read after this watcher began): poll, or
        // leave it to push and reconciliation.
        return mechanism === 'poll' ? this.pollLoop() : undefined;
      }
      if (env.remoteId === null) {
        // Not started yet (or being resubmitted): whoever binds the remote id wakes us (in this
        // process directly, from another plane through the change feed or the lease round's re-check).
        if ((await this.park(env, Infinity)) === 'stopped') return;
        continue;
      }
      if (last === 'ended' && env.state === 'waiting_for_input') {
        // Servers close the stream at INPUT_REQUIRED; resubscribing at once would spin. Wait for an
        // answer through any plane (ours wakes us; another plane's reaches us as a change), a recheck if
        // configured, or reconciliation.
        const woke = await this.park(env, ctx.config.stream.waitingRecheckMs || Infinity);
        if (woke === 'stopped') return;
        if (woke === 'woken' && !(await this.inputMovedOn(env))) continue;
        last = 'none';
        continue;
      }
      if (last !== 'none') {
        // After a drop (or a server closing early while running): back off with jitter, then reattach.
        const wait =
          nextBackoff(ctx.config.stream.reattach, attempt++, ctx.random) ??
          ctx.config.stream.reattach.maximumIntervalMs;
        this.state = 'backing_off';
        if ((await this.wakeSignal.wait(wait)) === 'stopped') return;
        last = 'none';
        continue;
      }
      const connector = connectorFor(ctx, env.target);
      const remoteId = env.remoteId;
      this.state = 'attached';
      // This subscription shows the job as it is now: an earlier wake has been acted on.
      this.forced = false;
      const cut = this.attach(remoteId);
      try {
        if (dropped) ctx.counters.count('reattaches', env);
        ctx.counters.request('subscribe', env);
        const signal = cut.signal;
        const stream = connector.observe!(remoteId, env.streamCursor, signal);
        for await (const snap of inStreamSpan('subscribe', env, abortable(connector, stream, signal))) {
          attempt = 0;
          if (droppedAt !== null) ctx.counters.recovered(ctx.clock.now() - droppedAt);
          droppedAt = null;
          dropped = false;
          const result = await this.observeOwn(snap, 'stream');
          if (isTerminal(result.envelope.state) || result.envelope.remoteId !== remoteId) break;
        }
        last = 'ended';
      } catch (err) {
        if (ctx.signal.aborted) return;
        // Cut because the job settled by another path: the next read ends (or moves) the watcher.
        if (cut.signal.aborted) continue;
        ctx.logger.debug({ ...jobFields(env), err: describeError(err) }, 'stream ended with error');
        if (await this.onRemoteError(env, err, 'stream')) continue;
        ctx.counters.count('streamDrops', env);
        dropped = true;
        droppedAt ??= ctx.clock.now();
        last = 'dropped';
      } finally {
        this.attached = null;
      }
    }
  }

  private async pollLoop(): Promise<void> {
    const ctx = this.ctx;
    const cfg = ctx.config.poll;
    let interval: number | null = null;
    let errors = 0;
    while (!ctx.signal.aborted) {
      const env = await this.current();
      if (!env) return;
      const connector = connectorFor(ctx, env.target);
      if (interval === null) interval = Math.max(cfg.intervalMs, connector.capabilities.pollIntervalMs ?? 0);
      if (cfg.deadlineMs !== null && ctx.clock.now() - env.createdAt > cfg.deadlineMs) {
        // Past the deadline the poller stops; reconciliation still covers the job (never invent an outcome).
        ctx.logger.info(jobFields(env), 'poll deadline reached');
        return;
      }
      const jitter = 1 + cfg.jitterRatio * (2 * ctx.random.next() - 1);
      this.state = env.remoteId === null ? 'parked' : 'polling';
      // Jitter spreads the polls but never below the server's own guidance (MCP pollIntervalMs).
      const wait =
        errors > 0
          ? (nextBackoff(cfg.errorBackoff, errors - 1, ctx.random) ?? cfg.maximumIntervalMs)
          : Math.max(interval * jitter, connector.capabilities.pollIntervalMs ?? 0);
      if ((await this.wakeSignal.wait(env.remoteId === null ? Infinity : wait)) === 'stopped') return;
      const fresh = await this.current();
      if (!fresh || fresh.remoteId === null) continue;
      const remoteId = fresh.remoteId;
      try {
        const snap = await remoteCall(ctx, 'get', fresh, (signal) => connector.get(remoteId, signal));
        const result = await observe(ctx, fresh.id, snap, 'poll');
        errors = 0;
        const guidance = connector.capabilities.pollIntervalMs ?? 0;
        interval = result.changed
          ? Math.max(cfg.intervalMs, guidance)
          : Math.min(cfg.maximumIntervalMs, Math.max(interval * cfg.multiplier, guidance));
      } catch (err) {
        if (ctx.signal.aborted) return;
        ctx.logger.debug({ ...jobFields(fresh), err: describeError(err) }, 'poll failed');
        if (await this.onRemoteError(fresh, err, 'poll')) continue;
        errors++;
      }
    }
  }
}
