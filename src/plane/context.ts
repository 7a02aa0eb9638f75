import type { SchemaCompiler } from './acceptance.ts';
import type { Clock } from '../core/clock.ts';
import type { Logger } from '../core/logger.ts';
import type { Random } from '../core/random.ts';
import type { Envelope } from '../core/envelope.ts';
import { TaskplaneError, isTaskplaneError } from '../core/errors.ts';
import type { EnvelopeStore } from '../store/store.ts';
import type { Connector } from '../connectors/connector.ts';
import type { PlaneConfig } from './options.ts';
import type { HeardLog } from './heard-log.ts';
import type { NextTurn } from './turns.ts';
import type { RequestKind, SignalCounters } from './signals.ts';
import { inRemoteCallSpan } from './tracing.ts';

/** Resolves a target name to its connector; throws `not_found` (or returns undefined) for unknown targets. */
export type ConnectorResolver = (target: string) => Connector | undefined;

/** What every engine part shares. Built once by Plane. */
export interface PlaneContext {
  clock: Clock;
  random: Random;
  store: EnvelopeStore;
  connectors: ConnectorResolver;
  logger: Logger;
  config: PlaneConfig;
  counters: SignalCounters;
  /** Aborted by Plane.stop(); every wait and remote call is tied to it. */
  signal: AbortSignal;
  /** Wakes the watcher of one envelope (after an answer, a resubmission, a state change from elsewhere). */
  wake(envelopeId: string): void;
  /** (Re)starts the fast-path watchers of an envelope if it has none. */
  ensureWatching(envelopeId: string): void;
  /** True while a stream watcher is attached to this envelope's remote job (it sees every change). */
  streamAttached(envelopeId: string): boolean;
  /** Runs background work that stop() waits for (it must end when `signal` aborts). */
  spawn(work: Promise<unknown>): void;
  /**
   * The interface revision last seen per target (Connector.revision). A change seen after a remote
   * call means the connector moved to another interface of a redeployed remote: `onRevision` records
   * it on the target's open jobs.
   */
  revisions: Map<string, { connector: Connector; revision: string | null }>;
  /**
   * Envelopes whose start call is in flight in this process. Recovery leaves them alone: the call's
   * own answer binds the job (and sends a cancel asked meanwhile); a second start beside it could
   * create a second remote job where the remote does not deduplicate.
   */
  startsInFlight: Set<string>;
  /**
   * Whether this plane may send a job's start now: always with watch leases off; with them on, only
   * while it holds the job's lease and last claimed or renewed it within two thirds of its time to live
   * (WatchLeases.fresh). A plane that stalled past that (a long pause, a lost store) may have had the job
   * adopted by another plane that started it and addressed the remote task since, after which an agent
   * may take the same message as new (our host does: docs/host.md, "Idempotent sends").
   */
  mayStart(envelopeId: string): boolean;
  /**
   * When the remote's word about each open job last came in by a path other than reconciliation
   * (start, stream, push, poll, an answer or cancel): observe notes it, the reconciler skips jobs heard
   * of within its interval.
   */
  heard: HeardLog;
  onRevision(target: string, from: string | null, to: string | null): void;
  /**
   * Starts a lost job again with its same messageId (start-remote.ts startOnce); when that attempt
   * cannot tell, keeps retrying in the background (ensureStarted). Wired by the Plane, so the lost
   * policy reaches the start path without importing it.
   */
  startAgain(envelope: Envelope): Promise<StartOutcome>;
  /** Runs a function on a later turn of the event loop (PlanePorts.nextTurn), or null: never wait. */
  nextTurn: NextTurn | null;
  /** Compiles acceptance schemas off the event loop, when the plane was given one (PlanePorts). */
  schemaCompiler?: SchemaCompiler;
  /**
   * An observation changed a job's usage. Wired by the Plane to the running-budget check (budgets.ts
   * `enforceRunningBudgets`) when `budgets.cancelRunning` is on, and to its workflow's budget
   * (workflow-budgets.ts) when the job has a workflow. Optional.
   */
  onUsage?(envelope: Envelope): void;
  /**
   * A write decided a job's acceptance, or changed a decision (the schema check at completion, the
   * verifier, a person): the Plane tells its `onAcceptanceDecided` listeners. Optional.
   */
  onAcceptance?(envelope: Envelope): void;
  /** A job's acceptance verifier call became due (plane/verifier.ts); wired by the Plane. Optional. */
  onVerificationDue?(envelopeId: string): void;
}

