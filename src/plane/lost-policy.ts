import type { Envelope } from '../core/envelope.ts';
import type { NotFoundMeaning } from '../connectors/connector.ts';
import { isTerminal } from '../core/states.ts';
import { jobFields, type PlaneContext } from './context.ts';
import { jobBudgetExhausted } from './budgets.ts';
import { updateLocal } from './observe.ts';

/**
 * The lost policy: what happens to a job the remote no longer knows. Resubmission goes through
 * `ctx.startAgain` (start-remote.ts, wired by the Plane), so this file does not import the start path
 * that itself reaches it through cancel delivery.
 */

/**
 * TaskNotFound on a job we created (docs/a2a-notes.md, "Failure matrix": the agent forgets the task).
 * What it means is the connector's `capabilities.notFound`; anything but `lost` is recorded as the
 * remote's lifetime rule says (recordNotFound). `lost`: the remote lost it. Policy
 * `resubmit` starts it again with the SAME messageId (a forgetful agent has no memory of it, so this
 * makes one new remote job, not a duplicate of a live one) and keeps tracking it on the same envelope;
 * `escalate`, a job being cancelled, or too many resubmissions mark it `lost` for a person.
 */
export async function handleLost(
  ctx: PlaneContext,
  envelopeId: string,
  lostRemoteId: string,
  source: string,
): Promise<'lost' | 'unknown'> {
  const current = await ctx.store.getEnvelope(envelopeId);
  const meaning = (current && ctx.connectors(current.target)?.capabilities.notFound) ?? 'lost';
  if (meaning !== 'lost') {
    await recordNotFound(ctx, envelopeId, lostRemoteId, source, meaning);
    return 'unknown';
  }
  ctx.counters.count('taskNotFoundOwn', { id: envelopeId });
  let resubmit = false;
  const { envelope, written } = await updateLocal(ctx, envelopeId, (env, now) => {
    // Only the job we believe is current can be lost; an older remote id was already replaced.
    if (isTerminal(env.state) || env.remoteId !== lostRemoteId) return null;
    const { attempts, overBudget, ...decision } = lostPolicyDecision(ctx, env);
    resubmit = decision.resubmit;
    if (!resubmit) {
      const cancel = env.cancel
        ? { ...env.cancel, outcome: env.cancel.outcome ?? ('lost' as const) }
        : env.cancel;
      const note =
        overBudget && ctx.config.lostPolicy === 'resubmit'
          ? `not found (${source}); not resubmitted: ${overBudget}`
          : `not found (${source})`;
      return {
        next: {
          ...env,
          state: 'lost',
          cancel,
          pendingInput: null,
          reconciliation: { result: 'escalated', at: now, attempts, note },
        },
        events: [
          {
            type: 'lost',
            data: {
              source,
              remoteId: lostRemoteId,
              policy: 'escalate',
              from: env.state,
              ...(overBudget ? { budget: overBudget } : {}),
            },
          },
        ],
      };
    }
    // Rebind: forget the lost remote job so the new one's first snapshot applies from a clean version.
    return {
      next: {
        ...env,
        remoteId: null,
        remoteVersion: null,
        streamCursor: null,
        pendingInput: null,
        reconciliation: { result: 'lost', at: now, attempts, note: `not found (${source})` },
      },
      events: [
        { type: 'lost', data: { source, remoteId: lostRemoteId, policy: 'resubmit', attempt: attempts } },
      ],
    };
  });
  if (!written) return 'lost';
  // One line per decision: what was lost, where we heard it, and what the policy made of it.
  ctx.logger.info(
    {
      ...jobFields(envelope),
      remoteId: lostRemoteId,
      source,
      decision: resubmit ? 'resubmit' : 'escalate',
    },
    resubmit
      ? 'remote no longer knows the job: resubmitting'
      : 'remote no longer knows the job: escalated as lost',
  );
  if (!resubmit) {
    ctx.counters.count('escalated', envelope);
    return 'lost';
  }
  const outcome = await ctx.startAgain(envelope);
  if (outcome.kind === 'started') await recordResubmitted(ctx, envelopeId);
  return 'lost';
}

/**
 * The lost policy's choice for one job: `resubmit` when configured, the job is not being cancelled, it
 * is within `maxResubmits`, and its budget is not used up (a resubmission is new remote work: a job
 * whose budget is used up is escalated instead, saying why).
 */
