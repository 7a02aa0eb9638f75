import type { Envelope } from '../core/envelope.ts';
import { isTerminal } from '../core/states.ts';
import { TaskplaneError, isTaskplaneError } from '../core/errors.ts';
import { connectorFor, describeError, jobFields, remoteCall, type PlaneContext } from './context.ts';
import { observe, updateLocal } from './observe.ts';
import { handleLost } from './lost-policy.ts';

/**
 * Cancel delivery: cancel intent is recorded first (answer-and-cancel.ts) and delivered here as soon as
 * the remote job is known, again by recovery and reconciliation until the remote acknowledges it or
 * the job is terminal.
 */

/**
 * A cancel asked before the remote id was known (or not yet acknowledged) is sent now that it is:
 * cancel intent is durable and re-driven until the remote acknowledges it or the job is terminal.
 */
export async function deliverPendingCancel(
  ctx: PlaneContext,
  envelopeId: string,
  known?: Envelope,
): Promise<Envelope> {
  const env = known ?? (await ctx.store.getEnvelope(envelopeId));
  if (!env) throw new TaskplaneError('not_found', 'task not found');
  if (!cancelUndelivered(env)) return env;
  return sendCancel(ctx, envelopeId);
}

/** Cancel intent recorded, the remote job known, and no acknowledgement yet. */
export function cancelUndelivered(env: Envelope): boolean {
  return (
    env.state === 'cancel_requested' &&
    env.remoteId !== null &&
    !!env.cancel &&
    env.cancel.acknowledgedAt === null
  );
}

/**
 * Asks the remote to cancel a job whose cancel intent is recorded, keeps observing, and records the
 * acknowledgement. Not cancelable (already finished) → read and record what it really ended as.
 */
export async function sendCancel(ctx: PlaneContext, envelopeId: string): Promise<Envelope> {
  const envelope = await ctx.store.getEnvelope(envelopeId);
  if (!envelope?.remoteId) throw new TaskplaneError('not_found', 'task not found');
  const connector = connectorFor(ctx, envelope.target);
  if (!connector.cancel) {
    ctx.logger.warn(
      { ...jobFields(envelope), decision: 'kept' },
      'cancel not sent: the target has no cancel; the intent stays recorded',
    );
    return envelope;
  }
  const remoteId = envelope.remoteId;
  await updateLocal(ctx, envelopeId, (env) =>
    env.cancel && env.cancel.acknowledgedAt === null
      ? {
          next: {
            ...env,
            cancel: { ...env.cancel, attempts: (env.cancel.attempts ?? 0) + 1, pending: 'delivery' },
          },
          events: [],
        }
      : null,
  );
  try {
    const snap = await remoteCall(ctx, 'cancel', envelope, (signal) => connector.cancel!(remoteId, signal));
    await updateLocal(ctx, envelopeId, (env, now) =>
      env.cancel && env.cancel.acknowledgedAt === null
        ? {
            next: {
              ...env,
              cancel: {
                ...env.cancel,
                acknowledgedAt: now,
                pending: isTerminal(env.state) ? null : 'outcome',
              },
              lastError: env.lastError?.during === 'cancel' ? null : (env.lastError ?? null),
            },
            events: [{ type: 'cancel_acknowledged', data: { remoteId } }],
          }
        : null,
    );
    ctx.logger.info({ ...jobFields(envelope), remoteId, decision: 'delivered' }, 'cancel delivered');
    const result = await observe(ctx, envelopeId, snap, 'api');
    ctx.wake(envelopeId);
    return result.envelope;
  } catch (err) {
    if (isTaskplaneError(err) && err.code === 'failed_precondition') {
      ctx.logger.info(
        { ...jobFields(envelope), remoteId, decision: 'read_outcome' },
        'cancel refused as not cancelable; reading what the job ended as',
      );
      const snap = await remoteCall(ctx, 'get', envelope, (signal) => connector.get(remoteId, signal));
      return (await observe(ctx, envelopeId, snap, 'api')).envelope;
    }
    if (isTaskplaneError(err) && err.code === 'not_found') {
      ctx.logger.info(
        { ...jobFields(envelope), remoteId, decision: 'not_found' },
        'cancel answered not found; the lost policy decides',
      );
      await handleLost(ctx, envelopeId, remoteId, 'api');
      return (await ctx.store.getEnvelope(envelopeId)) ?? envelope;
    }
    // Transport trouble: the intent stays recorded and undelivered; recovery and reconciliation send
    // it again, and the job is still watched, so its outcome will be learned.
    const error = describeError(err);
    ctx.logger.warn(
      { ...jobFields(envelope), err: error, decision: 'retry' },
      'cancel call failed; will be sent again',
    );
    const { envelope: after } = await updateLocal(ctx, envelopeId, (env, now) =>
      isTerminal(env.state)
        ? null
        : { next: { ...env, lastError: { ...error, at: now, during: 'cancel' } }, events: [] },
    );
    return after;
  }
}