export type StartOutcome =
  | { kind: 'started'; envelope: Envelope }
  /** Nothing sent: by the time the start would have gone out, the job was bound or finished elsewhere. */
  | { kind: 'settled'; envelope: Envelope }
  | { kind: 'retry'; error: { code: string; message: string } }
  | { kind: 'refused'; envelope: Envelope };

export function connectorFor(ctx: PlaneContext, target: string): Connector {
  const connector = ctx.connectors(target);
  if (!connector) {
    throw new TaskplaneError('invalid_argument', `target: unknown target '${target}'`, { field: 'target' });
  }
  if (!ctx.revisions.has(target))
    ctx.revisions.set(target, { connector, revision: connector.revision ?? null });
  return connector;
}

/** Compares every known target's interface revision with the last one seen; reports the moves. */
export function noteRevisions(ctx: PlaneContext): void {
  for (const [target, seen] of ctx.revisions) {
    const now = seen.connector.revision ?? null;
    if (now === seen.revision) continue;
    const from = seen.revision;
    seen.revision = now;
    // The first read of a description is learning it, not a change.
    if (from !== null) ctx.onRevision(target, from, now);
  }
}

/**
 * A signal that aborts with `parent` (and with any of `others`) without adding a listener to `parent`.
 * The engine's signal is shared by every watcher, wait and call; one `addEventListener` per in-flight
 * call put 50 listeners on it with 50 calls in flight, and Node printed MaxListenersExceededWarning past
 * 10. AbortSignal.any links the child through the parent's internal dependant set instead (no listener,
 * held weakly), so the parent's listener count stays flat however many calls run.
 */
export function childSignal(parent: AbortSignal, ...others: AbortSignal[]): AbortSignal {
  return AbortSignal.any([parent, ...others]);
}

/**
 * Every remote call goes through here: counted as one request (docs/a2a-notes.md, "Cost unit"), bounded by the
 * per-call timeout, and cut short by stop(). A timeout surfaces as a retryable `timeout` error.
 */
export async function remoteCall<T>(
  ctx: PlaneContext,
  /** null: not a per-job request (reading a remote's description, cached per target). */
  kind: RequestKind | null,
  envelope: Pick<Envelope, 'id' | 'tenant'> | null,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  if (kind) ctx.counters.request(kind, envelope);
  const timeout = new AbortController();
  let timedOut = false;
  const cancelTimer = ctx.clock.setTimer(ctx.config.requestTimeoutMs, () => {
    timedOut = true;
    timeout.abort(new TaskplaneError('timeout', `${kind ?? 'call'} timed out`));
  });
  try {
    const signal = childSignal(ctx.signal, timeout.signal);
    return await inRemoteCallSpan(kind ?? 'describe', envelope, () => fn(signal));
  } catch (err) {
    if (timedOut && !isTaskplaneError(err))
      throw new TaskplaneError('timeout', `${kind ?? 'call'} timed out`, { cause: err });
    throw err;
  } finally {
    cancelTimer();
    noteRevisions(ctx);
  }
}

/** Waits `ms` on the clock; resolves early (false) when `signal` aborts instead of throwing. */
export async function waitFor(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false;
  try {
    await clock.sleep(Math.max(0, Math.round(ms)), childSignal(signal));
    return true;
  } catch {
    return false;
  }
}

/** An error's stable code, `internal` for anything that is not ours. */
export function errorCode(err: unknown): string {
  return isTaskplaneError(err) ? err.code : 'internal';
}

export function isRetryable(err: unknown): boolean {
  return isTaskplaneError(err) ? err.retryable : true;
}

/** The remote answered, but not as the protocol: its route is gone or moved (connector.ts). */
export function isRouteTrouble(err: unknown): boolean {
  return isTaskplaneError(err) && err.details?.route === 'not_protocol';
}

/** Refused before anything was sent: the remote certainly never got the request. */
export function wasNotSent(err: unknown): boolean {
  return isTaskplaneError(err) && err.details?.notSent === true;
}

/** Short, safe description of an error for logs and events: never raw internal text from elsewhere. */
export function describeError(err: unknown): { code: string; message: string } {
  if (isTaskplaneError(err)) return { code: err.code, message: err.message };
  return { code: 'internal', message: 'unexpected error' };
}

/** The fields every log line about a job carries, so an operator can filter one job, target or tenant. */
export function jobFields(env: Pick<Envelope, 'id' | 'target' | 'tenant'>): {
  envelopeId: string;
  target: string;
  tenant: string;
} {
  return { envelopeId: env.id, target: env.target, tenant: env.tenant };
}