function lostPolicyDecision(
  ctx: PlaneContext,
  env: Envelope,
): { resubmit: boolean; attempts: number; overBudget: string | null } {
  const attempts = (env.reconciliation?.attempts ?? 0) + 1;
  const overBudget = jobBudgetExhausted(env);
  const resubmit =
    ctx.config.lostPolicy === 'resubmit' &&
    env.state !== 'cancel_requested' &&
    attempts <= ctx.config.maxResubmits &&
    !overBudget;
  return { resubmit, attempts, overBudget };
}

/** A resubmission the lost policy asked for has started on the remote: the envelope and the counters say so. */
export async function recordResubmitted(ctx: PlaneContext, envelopeId: string): Promise<void> {
  const { envelope, written } = await updateLocal(ctx, envelopeId, (env, now) => ({
    next: {
      ...env,
      reconciliation: { ...(env.reconciliation ?? { attempts: 1 }), result: 'resubmitted', at: now },
    },
    events: [{ type: 'resubmitted', data: { remoteId: env.remoteId, messageId: env.messageId } }],
  }));
  if (!written) return;
  ctx.counters.count('resubmitted', envelope);
  ctx.logger.info(
    { ...jobFields(envelope), remoteId: envelope.remoteId, decision: 'resubmitted' },
    'lost job resubmitted',
  );
  ctx.wake(envelopeId);
}

/**
 * The answer to a start was lost (the request may have reached the remote), and the remote can neither
 * find the job again nor deduplicate a resend (start-remote.ts decides that from the connector's
 * `idempotentStart` and `list`). Every connector gets this one rule; none differs.
 *
 * Why `unknown` and never `lost`: `lost` says the remote no longer knows a job, and here the remote may
 * well know it. Neither protocol guarantees that an unanswered create created nothing. MCP Tasks
 * (2026-07-28, §1.4 "strong consistency") has the server answer only after the task is durably created,
 * so an answer lost on the way back means a task exists and runs; the extension has no `tasks/list`
 * (§1.13) and `tools/call` takes no idempotency key, so it cannot be found or deduplicated. OpenAI's
 * create answers `queued` at once with nothing to deduplicate on, and no response can be looked up by
 * its metadata. So the job is `unknown` with reason `start_response_lost` (truth rule), and the lost
 * policy decides what to do about it:
 * - `resubmit` (within maxResubmits and the job's budget; returns true: the caller starts it again)
 *   knowing a second remote job may run beside the unseen one, and the note says so;
 * - otherwise it stays `unknown`, escalated, for a person, or until a delivery names the job (an OpenAI
 *   webhook carries the response whose metadata names the envelope) and binds it.
 */
export async function handleStartResponseLost(ctx: PlaneContext, envelopeId: string): Promise<boolean> {
  let resubmit = false;
  const { envelope, written } = await updateLocal(ctx, envelopeId, (env, now) => {
    if (isTerminal(env.state) || env.remoteId !== null) return null;
    // Already escalated: nothing new to record until a delivery or a person settles it.
    if (env.state === 'unknown' && env.reconciliation?.result === 'escalated') return null;
    const { attempts, overBudget, ...decision } = lostPolicyDecision(ctx, env);
    resubmit = decision.resubmit;
    const note = resubmit
      ? 'start response lost; sent again: a second remote job may run beside one never seen'
      : `start response lost; the remote can neither find the job nor deduplicate a resend${overBudget ? `; not resubmitted: ${overBudget}` : ''}`;
    return {
      next: {
        ...env,
        state: 'unknown',
        reconciliation: { result: resubmit ? 'lost' : 'escalated', at: now, attempts, note },
      },
      events: [
        {
          type: 'state_changed',
          data: {
            source: 'policy',
            from: env.state,
            to: 'unknown',
            reason: 'start_response_lost',
            policy: resubmit ? 'resubmit' : 'escalate',
            attempt: attempts,
            ...(overBudget ? { budget: overBudget } : {}),
          },
        },
      ],
    };
  });
  if (!written) return false;
  ctx.logger.warn(
    { ...jobFields(envelope), decision: resubmit ? 'resubmit' : 'escalate' },
    'start response lost and the remote can neither find the job nor deduplicate a resend',
  );
  if (!resubmit) ctx.counters.count('escalated', envelope);
  return resubmit;
}

