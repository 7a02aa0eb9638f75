import { withAnswer, type Envelope, type PendingInput, type PendingRequest } from '../core/envelope.ts';
import { TaskplaneError, isTaskplaneError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import { decideLocalTransition, isTerminal } from '../core/states.ts';
import { connectorFor, describeError, remoteCall, type PlaneContext } from './context.ts';
import { observe, updateLocal } from './observe.ts';
import { jobBudgetExhausted, refuseForBudget } from './budgets.ts';
import { cancelUndelivered, sendCancel } from './cancel-delivery.ts';
import { handleLost } from './lost-policy.ts';

/**
 * Answering input and cancelling: both are local intents recorded durably BEFORE the remote call, so
 * the record shows what was asked even when the call is lost, and a second caller racing the first
 * loses on the version check (409) instead of sending a second answer.
 */

export interface AnswerRequest {
  requestId: string;
  value: unknown;
  actor?: string | null;
}

/** An answer kept in the event log up to this size (JSON characters); the timeline shows what was answered. */
const LOGGED_ANSWER_CHARS = 4096;

/** The answer as the input_answered event keeps it: the value when small, else only its size. */
function answerForLog(value: unknown): { value: unknown } | { valueChars: number } {
  const text = JSON.stringify(value ?? null);
  return text.length <= LOGGED_ANSWER_CHARS ? { value: value ?? null } : { valueChars: text.length };
}

export async function answerInput(
  ctx: PlaneContext,
  envelopeId: string,
  req: AnswerRequest,
): Promise<Envelope> {
  if (typeof req.requestId !== 'string' || req.requestId === '') {
    throw new TaskplaneError('invalid_argument', 'requestId: required', { field: 'requestId' });
  }
  const current = await ctx.store.getEnvelope(envelopeId);
  if (!current) throw new TaskplaneError('not_found', 'task not found');
  const connector = connectorFor(ctx, current.target);
  if (!connector.answer) throw new TaskplaneError('unsupported', 'target does not take input answers');
  // An answer lets the job go on spending: refused (and recorded) once its budget is used up, unless
  // the answer is the budget raise itself (a `budget` request), which also raises the job's own cap.
  const asked = current.pendingInput ? pendingEntry(current.pendingInput, req.requestId) : undefined;
  const raise = asked?.method === 'budget' ? raisedLimit(req.value) : null;
  const overBudget = jobBudgetExhausted(current);
  if (overBudget && asked && asked.method !== 'budget')
    await refuseForBudget(ctx, envelopeId, 'answer', overBudget);
  const messageId = newId(ctx.clock, ctx.random, 'msg_');
  const { envelope } = await updateLocal(ctx, envelopeId, (env, now) => {
    const pending = env.pendingInput;
    if (isTerminal(env.state) || !pending) {
      throw new TaskplaneError('conflict', 'no input is pending for this task', { field: 'requestId' });
    }
    const entry = pendingEntry(pending, req.requestId);
    // Name what is still open, so a caller holding a stale key knows which to answer.
    const open = (pending.requests ?? [pending]).filter((r) => !r.answeredAt).map((r) => r.requestId);
    const outstanding = `(outstanding: ${open.join(', ') || 'none'})`;
    if (!entry) {
      throw new TaskplaneError(
        'conflict',
        `requestId: '${req.requestId}' is not an outstanding input request of this task ${outstanding}`,
        { field: 'requestId' },
      );
    }
    if (entry.answeredAt)
      throw new TaskplaneError(
        'conflict',
        `requestId: '${req.requestId}' was already answered ${outstanding}`,
        {
          field: 'requestId',
        },
      );
    if (!env.remoteId) throw new TaskplaneError('failed_precondition', 'task has no remote job yet');
    const budget =
      raise !== null && env.budget && raise > env.budget.limit ? { ...env.budget, limit: raise } : env.budget;
    return {
      next: {
        ...env,
        budget,
        pendingInput: withAnswer(pending, req.requestId, now, { messageId, value: req.value }),
      },
      events: [
        {
          type: 'input_answered',
          data: {
            requestId: entry.requestId,
            messageId,
            actor: req.actor ?? null,
            ...answerForLog(req.value),
          },
        },
      ],
    };
  });
  const remoteId = envelope.remoteId!;
  try {
    const snap = await remoteCall(ctx, 'answer', envelope, (signal) =>
      connector.answer!(
        remoteId,
        { requestId: req.requestId, messageId, value: req.value, cursor: envelope.streamCursor },
        signal,
      ),
    );
    const result = await observe(ctx, envelopeId, snap, 'api');
    ctx.wake(envelopeId);
    return result.envelope;
  } catch (err) {
    if (isTaskplaneError(err) && err.code === 'not_found') await handleLost(ctx, envelopeId, remoteId, 'api');
    // The answer did not reach the remote: reopen the request so the caller can try again.
    await updateLocal(ctx, envelopeId, (env) =>
      env.pendingInput && pendingEntry(env.pendingInput, req.requestId)?.answeredAt
        ? {
            next: { ...env, pendingInput: withAnswer(env.pendingInput, req.requestId, null, null) },
            events: [
              { type: 'input_answer_failed', data: { requestId: req.requestId, error: describeError(err) } },
            ],
          }
        : env.pendingInput?.requestId === req.requestId && env.pendingInput.answeredAt
          ? {
              next: { ...env, pendingInput: { ...env.pendingInput, answeredAt: null, answer: null } },
              events: [
                {
                  type: 'input_answer_failed',
                  data: { requestId: req.requestId, error: describeError(err) },
                },
              ],
            }
          : null,
    );
    throw err;
  }
}

/**
 * Sends a recorded answer again when its delivery is uncertain: the answer was recorded (answeredAt,
 * with its messageId and value) but the remote still waits on the same request, e.g. because the plane
 * was killed between recording it and the call. The same messageId makes the resend idempotent on an
 * agent that deduplicates (ours does); on one that does not, the follow-up reaches a task that no
 * longer waits and is ignored. Returns true when an answer was sent.
 */
export async function resendAnswer(ctx: PlaneContext, envelopeId: string): Promise<boolean> {
  const env = await ctx.store.getEnvelope(envelopeId);
  const pending = env?.pendingInput;
  if (!env || !pending || env.state !== 'waiting_for_input' || !env.remoteId) return false;
  const sent = answeredEntries(pending);
  if (sent.length === 0) return false;
  const connector = connectorFor(ctx, env.target);
  if (!connector.answer) return false;
  const remoteId = env.remoteId;
  try {
    // Authoritative state first: the job may have taken the answer and moved on while we were away.
    const current = await remoteCall(ctx, 'get', env, (signal) => connector.get(remoteId, signal));
    const seen = await observe(ctx, envelopeId, current, 'reconcile');
    if (seen.envelope.state !== 'waiting_for_input' || !seen.envelope.pendingInput) return false;
    const still = seen.envelope.pendingInput;
    let resent = false;
    for (const entry of sent) {
      if (!pendingEntry(still, entry.requestId)) continue;
      const { messageId, value } = entry.answer!;
      const snap = await remoteCall(ctx, 'answer', env, (signal) =>
        connector.answer!(
          remoteId,
          { requestId: entry.requestId, messageId, value, cursor: seen.envelope.streamCursor },
          signal,
        ),
      );
      await observe(ctx, envelopeId, snap, 'api');
      resent = true;
    }
    if (resent) ctx.wake(envelopeId);
    return resent;
  } catch (err) {
    if (isTaskplaneError(err) && err.code === 'not_found') await handleLost(ctx, envelopeId, remoteId, 'api');
    else ctx.logger.warn({ envelopeId, err: describeError(err) }, 'resending an input answer failed');
    return false;
  }
}

/** Answered but still waiting for longer than a call can take: the answer's delivery is in doubt. */
export function answerInDoubt(env: Envelope, now: number, afterMs: number): boolean {
  const p = env.pendingInput;
  return (
    env.state === 'waiting_for_input' &&
    !!p &&
    answeredEntries(p).some((e) => e.answeredAt != null && now - e.answeredAt >= afterMs)
  );
}

/** The one request of a pending input with this key: one of several, or its only one. */
function pendingEntry(p: PendingInput, requestId: string): PendingInput | PendingRequest | undefined {
  if (p.requests) return p.requests.find((r) => r.requestId === requestId);
  return p.requestId === requestId ? p : undefined;
}

/** Requests answered (with the answer kept for a resend) but still listed as pending. */
function answeredEntries(p: PendingInput): Array<PendingInput | PendingRequest> {
  return (p.requests ?? [p]).filter((e) => !!e.answer && e.answeredAt != null);
}

/** A `budget` request's answer: the new limit, a number or `{limit}`; null when it is neither. */
function raisedLimit(value: unknown): number | null {
  const n = typeof value === 'number' ? value : (value as { limit?: unknown } | null)?.limit;
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? n : null;
}

/**
 * Records the cancel intent durably, then sends it when the remote id is known. Before that (a start
 * still in flight) the start path sends it as soon as the id is known; recovery and reconciliation send
 * it again until the remote acknowledges it or the job is terminal. A repeated cancel is idempotent: it
 * changes nothing, re-drives an undelivered cancel, and `cancel.pending` says what is still awaited.
 */
export async function cancelTask(
  ctx: PlaneContext,
  envelopeId: string,
  actor: string | null,
): Promise<Envelope> {
  const { envelope, written } = await updateLocal(ctx, envelopeId, (env, now) => {
    if (env.state === 'cancel_requested') return null;
    const decision = decideLocalTransition(
      { state: env.state, nativeState: env.nativeState, remoteVersion: env.remoteVersion },
      'cancel_requested',
    );
    if (!decision.apply)
      throw new TaskplaneError('conflict', `task is already ${env.state}`, { field: 'state' });
    return {
      next: {
        ...env,
        state: 'cancel_requested',
        cancel: {
          requestedAt: now,
          requestedBy: actor,
          acknowledgedAt: null,
          outcome: null,
          pending: env.remoteId ? 'delivery' : 'remote_id',
          attempts: 0,
        },
      },
      events: [{ type: 'cancel_requested', data: { from: env.state, actor } }],
    };
  });
  if (!written) return cancelUndelivered(envelope) ? sendCancel(ctx, envelopeId) : envelope;
  ctx.logger.info(
    { envelopeId, target: envelope.target, actor, pending: envelope.cancel?.pending ?? null },
    'cancel requested',
  );
  if (!envelope.remoteId) return envelope;
  return sendCancel(ctx, envelopeId);
}
