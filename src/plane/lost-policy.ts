import { isTerminal } from '../core/states.ts';
import type { PlaneContext } from './context.ts';
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
  ctx.counters.count('taskNotFoundOwn', { id: envelopeId });
  const current = await ctx.store.getEnvelope(envelopeId);
  if (current && ctx.connectors(current.target)?.capabilities.notFound === 'unknown') {
    await markGone(ctx, envelopeId, lostRemoteId, source);
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
