import type { Envelope } from '../core/envelope.ts';
import { isTerminal } from '../core/states.ts';
import {
  assertMayStart,
  namingTheJob,
  noteStartAttempt,
  noteStartFailed,
  noteStarted,
  recordStartRefused,
  startRequest,
} from './start-attempts.ts';
import { preparePush } from './push-tokens.ts';
import { nextBackoff } from '../core/backoff.ts';
import type { Connector, RemoteSnapshot } from '../connectors/connector.ts';
import {
  connectorFor,
  describeError,
  isRetryable,
  remoteCall,
  waitFor,
  wasNotSent,
  type PlaneContext,
  type StartOutcome,
  jobFields,
} from './context.ts';
import { deliverPendingCancel } from './cancel-delivery.ts';
import { observe, updateLocal } from './observe.ts';
import { handleStartResponseLost, recordResubmitted } from './lost-policy.ts';

/**
 * Starting a remote job, and starting it again. The envelope (with its messageId and contextId) is
 * always written before the first call, so a crash or a lost response is recovered by sending the SAME
 * messageId again or by finding the job by contextId, never by inventing a second request.
 */

/**
 * One start attempt. On success the first snapshot goes through observe (source `create`), which binds
 * the remote id, and a cancel asked meanwhile is delivered at once. A non-retryable refusal records the
 * job as failed with the remote's reason; a transport failure leaves the envelope for a retry with the
 * same messageId, with the error, the attempt count and whether the request may have been sent.
 */
export async function startOnce(
  ctx: PlaneContext,
  env: Envelope,
  opts: { resend: boolean },
): Promise<StartOutcome> {
  const connector = connectorFor(ctx, env.target);
  const push = await preparePush(ctx, env, connector);
  const attempt = await noteStartAttempt(ctx, env.id);
  if (!attempt.send) return { kind: 'settled', envelope: attempt.envelope };
  const { maybeSentBefore } = attempt;
  if (opts.resend) ctx.counters.count('reusedMessageIds', env);
  let snapshot: RemoteSnapshot;
  ctx.startsInFlight.add(env.id);
  try {
    assertMayStart(ctx, env.id);
    snapshot = namingTheJob(
      await remoteCall(ctx, 'start', env, (signal) => connector.start(startRequest(env, push), signal)),
    );
  } catch (err) {
    ctx.startsInFlight.delete(env.id);
    if (ctx.signal.aborted || isRetryable(err)) {
      await noteStartFailed(ctx, env.id, err, wasNotSent(err) ? maybeSentBefore : true);
      return { kind: 'retry', error: describeError(err) };
    }
    ctx.logger.info({ ...jobFields(env), err: describeError(err) }, 'start refused by the remote');
    return { kind: 'refused', envelope: await recordStartRefused(ctx, env, err) };
  }
  ctx.startsInFlight.delete(env.id);
  const result = await observe(ctx, env.id, snapshot, 'create');
  await noteStarted(ctx, result.envelope);
  return { kind: 'started', envelope: await deliverPendingCancel(ctx, env.id, result.envelope) };
}

/** Whether a start of this job may have reached the remote (an attempt was made and not refused unsent). */
function startMaybeSent(env: Envelope): boolean {
  return env.startMaybeSent ?? (env.startAttempts ?? 0) > 0;
}

/** Whether findByContext can look for this job: the remote lists its jobs and we chose the contextId. */
function canFindByContext(env: Envelope, connector: Connector): boolean {
  return connector.capabilities.list && !!connector.listChanged && env.contextId !== null;
}

/**
 * Finds a job whose start response was lost by its contextId (one paged list since the envelope's
 * creation, filtered by the contextId where the remote can: A2A), where the connector can list. Returns
 * the snapshot, or null when nothing matched.
 */
