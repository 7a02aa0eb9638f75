import type { Envelope } from '../core/envelope.ts';
import { TaskplaneError, isTaskplaneError, unreadableAnswer } from '../core/errors.ts';
import { isTerminal } from '../core/states.ts';
import type { Connector, PushRegistration, RemoteSnapshot, StartRequest } from '../connectors/connector.ts';
import { describeError, remoteCall, type PlaneContext } from './context.ts';
import { observe, updateLocal } from './observe.ts';

/**
 * What one start attempt writes around its call: the attempt count and whether the request may have
 * reached the remote (before), the error and the doubt (after a failure), the refusal (the remote's
 * own word), and what to do when a refusal came from our own wrong assumption about the remote.
 */

export function startRequest(env: Envelope, push: PushRegistration | undefined): StartRequest {
  return {
    envelopeId: env.id,
    messageId: env.messageId ?? env.id,
    contextId: env.contextId,
    input: env.input,
    ...(push ? { push } : {}),
    ...(env.budget ? { budget: env.budget } : {}),
  };
}

/**
 * A start's first snapshot must name the remote job. One that does not (an answer a connector let
 * through unread) may come from a job that exists all the same: an unreadable answer, a failed attempt
 * that may have been sent, never a start bound to nothing.
 */
export function namingTheJob(snapshot: RemoteSnapshot): RemoteSnapshot {
  if (typeof snapshot.remoteId === 'string' && snapshot.remoteId !== '') return snapshot;
  throw unreadableAnswer('the start answer names no job');
}

/** The remote refused the start outright (not a transport failure): the job failed, with its reason. */
export async function recordStartRefused(ctx: PlaneContext, env: Envelope, err: unknown): Promise<Envelope> {
  const error = describeError(err);
  const result = await observe(
    ctx,
    env.id,
    {
      remoteId: env.remoteId ?? '',
      contextId: env.contextId,
      state: 'failed',
      nativeState: 'start_refused',
      remoteVersion: null,
      stateTimestamp: null,
      error,
    },
    'create',
  );
  return result.envelope;
}

/**
 * Learns what the engine must know about the remote before choosing how to start (Connector.prepare:
 * the A2A card). Bounded like any remote call; throws like one. Nothing at all (no timer, no span) once
 * the connector holds what it learned and it is still valid.
 */
export async function prepareConnector(
  ctx: PlaneContext,
  env: Envelope,
  connector: Connector,
): Promise<void> {
  if (!connector.prepare || connector.prepared?.()) return;
  await remoteCall(ctx, null, env, (signal) => connector.prepare!(signal));
}

/** What noteStartAttempt found: go ahead (and whether an earlier attempt may have been sent), or not. */
export type StartAttempt = { send: true; maybeSentBefore: boolean } | { send: false; envelope: Envelope };

/**
 * Written before each start call: one more attempt, and the request may reach the remote from now on.
 * `maybeSentBefore` says whether an earlier attempt may have reached it, to restore when this one is
 * refused unsent. On the stored record, in the same write (a version check): a job that is bound to a
 * remote job by now, or finished, is not sent again (`send: false`). The caller may have read the job
 * before another plane bound it (a slow list, a lease taken over from a stalled plane); that plane may
 * have addressed the remote job by its id since, after which an agent may take the same message as new
 * (our host does: docs/host.md, "Idempotent sends") and a resend would start a second job.
 */
export async function noteStartAttempt(ctx: PlaneContext, envelopeId: string): Promise<StartAttempt> {
  let before = false;
  const { envelope, written } = await updateLocal(ctx, envelopeId, (env) => {
    if (env.remoteId !== null || isTerminal(env.state)) return null;
    before = env.startMaybeSent ?? (env.startAttempts ?? 0) > 0;
    return {
      next: { ...env, startAttempts: (env.startAttempts ?? 0) + 1, startMaybeSent: true, nextRetryAt: null },
      events: [],
    };
  });
  return written ? { send: true, maybeSentBefore: before } : { send: false, envelope };
}

/**
 * Checked right before a start is sent (after the awaits that precede it, any of which a stalled process
 * may sit in): a plane whose watch lease on the job is too old to trust does not send (PlaneContext.
 * mayStart). Thrown as a retryable failure marked not sent, so the attempt is recorded as one that never
 * reached the remote and the start is retried once the lease is renewed, or by the plane that took the
 * job over (which then finds it bound, or starts it itself).
 */
export function assertMayStart(ctx: PlaneContext, envelopeId: string): void {
  if (ctx.mayStart(envelopeId)) return;
  throw new TaskplaneError(
    'unavailable',
    "start not sent: this plane's watch lease on the job is too old to trust (the plane stalled or lost its store); it is sent once the lease is renewed, or by the plane that took the job over",
    { retryable: true, details: { notSent: true } },
  );
}

/** A start attempt failed: what went wrong stays on the envelope for the caller to read. */
export async function noteStartFailed(
  ctx: PlaneContext,
  envelopeId: string,
  err: unknown,
  /** Whether a start may have reached the remote, counting this attempt. */
  maybeSent: boolean,
): Promise<void> {
  const error = describeError(err);
  await updateLocal(ctx, envelopeId, (env, now) =>
    isTerminal(env.state) || env.remoteId !== null
      ? null
      : {
          next: {
            ...env,
            lastError: { ...error, at: now, during: 'start' },
            startMaybeSent: maybeSent,
          },
          events: [],
        },
  );
}

/** A failed start attempt's marks on the record: its error, and when the next attempt is due. */
const startMarked = (env: Envelope): boolean => env.lastError?.during === 'start' || !!env.nextRetryAt;

/** The start answered: the error of an earlier attempt no longer describes the job. */
export async function noteStarted(ctx: PlaneContext, job: Envelope): Promise<void> {
  ctx.counters.started(ctx.clock.now() - job.createdAt);
  // `job` is the record as the start's own observation left it: with no failed attempt on it there is
  // nothing to clear, and no read to make.
  if (!startMarked(job)) return;
  await updateLocal(ctx, job.id, (env) =>
    startMarked(env) ? { next: { ...env, lastError: null, nextRetryAt: null }, events: [] } : null,
  );
}

/**
 * A refusal caused by our own wrong assumption about the remote (it does not stream, after all): the
 * start is retried the right way, never recorded as the job's outcome. The description is read again
 * first, so the next attempt chooses by what the remote says now.
 */
export async function refusedForOurAssumption(
  ctx: PlaneContext,
  env: Envelope,
  connector: Connector,
  err: unknown,
  assumed: 'streaming',
): Promise<boolean> {
  if (!isTaskplaneError(err)) return false;
  if (err.details?.assumption === assumed) return true;
  if (err.code !== 'failed_precondition' && err.code !== 'unsupported') return false;
  if (!connector.prepare) return false;
  try {
    await remoteCall(ctx, null, env, (signal) => connector.prepare!(signal, { fresh: true }));
  } catch {
    return false;
  }
  return assumed === 'streaming' && !connector.capabilities.stream;
}
