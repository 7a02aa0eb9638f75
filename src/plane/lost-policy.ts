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
    const attempts = (env.reconciliation?.attempts ?? 0) + 1;
    // A resubmission is new remote work: a job whose budget is used up is escalated instead, saying why.
    const overBudget = jobBudgetExhausted(env);
    resubmit =
      ctx.config.lostPolicy === 'resubmit' &&
      env.state !== 'cancel_requested' &&
      attempts <= ctx.config.maxResubmits &&
      !overBudget;
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
  if (outcome.kind === 'started') {
    ctx.counters.count('resubmitted', envelope);
    await updateLocal(ctx, envelopeId, (env, now) => ({
      next: {
        ...env,
        reconciliation: { ...(env.reconciliation ?? { attempts: 1 }), result: 'resubmitted', at: now },
      },
      events: [{ type: 'resubmitted', data: { remoteId: env.remoteId, messageId: env.messageId } }],
    }));
    ctx.logger.info({ envelopeId, target: envelope.target }, 'lost job resubmitted');
    ctx.wake(envelopeId);
  }
  return 'lost';
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
 * The answer to a start was lost and the remote can neither find the job nor deduplicate a resend
 * (`capabilities.startUnfindable`, OpenAI create). The job is `unknown` with reason
 * `start_response_lost`; then the lost policy: `resubmit` (within maxResubmits and the job's budget)
 * sends it again, knowing a second remote job may run beside the unseen one, and the event says so;
 * otherwise it stays `unknown`, escalated, until a delivery that names it (OpenAI webhooks carry the
 * response whose metadata names the envelope) or a person settles it. Returns whether to send again.
 */
export async function handleStartLost(ctx: PlaneContext, envelopeId: string): Promise<boolean> {
  let resubmit = false;
  const { envelope, written } = await updateLocal(ctx, envelopeId, (env, now) => {
    if (isTerminal(env.state) || env.remoteId !== null) return null;
    if (env.state === 'unknown' && env.reconciliation?.result === 'escalated') return null;
    const attempts = (env.reconciliation?.attempts ?? 0) + 1;
    const overBudget = jobBudgetExhausted(env);
    resubmit =
      ctx.config.lostPolicy === 'resubmit' &&
      env.state !== 'cancel_requested' &&
      attempts <= ctx.config.maxResubmits &&
      !overBudget;
    const note = resubmit
      ? 'start response lost; sent again: a second remote job may run beside one never seen'
      : `start response lost; the remote cannot look the job up${overBudget ? `; not resubmitted: ${overBudget}` : ''}`;
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
          },
        },
      ],
    };
  });
  if (!written) return false;
  ctx.logger.warn(
    { envelopeId, target: envelope.target, policy: resubmit ? 'resubmit' : 'escalate' },
    'start response lost and the remote cannot look the job up',
  );
  ctx.counters.count(resubmit ? 'resubmitted' : 'escalated', envelope);
  return resubmit;
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

/**
 * A start whose answer was lost on a remote that neither deduplicates a resend nor lists its jobs
 * (MCP: a lost CreateTaskResult cannot be found again). The job is `unknown`, saying why, and the
 * lost policy decides: `resubmit` (returns true: the caller starts it again, knowing the first call
 * may also run) or `escalate` (`lost`, for a person).
 */
export async function handleStartInDoubt(ctx: PlaneContext, envelopeId: string): Promise<boolean> {
  let resubmit = false;
  const { envelope, written } = await updateLocal(ctx, envelopeId, (env, now) => {
    if (isTerminal(env.state) || env.remoteId !== null) return null;
    const attempts = (env.reconciliation?.attempts ?? 0) + 1;
    resubmit =
      ctx.config.lostPolicy === 'resubmit' &&
      env.state !== 'cancel_requested' &&
      attempts <= ctx.config.maxResubmits &&
      !jobBudgetExhausted(env);
    const note = 'start answer lost; the remote has no list to find the job by, nor deduplicates a resend';
    const events: Array<{ type: 'state_changed' | 'lost'; data: Record<string, unknown> }> = [];
    if (env.state !== 'unknown')
      events.push({
        type: 'state_changed',
        data: { source: 'policy', from: env.state, to: 'unknown', reason: 'create_result_lost' },
      });
    events.push({
      type: 'lost',
      data: {
        source: 'start',
        remoteId: null,
        policy: resubmit ? 'resubmit' : 'escalate',
        attempt: attempts,
      },
    });
    return {
      next: {
        ...env,
        state: resubmit ? 'unknown' : 'lost',
        cancel:
          env.cancel && !resubmit ? { ...env.cancel, outcome: env.cancel.outcome ?? 'lost' } : env.cancel,
        reconciliation: { result: resubmit ? 'lost' : 'escalated', at: now, attempts, note },
      },
      events,
    };
  });
  if (written)
    ctx.logger.info(
      { envelopeId, target: envelope.target, policy: resubmit ? 'resubmit' : 'escalate' },
      'start answer lost and cannot be found again',
    );
  if (!resubmit && written) ctx.counters.count('escalated', envelope);
  return written && resubmit;
}
