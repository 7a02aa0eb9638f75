import type { AcceptanceCheck, Envelope } from '../core/envelope.ts';
import { TaskplaneError } from '../core/errors.ts';
import { isTerminal } from '../core/states.ts';
import type { PlaneContext } from './context.ts';
import { updateLocal } from './observe.ts';

/**
 * A person's acceptance decision (`POST /v1/tasks/{id}/acceptance`): accepts or rejects a finished
 * task's output with a reason, over whatever the checks decided (a person has the last word, e.g. on a
 * verdict left `pending` or a rejection they overrule). The `acceptance` event records who: the API key
 * that made the call and the actor it named. The task's state never changes: a task stays `succeeded`
 * when its output is rejected.
 */
export interface AcceptanceDecision {
  decision: 'accepted' | 'rejected';
  reason: string;
  /** The API key the request was authenticated with (null without auth). */
  keyId: string | null;
  /** Who, as the caller names them (a person, a review tool). */
  actor: string | null;
}

const MAX_REASON_CHARS = 1000;
const MAX_ACTOR_CHARS = 200;

function checkDecision(req: AcceptanceDecision): void {
  if (req.decision !== 'accepted' && req.decision !== 'rejected')
    throw new TaskplaneError('invalid_argument', "decision: must be 'accepted' or 'rejected'", {
      field: 'decision',
    });
  if (typeof req.reason !== 'string' || req.reason.trim() === '' || req.reason.length > MAX_REASON_CHARS)
    throw new TaskplaneError('invalid_argument', `reason: required, at most ${MAX_REASON_CHARS} characters`, {
      field: 'reason',
    });
  if (req.actor !== null && (typeof req.actor !== 'string' || req.actor.length > MAX_ACTOR_CHARS))
    throw new TaskplaneError('invalid_argument', `actor: at most ${MAX_ACTOR_CHARS} characters`, {
      field: 'actor',
    });
}

export async function decideByPerson(
  ctx: PlaneContext,
  envelopeId: string,
  req: AcceptanceDecision,
): Promise<Envelope> {
  checkDecision(req);
  const { envelope } = await updateLocal(ctx, envelopeId, (env, now) => {
    if (!isTerminal(env.state))
      throw new TaskplaneError(
        'conflict',
        `the task is ${env.state}: acceptance is decided on the output of a finished task`,
      );
    const by = { keyId: req.keyId, actor: req.actor };
    const person: AcceptanceCheck = {
      check: 'person',
      verdict: req.decision === 'accepted' ? 'passed' : 'failed',
      reasons: [req.reason],
    };
    // One person entry, the latest: earlier decisions stay in the event log.
    const checks = [...(env.acceptance?.checks ?? []).filter((c) => c.check !== 'person'), person];
    return {
      next: {
        ...env,
        acceptance: {
          ...(env.acceptance ?? {}),
          status: req.decision,
          reasons: [req.reason],
          checks,
          // A verifier call still due is not made: the person's word stands.
          ...(env.acceptance?.verification?.dueAt != null
            ? { verification: { ...env.acceptance.verification, dueAt: null } }
            : {}),
          decidedBy: by,
          decidedAt: now,
        },
      },
      events: [
        { type: 'acceptance', data: { source: 'person', status: req.decision, reasons: [req.reason], by } },
      ],
    };
  });
  return envelope;
}