async function findByContext(
  ctx: PlaneContext,
  env: Envelope,
  connector: Connector,
): Promise<RemoteSnapshot | null> {
  if (!canFindByContext(env, connector)) return null;
  let cursor: string | undefined;
  const since = env.createdAt - ctx.config.reconcile.sinceSkewMs;
  do {
    const page = await remoteCall(ctx, 'list', env, (signal) =>
      connector.listChanged!(
        {
          since,
          pageSize: ctx.config.reconcile.pageSize,
          contextId: env.contextId!,
          ...(cursor ? { cursor } : {}),
        },
        signal,
      ),
    );
    const hit = page.items.find((s) => s.contextId === env.contextId);
    if (hit) return hit;
    cursor = page.nextCursor;
  } while (cursor);
  return null;
}

/**
 * Makes sure a job whose start was never confirmed gets started exactly once on the remote: look for it
 * by contextId first where the remote deduplicates nothing, then resend with the same messageId.
 * Retries with backoff and jitter until started, refused, terminal, or stop().
 */
export async function ensureStarted(
  ctx: PlaneContext,
  envelopeId: string,
  opts: { maxAttempts?: number; waitFirst?: boolean } = {},
): Promise<void> {
  const maxAttempts = opts.maxAttempts ?? Infinity;
  if (opts.waitFirst) {
    // Right after a failed attempt: back off before the next one instead of hammering the remote.
    const wait = nextBackoff(ctx.config.startRetry, 0, ctx.random);
    if (wait === undefined || !(await waitBeforeRetry(ctx, envelopeId, wait))) return;
  }
  for (let attempt = 0; !ctx.signal.aborted && attempt < maxAttempts; attempt++) {
    const env = await ctx.store.getEnvelope(envelopeId);
    if (!env || env.remoteId !== null || isTerminal(env.state)) return;
    // A start call of ours is still out: its answer (or its failure's own recovery) decides.
    if (ctx.startsInFlight.has(envelopeId)) return;
    if (!ctx.mayStart(envelopeId)) {
      // Another plane holds the job's lease and starts it, or this plane's lease is too old to trust
      // until its next renewal: nothing is attempted or written here; look again a renewal later.
      if (attempt + 1 >= maxAttempts) return;
      if (!(await waitFor(ctx.clock, ctx.config.watch.leaseTtlMs / 3, ctx.signal))) return;
      continue;
    }
    const connector = connectorFor(ctx, env.target);
    try {
      if (env.state === 'cancel_requested') {
        await cancelBeforeStart(ctx, env, connector);
        return;
      }
      if (await pastStartDeadline(ctx, env)) return;
      let resubmission = false;
      if (!connector.capabilities.idempotentStart) {
        const found = await findByContext(ctx, env, connector);
        if (found) {
          await noteStarted(ctx, (await observe(ctx, env.id, found, 'reconcile')).envelope);
          await deliverPendingCancel(ctx, env.id);
          ctx.ensureWatching(env.id);
          return;
        }
        if (startMaybeSent(env) && !canFindByContext(env, connector)) {
          // Nothing can find the job a lost answer may have created, and a resend may make a second
          // one: the lost policy decides (lost-policy.ts handleStartResponseLost).
          if (!(await handleStartResponseLost(ctx, env.id))) return;
          resubmission = true;
        }
      }
      const outcome = await startOnce(ctx, (await ctx.store.getEnvelope(env.id)) ?? env, { resend: true });
      if (resubmission && outcome.kind === 'started') await recordResubmitted(ctx, env.id);
      if (outcome.kind !== 'retry') {
        ctx.ensureWatching(env.id);
        return;
      }
    } catch (err) {
      ctx.logger.warn({ envelopeId, err: describeError(err) }, 'start recovery failed');
      await noteStartFailed(ctx, envelopeId, err, env.startMaybeSent ?? true).catch(() => {});
    }
    if (attempt + 1 >= maxAttempts) return;
    const wait = nextBackoff(ctx.config.startRetry, attempt, ctx.random, ctx.clock.now() - env.createdAt);
    if (wait === undefined || !(await waitBeforeRetry(ctx, envelopeId, wait))) return;
  }
}

