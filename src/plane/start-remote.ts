import type { Envelope } from '../core/envelope.ts';
import { sha256Hex } from '../core/canonical-json.ts';
import { newToken } from '../core/ids.ts';
import { isTerminal } from '../core/states.ts';
import { nextBackoff } from '../core/backoff.ts';
import { TaskplaneError, isTaskplaneError } from '../core/errors.ts';
import type { Connector, PushRegistration, RemoteSnapshot, StartRequest } from '../connectors/connector.ts';
import {
  connectorFor,
  describeError,
  isRetryable,
  remoteCall,
  waitFor,
  type PlaneContext,
} from './context.ts';
import { jobBudgetExhausted } from './budgets.ts';
import { observe, updateLocal } from './observe.ts';

/**
 * Starting a remote job, and starting it again. The envelope (with its messageId and contextId) is
 * always written before the first call, so a crash or a lost response is recovered by sending the SAME
 * messageId again or by finding the job by contextId, never by inventing a second request.
 */

/** Whether this envelope's jobs ask the remote to push to us. */
export function pushEnabled(ctx: PlaneContext, connector: Connector): boolean {
  return ctx.config.delivery.push && connector.capabilities.push && ctx.config.publicUrl !== null;
}

/**
 * A fresh single-purpose push registration; only the hash of its secret is kept on the envelope. The
 * A2A notification token is derived from the secret (SHA-256 under a label) rather than drawn: it must
 * differ from the secret because an agent may return it, and deriving it leaves the Random sequence, and
 * so every lab replay, as it was.
 */
export function newPushRegistration(
  ctx: PlaneContext,
  connector: Connector,
  envelopeId: string,
): PushRegistration {
  const token = newToken(ctx.random, 160);
  // The envelope id rides along in the URL so a delivery that beats the start response still finds its envelope.
  const url = `${ctx.config.publicUrl}/v1/webhooks/${encodeURIComponent(connector.kind)}/${encodeURIComponent(connector.target)}?envelope=${encodeURIComponent(envelopeId)}`;
  return {
    url,
    token,
    notificationToken: 'tpn_' + sha256Hex(`a2a-notification-token\n${token}`).slice(0, 40),
  };
}

export function tokenHash(token: string): string {
  return 'sha256:' + sha256Hex(token);
}

export type StartOutcome =
  | { kind: 'started'; envelope: Envelope }
  | { kind: 'retry'; error: { code: string; message: string } }
  | { kind: 'refused'; envelope: Envelope };

/**
 * One start attempt. On success the first snapshot goes through observe (source `create`), which binds
 * the remote id. A non-retryable refusal records the job as failed with the remote's reason; a
 * transport failure leaves the envelope as it is for a retry with the same messageId.
 */
/** Prepares the push registration for a start (fresh token; its hash goes on the envelope first). */
export async function preparePush(
  ctx: PlaneContext,
  env: Envelope,
  connector: Connector,
): Promise<PushRegistration | undefined> {
  if (!pushEnabled(ctx, connector)) return undefined;
  const push = newPushRegistration(ctx, connector, env.id);
  const hash = tokenHash(push.token);
  await updateLocal(ctx, env.id, (cur) => ({
    next: { ...cur, subscription: { kind: 'push', tokenHash: hash, registeredAt: ctx.clock.now() } },
    events: [],
  }));
  return push;
}

