import type { Envelope } from '../core/envelope.ts';
import { isTerminal } from '../core/states.ts';
import { type PlaneContext } from './context.ts';
import { jobBudgetExhausted } from './budgets.ts';
import { updateLocal } from './observe.ts';

/**
 * The lost policy: what happens to a job the remote no longer knows. Resubmission goes through
 * `ctx.startAgain` (start-remote.ts, wired by the Plane), so this file does not import the start path
 * that itself reaches it through cancel delivery.
 */

/**
 * TaskNotFound on a job we created (docs/a2a-notes.md, "Failure matrix": the agent forgets the task): the
 * remote lost it. Policy
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
  const capabilities = current ? ctx.connectors(current.target)?.capabilities : undefined;
  if (capabilities?.retentionMs !== undefined) {
    await handleForgotten(ctx, envelopeId, lostRemoteId, source, capabilities.retentionMs);
    return 'unknown';
  }
  ctx.counters.count('taskNotFoundOwn', { id: envelopeId });
  if (capabilities?.notFound === 'unknown') {
    await markGone(ctx, envelopeId, lostRemoteId, source);
    return 'unknown';
  }
  if (capabilities?.notFoundIsExpiry) {
    await recordExpired(ctx, envelopeId, lostRemoteId, source);
    return 'unknown';
  }
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
  ctx.logger.info(
    {
      envelopeId,
      target: envelope.target,
      remoteId: lostRemoteId,
      source,
      policy: resubmit ? 'resubmit' : 'escalate',
    },
    'remote no longer knows the job: lost',
  );
  if (!resubmit) {
    ctx.counters.count('escalated', envelope);
    ctx.logger.info({ envelopeId, target: envelope.target }, 'lost job escalated');
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
  ctx.logger.info({ envelopeId, target: envelope.target }, 'lost job resubmitted');
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
    { envelopeId, target: envelope.target, policy: resubmit ? 'resubmit' : 'escalate' },
    'start response lost and the remote can neither find the job nor deduplicate a resend',
  );
  if (!resubmit) ctx.counters.count('escalated', envelope);
  return resubmit;
}

/**
 * `not_found` from a remote that keeps its jobs until someone deletes them (capabilities.notFound
 * `unknown`): the outcome can no longer be read, and resubmitting could do the work twice. The job is
 * `unknown` with the reason; reconciliation keeps asking.
 */
async function markGone(
  ctx: PlaneContext,
  envelopeId: string,
  remoteId: string,
  source: string,
): Promise<void> {
  const { written, envelope } = await updateLocal(ctx, envelopeId, (env, now) =>
    isTerminal(env.state) || env.remoteId !== remoteId || env.state === 'unknown'
      ? null
      : {
          next: {
            ...env,
            state: 'unknown',
            pendingInput: null,
            reconciliation: {
              result: 'lost',
              at: now,
              attempts: (env.reconciliation?.attempts ?? 0) + 1,
              note: `not found (${source}); deleted on the remote, outcome unknown`,
            },
          },
          events: [
            {
              type: 'state_changed',
              data: { source, from: env.state, to: 'unknown', reason: 'remote_not_found', remoteId },
            },
          ],
        },
  );
  if (written)
    ctx.logger.info(
      { envelopeId, target: envelope.target, remoteId, source },
      'remote job not found: unknown',
    );
}

/**
 * `not_found` from a remote that forgets jobs after a retention window (`capabilities.retentionMs`,
 * OpenAI background responses): it is not `lost`, and resubmitting would run the work again. Past the
 * window (counted from the envelope's creation, which precedes the remote's) the job is `expired`: the
 * remote dropped the record and nothing can recover its outcome. Within it the answer is out of place
 * (deleted by someone, a replica behind): `unknown`, and the fast path and reconciliation keep asking
 * until the window has passed.
 */
async function handleForgotten(
  ctx: PlaneContext,
  envelopeId: string,
  remoteId: string,
  source: string,
  retentionMs: number,
): Promise<void> {
  let expired = false;
  const { envelope, written } = await updateLocal(ctx, envelopeId, (env, now) => {
    if (isTerminal(env.state) || env.remoteId !== remoteId) return null;
    const ageMs = now - env.createdAt;
    expired = ageMs >= retentionMs;
    if (expired) {
      const cancel = env.cancel ? { ...env.cancel, outcome: 'expired' as const, pending: null } : env.cancel;
      return {
        next: { ...env, state: 'expired', cancel, pendingInput: null, lastConfirmedAt: now },
        events: [
          {
            type: 'state_changed',
            data: { source, from: env.state, to: 'expired', reason: 'retention', ageMs, retentionMs },
          },
        ],
      };
    }
    if (env.state === 'unknown') return null;
    // A cancel intent stays visible; the event says what was seen.
    const state = env.state === 'cancel_requested' ? env.state : 'unknown';
    return {
      next: { ...env, state },
      events: [
        {
          type: 'state_changed',
          data: {
            source,
            from: env.state,
            to: state,
            reason: 'not_found_within_retention',
            ageMs,
            retentionMs,
          },
        },
      ],
    };
  });
  if (!written) return;
  if (!expired) ctx.counters.count('taskNotFoundOwn', envelope);
  ctx.logger.info(
    { envelopeId, target: envelope.target, remoteId, source, state: envelope.state },
    expired
      ? 'remote forgot the job after its retention window: expired'
      : 'remote does not know the job within its retention window: unknown',
  );
}

/**
 * The remote no longer knows a job it created and that we saw alive, on a remote that drops jobs at
 * the end of their lifetime (Connector `notFoundIsExpiry`: MCP -32602 on a task we hold): `expired`,
 * the remote's own lifetime rule, never a guessed success or failure. A cancel asked meanwhile ends
 * with that outcome too.
 */
async function recordExpired(
  ctx: PlaneContext,
  envelopeId: string,
  remoteId: string,
  source: string,
): Promise<void> {
  const { envelope, written } = await updateLocal(ctx, envelopeId, (env, now) => {
    if (isTerminal(env.state) || env.remoteId !== remoteId) return null;
    return {
      next: {
        ...env,
        state: 'expired',
        pendingInput: null,
        cancel: env.cancel ? { ...env.cancel, outcome: 'expired', pending: null } : env.cancel,
        error: {
          code: 'remote_forgot',
          message: 'the remote no longer knows this task (ended its lifetime)',
        },
        reconciliation: {
          result: 'ok',
          at: now,
          attempts: (env.reconciliation?.attempts ?? 0) + 1,
          note: `not found (${source}): expired`,
        },
      },
      events: [
        {
          type: 'state_changed',
          data: { source, from: env.state, to: 'expired', reason: 'not_found_after_alive', remoteId },
        },
        ...(env.cancel && env.cancel.outcome === null
          ? [{ type: 'cancel_outcome' as const, data: { outcome: 'expired', source } }]
          : []),
      ],
    };
  });
  if (written)
    ctx.logger.info(
      { envelopeId, target: envelope.target, remoteId, source },
      'remote dropped the job: expired',
    );
}