/** Records when the next start attempt is due (the caller can read it), then waits for it. */
async function waitBeforeRetry(ctx: PlaneContext, envelopeId: string, waitMs: number): Promise<boolean> {
  const { envelope } = await updateLocal(ctx, envelopeId, (env, now) =>
    isTerminal(env.state) || env.remoteId !== null
      ? null
      : { next: { ...env, nextRetryAt: now + Math.round(waitMs) }, events: [] },
  );
  ctx.logger.info(
    {
      envelopeId,
      target: envelope.target,
      attempts: envelope.startAttempts ?? 0,
      waitMs: Math.round(waitMs),
      err: envelope.lastError ?? null,
    },
    'start retry scheduled',
  );
  return waitFor(ctx.clock, waitMs, ctx.signal);
}

/**
 * Past the start deadline (a policy the user configured): a job the remote certainly never got (every
 * attempt refused before sending) is `failed` with reason `start_unreachable`; one whose start may have
 * reached it becomes `unknown` and stays reconciled. Returns true when the job was failed.
 */
async function pastStartDeadline(ctx: PlaneContext, env: Envelope): Promise<boolean> {
  const deadline = ctx.config.startDeadlineMs;
  if (deadline === null || ctx.clock.now() - env.createdAt < deadline) return false;
  if (startMaybeSent(env)) {
    await updateLocal(ctx, env.id, (cur) =>
      cur.remoteId !== null || isTerminal(cur.state) || cur.state === 'unknown'
        ? null
        : {
            next: { ...cur, state: 'unknown' },
            events: [
              {
                type: 'state_changed',
                data: { source: 'policy', from: cur.state, to: 'unknown', reason: 'start_in_doubt' },
              },
            ],
          },
    );
    return false;
  }
  const { written } = await updateLocal(ctx, env.id, (cur, now) =>
    cur.remoteId !== null || isTerminal(cur.state) || (cur.startMaybeSent ?? false)
      ? null
      : {
          next: {
            ...cur,
            state: 'failed',
            nativeState: 'start_unreachable',
            nextRetryAt: null,
            error: {
              code: 'start_unreachable',
              message: `the target refused every connection for ${deadline} ms; the job was never sent`,
            },
            lastConfirmedAt: now,
          },
          events: [
            {
              type: 'state_changed',
              data: {
                source: 'policy',
                from: cur.state,
                to: 'failed',
                reason: 'start_unreachable',
                attempts: cur.startAttempts ?? 0,
              },
            },
          ],
        },
  );
  if (written)
    ctx.logger.info(
      { envelopeId: env.id, target: env.target, attempts: env.startAttempts ?? 0 },
      'start unreachable; failed by the start deadline',
    );
  return written;
}

/**
 * Cancelled before the start was confirmed (and no start call of ours is out). Found on the remote
 * (by contextId) → bound and the cancel is sent. Never sent at all, or sent, ended, and absent from the
 * remote's own list → cancelled locally ("never started"). Otherwise, with no list to look in: where
 * the remote deduplicates, sending the start again with the same messageId only learns the remote id
 * (then the cancel goes out); elsewhere the intent stays and reconciliation keeps asking.
 */
async function cancelBeforeStart(ctx: PlaneContext, env: Envelope, connector: Connector): Promise<void> {
  const found = await findByContext(ctx, env, connector);
  if (found) {
    await observe(ctx, env.id, found, 'reconcile');
    await deliverPendingCancel(ctx, env.id);
    ctx.ensureWatching(env.id);
    return;
  }
  const listed = canFindByContext(env, connector);
  if (startMaybeSent(env) && !listed) {
    if (connector.capabilities.idempotentStart) {
      const outcome = await startOnce(ctx, env, { resend: true });
      if (outcome.kind === 'started' || outcome.kind === 'settled') ctx.ensureWatching(env.id);
    }
    return;
  }
  await updateLocal(ctx, env.id, (cur) =>
    cur.remoteId === null && cur.state === 'cancel_requested' && (listed || !(cur.startMaybeSent ?? false))
      ? {
          next: {
            ...cur,
            state: 'cancelled',
            cancel: cur.cancel ? { ...cur.cancel, outcome: 'cancelled', pending: null } : null,
          },
          events: [
            {
              type: 'state_changed',
              data: { source: 'local', from: cur.state, to: 'cancelled', note: 'never started' },
            },
          ],
        }
      : null,
  );
}