export function startRequest(env: Envelope, push: PushRegistration | undefined): StartRequest {
  return {
    envelopeId: env.id,
    messageId: env.messageId ?? env.id,
    contextId: env.contextId,
    input: env.input,
    ...(push ? { push } : {}),
  };
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
 * One start attempt. On success the first snapshot goes through observe (source `create`), which binds
 * the remote id. A non-retryable refusal records the job as failed with the remote's reason; a
 * transport failure leaves the envelope as it is for a retry with the same messageId.
 */
export async function startOnce(
  ctx: PlaneContext,
  env: Envelope,
  opts: { resend: boolean },
): Promise<StartOutcome> {
  const connector = connectorFor(ctx, env.target);
  const push = await preparePush(ctx, env, connector);
  if (opts.resend) ctx.counters.count('reusedMessageIds', env);
  let snapshot: RemoteSnapshot;
  try {
    snapshot = await remoteCall(ctx, 'start', env, (signal) =>
      connector.start(startRequest(env, push), signal),
    );
  } catch (err) {
    if (ctx.signal.aborted || isRetryable(err)) return { kind: 'retry', error: describeError(err) };
    return { kind: 'refused', envelope: await recordStartRefused(ctx, env, err) };
  }
  const result = await observe(ctx, env.id, snapshot, 'create');
  if (result.envelope.state === 'cancel_requested' && result.envelope.cancel?.acknowledgedAt === null) {
    // Cancel was asked while the start was in flight: the remote job exists now, so ask it.
    return { kind: 'started', envelope: await sendCancel(ctx, env.id) };
  }
  return { kind: 'started', envelope: result.envelope };
}

/**
 * Asks the remote to cancel a job whose cancel intent is recorded, keeps observing, and records the
 * acknowledgement. Not cancelable (already finished) → read and record what it really ended as.
 */
export async function sendCancel(ctx: PlaneContext, envelopeId: string): Promise<Envelope> {
  const envelope = await ctx.store.getEnvelope(envelopeId);
  if (!envelope?.remoteId) throw new TaskplaneError('not_found', 'task not found');
  const connector = connectorFor(ctx, envelope.target);
  if (!connector.cancel) return envelope;
  const remoteId = envelope.remoteId;
  try {
    const snap = await remoteCall(ctx, 'cancel', envelope, (signal) => connector.cancel!(remoteId, signal));
    await updateLocal(ctx, envelopeId, (env, now) =>
      env.cancel && env.cancel.acknowledgedAt === null
        ? {
            next: { ...env, cancel: { ...env.cancel, acknowledgedAt: now } },
            events: [{ type: 'cancel_acknowledged', data: {} }],
          }
        : null,
    );
    const result = await observe(ctx, envelopeId, snap, 'api');
    ctx.wake(envelopeId);
    return result.envelope;
  } catch (err) {
    if (isTaskplaneError(err) && err.code === 'failed_precondition') {
      const snap = await remoteCall(ctx, 'get', envelope, (signal) => connector.get(remoteId, signal));
      return (await observe(ctx, envelopeId, snap, 'api')).envelope;
    }
    if (isTaskplaneError(err) && err.code === 'not_found') {
      await handleLost(ctx, envelopeId, remoteId, 'api');
      return (await ctx.store.getEnvelope(envelopeId)) ?? envelope;
    }
    // Transport trouble: the intent is recorded and the job is still watched; the outcome will be learned.
    ctx.logger.warn({ envelopeId, err: describeError(err) }, 'cancel call failed');
    return (await ctx.store.getEnvelope(envelopeId)) ?? envelope;
  }
}

/**
 * Finds a job whose start response was lost by its contextId (one paged list since the envelope's
 * creation), where the connector can list. Returns the snapshot, or null when nothing matched.
 */
async function findByContext(
  ctx: PlaneContext,
  env: Envelope,
  connector: Connector,
): Promise<RemoteSnapshot | null> {
  if (!connector.capabilities.list || !connector.listChanged || !env.contextId) return null;
  let cursor: string | undefined;
  const since = env.createdAt - ctx.config.reconcile.sinceSkewMs;
  do {
    const page = await remoteCall(ctx, 'list', env, (signal) =>
      connector.listChanged!(
        { since, pageSize: ctx.config.reconcile.pageSize, ...(cursor ? { cursor } : {}) },
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
    if (wait === undefined || !(await waitFor(ctx.clock, wait, ctx.signal))) return;
  }
  for (let attempt = 0; !ctx.signal.aborted && attempt < maxAttempts; attempt++) {
    const env = await ctx.store.getEnvelope(envelopeId);
    if (!env || env.remoteId !== null || isTerminal(env.state)) return;
    const connector = connectorFor(ctx, env.target);
    try {
      if (env.state === 'cancel_requested') {
        // Cancelled before the start was confirmed: find it if it reached the remote, else never start it.
        const found = await findByContext(ctx, env, connector);
        if (found) {
          await observe(ctx, env.id, found, 'reconcile');
          ctx.ensureWatching(env.id);
        } else {
          await updateLocal(ctx, env.id, (cur) =>
            cur.remoteId === null && cur.state === 'cancel_requested'
              ? {
                  next: {
                    ...cur,
                    state: 'cancelled',
                    cancel: cur.cancel ? { ...cur.cancel, outcome: 'cancelled' } : null,
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
        return;
      }
      if (!connector.capabilities.idempotentStart) {
        const found = await findByContext(ctx, env, connector);
        if (found) {
          await observe(ctx, env.id, found, 'reconcile');
          ctx.ensureWatching(env.id);
          return;
        }
      }
      const outcome = await startOnce(ctx, env, { resend: true });
      if (outcome.kind !== 'retry') {
        ctx.ensureWatching(env.id);
        return;
      }
    } catch (err) {
      ctx.logger.warn({ envelopeId, err: describeError(err) }, 'start recovery failed');
    }
    if (attempt + 1 >= maxAttempts) return;
    const wait = nextBackoff(ctx.config.startRetry, attempt, ctx.random, ctx.clock.now() - env.createdAt);
    if (wait === undefined || !(await waitFor(ctx.clock, wait, ctx.signal))) return;
  }
}

/**
 * TaskNotFound on a job we created (seed 004, "When the agent forgets"): the remote lost it. Policy
 * `resubmit` starts it again with the SAME messageId (a forgetful agent has no memory of it, so this
 * makes one new remote job, not a duplicate of a live one) and keeps tracking it on the same envelope;
 * `escalate`, a job being cancelled, or too many resubmissions mark it `lost` for a person.
 */
export async function handleLost(
  ctx: PlaneContext,
  envelopeId: string,
  lostRemoteId: string,
  source: string,
): Promise<void> {
  ctx.counters.count('taskNotFoundOwn', { id: envelopeId });
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
  if (!written) return;
  if (!resubmit) {
    ctx.counters.count('escalated', envelope);
    return;
  }
  const outcome = await startOnce(ctx, envelope, { resend: true });
  if (outcome.kind === 'started') {
    ctx.counters.count('resubmitted', envelope);
    await updateLocal(ctx, envelopeId, (env, now) => ({
      next: {
        ...env,
        reconciliation: { ...(env.reconciliation ?? { attempts: 1 }), result: 'resubmitted', at: now },
      },
      events: [{ type: 'resubmitted', data: { remoteId: env.remoteId, messageId: env.messageId } }],
    }));
    ctx.wake(envelopeId);
  } else if (outcome.kind === 'retry') {
    // remoteId is null now: ensureStarted keeps trying with the same messageId.
    ctx.spawn(ensureStarted(ctx, envelopeId, { waitFirst: true }));
  }
}