/** What a `not_found` other than `lost` makes of one job (ConnectorCapabilities.notFound). */
interface NotFoundVerdict {
  state: 'expired' | 'unknown';
  /** The event's reason, stable for readers of the log. */
  reason: string;
  note: string;
  data?: Record<string, unknown>;
}

function notFoundVerdict(
  meaning: Exclude<NotFoundMeaning, 'lost'>,
  env: Envelope,
  now: number,
  source: string,
): NotFoundVerdict {
  if (meaning === 'expired')
    // MCP: the task was alive (we had its id from the server) and the server may drop it once its
    // ttlMs has passed: the remote's own lifetime rule, never a guessed success or failure.
    return { state: 'expired', reason: 'not_found_after_alive', note: `not found (${source}): expired` };
  if (meaning === 'unknown')
    return {
      state: 'unknown',
      reason: 'remote_not_found',
      note: `not found (${source}); deleted on the remote, outcome unknown`,
    };
  // Counted from the envelope's creation, which precedes the remote's, so never early.
  const ageMs = now - env.createdAt;
  const data = { ageMs, expiresAfterMs: meaning.expiresAfterMs };
  return ageMs >= meaning.expiresAfterMs
    ? { state: 'expired', reason: 'retention', note: `not found (${source}) past the retention window`, data }
    : {
        state: 'unknown',
        reason: 'not_found_within_retention',
        note: `not found (${source}) within the retention window; asked again`,
        data,
      };
}

/**
 * `not_found` from a remote whose not-found is not "lost" (ConnectorCapabilities.notFound): never
 * resubmitted. `expired`: the remote dropped the job by its own lifetime rule and nothing can recover
 * its outcome; a cancel asked meanwhile ends with that outcome too. `unknown`: the outcome cannot be read
 * now; a cancel intent stays visible, and the fast path and reconciliation keep asking.
 */
async function recordNotFound(
  ctx: PlaneContext,
  envelopeId: string,
  remoteId: string,
  source: string,
  meaning: Exclude<NotFoundMeaning, 'lost'>,
): Promise<void> {
  let verdict: NotFoundVerdict | null = null;
  const { envelope, written } = await updateLocal(ctx, envelopeId, (env, now) => {
    if (isTerminal(env.state) || env.remoteId !== remoteId) return null;
    const v = (verdict = notFoundVerdict(meaning, env, now, source));
    const reconciliation = {
      result: v.state === 'expired' ? ('ok' as const) : ('lost' as const),
      at: now,
      attempts: (env.reconciliation?.attempts ?? 0) + 1,
      note: v.note,
    };
    const event = {
      type: 'state_changed' as const,
      data: { source, from: env.state, to: v.state, reason: v.reason, remoteId, ...v.data },
    };
    if (v.state === 'unknown') {
      // Said once: the next not_found is no news while the job still waits for an answer.
      if (
        env.state === 'unknown' ||
        (env.state === 'cancel_requested' && env.reconciliation?.result === 'lost')
      )
        return null;
      const state = env.state === 'cancel_requested' ? env.state : 'unknown';
      return {
        next: { ...env, state, pendingInput: null, reconciliation },
        events: [{ ...event, data: { ...event.data, to: state } }],
      };
    }
    return {
      next: {
        ...env,
        state: 'expired',
        pendingInput: null,
        lastConfirmedAt: now,
        cancel: env.cancel ? { ...env.cancel, outcome: 'expired', pending: null } : env.cancel,
        error: { code: 'remote_forgot', message: 'the remote no longer knows this job (ended its lifetime)' },
        reconciliation,
      },
      events: [
        event,
        ...(env.cancel && env.cancel.outcome === null
          ? [{ type: 'cancel_outcome' as const, data: { outcome: 'expired', source } }]
          : []),
      ],
    };
  });
  if (!written || !verdict) return;
  const { state, reason } = verdict as NotFoundVerdict;
  // Past a retention window a not_found is what the remote promised, not news about our job.
  if (reason !== 'retention') ctx.counters.count('taskNotFoundOwn', envelope);
  ctx.logger.info(
    { ...jobFields(envelope), remoteId, source, state: envelope.state, reason, decision: state },
    `remote does not know the job: ${state}`,
  );
}
