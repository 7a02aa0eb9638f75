import { isTerminal } from '../core/states.ts';
import { cancelTask } from './answer-and-cancel.ts';
import { describeError, type PlaneContext, jobFields } from './context.ts';
import { updateLocal } from './observe.ts';
import { listActiveEnvelopes } from './reconciler.ts';
import { WRITES_PER_TURN, turnPacer } from './turns.ts';

export interface ActorRevokedReport {
  keyId: string;
  policy: 'keep' | 'cancel';
  /** Open jobs the key had created, each now carrying an `actor_revoked` event. */
  envelopes: string[];
}

/**
 * The API key that created some jobs was revoked while they run (docs/a2a-notes.md, "Failure matrix":
 * permission revoked). The configured policy decides: `keep` lets them finish (their results stay readable by the
 * tenant's other keys), `cancel` asks the remote to stop them. Either way each open job gets an
 * `actor_revoked` event saying which, so nobody has to guess why a job stopped or carried on. A job
 * already terminal is left alone: its outcome is the remote's word, not ours to change.
 */
export async function onActorRevoked(
  ctx: PlaneContext,
  keyId: string,
  tenant: string,
): Promise<ActorRevokedReport> {
  const policy = ctx.config.onActorRevoked;
  const affected = (await listActiveEnvelopes(ctx.store, { tenant }, ctx.nextTurn)).filter(
    (e) => e.keyId === keyId,
  );
  const done: string[] = [];
  const pace = turnPacer(ctx.nextTurn, WRITES_PER_TURN);
  for (const env of affected) {
    await pace();
    // One job's failure is logged and the rest still get their decision.
    try {
      const { written } = await updateLocal(ctx, env.id, (current) =>
        isTerminal(current.state)
          ? null
          : { next: current, events: [{ type: 'actor_revoked', data: { keyId, policy } }] },
      );
      if (!written) continue;
      done.push(env.id);
      if (policy === 'cancel') await cancelTask(ctx, env.id, `revoked:${keyId}`);
    } catch (err) {
      ctx.logger.warn({ ...jobFields(env), keyId, err: describeError(err) }, 'revoked key: job not handled');
    }
  }
  ctx.logger.info({ keyId, tenant, policy, jobs: done.length }, 'API key revoked: open jobs handled');
  return { keyId, policy, envelopes: done };
}
