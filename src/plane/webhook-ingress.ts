import { timingSafeEqualString } from './constant-time.ts';
import { TaskplaneError, isTaskplaneError } from '../core/errors.ts';
import { isTerminal } from '../core/states.ts';
import type { Envelope } from '../core/envelope.ts';
import type { Connector, InboundWebhook, RemoteSnapshot, WebhookSignal } from '../connectors/connector.ts';
import { connectorFor, describeError, remoteCall, type PlaneContext, jobFields } from './context.ts';
import { observe } from './observe.ts';
import { handleLost } from './lost-policy.ts';
import { tokenHash } from './push-tokens.ts';

/**
 * Push ingress (docs/a2a-notes.md, "Delivery mix"): a delivery is a
 * wake-up signal, not a command. Verify the token against the envelope's stored hash, check the job is
 * ours, fetch authoritative state and observe it, then record the delivery durably (the dedup table).
 * The caller answers 2xx only after this resolves, i.e. after the delivery is processed and recorded; a
 * failure leaves it unrecorded, so the sender's retry is processed rather than dropped as a duplicate.
 */
export interface WebhookResult {
  /** `recorded`: a project-signed delivery is durable and its truth is being fetched behind the answer. */
  status: 'observed' | 'recorded' | 'duplicate' | 'ignored';
  envelopeId: string | null;
}

export async function handleWebhook(
  ctx: PlaneContext,
  target: string,
  request: InboundWebhook & { envelopeId?: string | null },
): Promise<WebhookResult> {
  const connector = connectorFor(ctx, target);
  if (!connector.parseWebhook) throw new TaskplaneError('unsupported', 'target does not take webhooks');
  const unauthenticated = () => {
    ctx.counters.count('webhooksRejected', null);
    return new TaskplaneError('unauthenticated', 'webhook credentials are not valid');
  };
  // Credentials first, from the headers alone: a delivery that names its job in the URL (ours always do)
  // is refused before its body is parsed unless it carries that job's token.
  if (request.envelopeId && connector.webhookToken) {
    const named = await ctx.store.getEnvelope(request.envelopeId);
    if (!tokenMatches(named, target, connector.webhookToken(request.headers))) throw unauthenticated();
  }
  let signal;
  try {
    signal = await connector.parseWebhook(request);
  } catch (err) {
    if (isTaskplaneError(err) && err.code === 'unauthenticated') throw unauthenticated();
    throw err;
  }
  if (signal.signedByTarget) return handleSignedDelivery(ctx, connector, target, signal);
  // Find the envelope: by the id we put in the webhook URL, else by the remote id. Either way the job
  // must be ours on this target, and the token must match the one we registered for it.
  const env = request.envelopeId
    ? await ctx.store.getEnvelope(request.envelopeId)
    : await ctx.store.findEnvelopeByRemoteId(target, signal.remoteId);
  if (!env || !tokenMatches(env, target, signal.token)) throw unauthenticated();
  const source = `${connector.kind}-push:${target}`;
  const record = () =>
    ctx.store.recordDelivery({
      source,
      deliveryId: signal.deliveryId,
      envelopeId: env.id,
      receivedAt: ctx.clock.now(),
    });
  const duplicate = (): WebhookResult => {
    ctx.counters.count('duplicatesWebhook', env);
    return { status: 'duplicate', envelopeId: env.id };
  };
  // A delivery about a remote job this envelope no longer tracks (replaced after a resubmission) is old news.
  if (env.remoteId !== null && env.remoteId !== signal.remoteId) {
    await record();
    return { status: 'ignored', envelopeId: env.id };
  }
  // An observed delivery's id is on the envelope (written with the observation it carried), so a repeat
  // costs no fetch.
  if (env.webhookIds.includes(signal.deliveryId)) return duplicate();
  if (isTerminal(env.state))
    return (await record()) ? { status: 'ignored', envelopeId: env.id } : duplicate();
  // Recorded only once processed: when processing throws, nothing is recorded and the sender's retry is
  // processed again instead of being absorbed as a duplicate of a delivery that never took effect.
  await processDelivery(ctx, connector, env, signal);
  return (await record()) ? { status: 'observed', envelopeId: env.id } : duplicate();
}

/** The job is on this target and the token is the one registered for it (compared in constant time). */
function tokenMatches(env: Envelope | undefined | null, target: string, token: string | null): boolean {
  const expected = env?.subscription?.tokenHash;
  return (
    !!env &&
    env.target === target &&
    !!expected &&
    token !== null &&
    timingSafeEqualString(tokenHash(token), expected)
  );
}

/** Fetches authoritative state (or takes the verified payload) and observes it. */
async function processDelivery(
  ctx: PlaneContext,
  connector: Connector,
  env: Envelope,
  signal: WebhookSignal,
): Promise<void> {
  const payload = signal.snapshot;
  const useful = payload !== null && payload.remoteVersion !== null && payload.remoteId === signal.remoteId;
  let snapshot: RemoteSnapshot | null =
    ctx.config.webhook.fetchState === 'when-incomplete' && useful ? payload : null;
  if (!snapshot && ctx.streamAttached(env.id)) {
    // An attached stream should carry the same change: spend no request on the push yet (version
    // ordering makes the verified payload safe to apply, if it has one). A stream can stay open and say
    // nothing, though, so without a payload the push is checked against the stream after a grace.
    snapshot = useful ? payload : null;
    if (!snapshot) {
      ctx.spawn(fetchIfStreamSilent(ctx, connector, env, signal, ctx.clock.now()));
      return;
    }
  }
  await observeDelivery(
    ctx,
    env.id,
    signal,
    snapshot ?? (await fetchForDelivery(ctx, connector, env, signal, payload, useful)),
  );
}

/** A delivery's state, observed as a push; a change wakes the job's watcher. */
async function observeDelivery(
  ctx: PlaneContext,
  envelopeId: string,
  signal: WebhookSignal,
  snapshot: RemoteSnapshot | null,
): Promise<void> {
  if (!snapshot) return;
  const result = await observe(ctx, envelopeId, snapshot, 'push', { webhookId: signal.deliveryId });
  if (result.changed) ctx.wake(envelopeId);
}

/**
 * The push said the job changed while its stream was attached: when the stream has said nothing about
 * the job within the grace before or after it (a proxy holding a dead stream open, a remote whose
 * stream stalled), the push is the only word of the change, and the state is fetched as for any other
 * delivery.
 */
async function fetchIfStreamSilent(
  ctx: PlaneContext,
  connector: Connector,
  env: Envelope,
  signal: WebhookSignal,
  pushedAt: number,
): Promise<void> {
  try {
    await ctx.clock.sleep(ctx.config.webhook.streamGraceMs, ctx.signal);
  } catch {
    return; // the plane is stopping; reconciliation covers the job after a restart
  }
  // Heard of within the grace on either side of the push: the stream is carrying changes (it is often
  // faster than the push it duplicates).
  if ((ctx.heard.at(env.target, env.id) ?? -Infinity) >= pushedAt - ctx.config.webhook.streamGraceMs) return;
  const current = await ctx.store.getEnvelope(env.id);
  if (!current || isTerminal(current.state) || current.remoteId !== signal.remoteId) return;
  ctx.logger.info(
    { ...jobFields(current), webhookId: signal.deliveryId, graceMs: ctx.config.webhook.streamGraceMs },
    'push not followed by the attached stream; fetching the state',
  );
  await observeDelivery(
    ctx,
    env.id,
    signal,
    await fetchForDelivery(ctx, connector, current, signal, null, false),
  );
}

/** get() for a delivery; a failure keeps the verified payload when it has one, or nothing. */
async function fetchForDelivery(
  ctx: PlaneContext,
  connector: Connector,
  env: Envelope,
  signal: WebhookSignal,
  payload: RemoteSnapshot | null,
  useful: boolean,
): Promise<RemoteSnapshot | null> {
  try {
    return await remoteCall(ctx, 'get', env, (s) => connector.get(signal.remoteId, s));
  } catch (err) {
    if (isTaskplaneError(err) && err.code === 'not_found' && env.remoteId) {
      await handleLost(ctx, env.id, env.remoteId, 'push');
      return null;
    }
    // Keep what the verified payload says (version ordering protects against it being stale) and
    // leave the rest to reconciliation, so an agent that is down does not also get its pushes refused.
    ctx.logger.warn({ ...jobFields(env), err: describeError(err) }, 'webhook fetch failed; using payload');
    return useful ? payload : null;
  }
}

/**
 * A delivery signed with the target's own secret (webhooks configured per project or account, not per
 * job: OpenAI, Claude).
 * Found by remote id; a job whose start answer was lost is found by the envelope id the remote echoes
 * back (`correlationId`), read with one get, which is then also the truth to observe. A delivery about
 * a job that is not ours (another application in the same project) is ignored with a 2xx, so the
 * sender stops retrying. Otherwise it is recorded, answered at once (the sender wants a 2xx within
 * seconds), and the truth is fetched behind the answer; if that fetch fails, the stream, the poller
 * and reconciliation still cover the job.
 */
async function handleSignedDelivery(
  ctx: PlaneContext,
  connector: Connector,
  target: string,
  signal: WebhookSignal,
): Promise<WebhookResult> {
  let env = await ctx.store.findEnvelopeByRemoteId(target, signal.remoteId);
  let fetched: RemoteSnapshot | null = null;
  if (!env) {
    try {
      fetched = await remoteCall(ctx, 'get', null, (s) => connector.get(signal.remoteId, s));
    } catch (err) {
      if (isTaskplaneError(err) && err.code === 'not_found') return { status: 'ignored', envelopeId: null };
      throw err;
    }
    const named = fetched.correlationId ? await ctx.store.getEnvelope(fetched.correlationId) : undefined;
    if (named && named.target === target && (named.remoteId === null || named.remoteId === signal.remoteId))
      env = named;
  }
  if (!env) {
    ctx.logger.info({ target, remoteId: signal.remoteId }, 'webhook about a job that is not ours; ignored');
    return { status: 'ignored', envelopeId: null };
  }
  const found = env;
  const duplicate = (): WebhookResult => {
    ctx.counters.count('duplicatesWebhook', found);
    return { status: 'duplicate', envelopeId: found.id };
  };
  if (found.webhookIds.includes(signal.deliveryId)) return duplicate();
  const recorded = await ctx.store.recordDelivery({
    source: `${connector.kind}-push:${target}`,
    deliveryId: signal.deliveryId,
    envelopeId: found.id,
    receivedAt: ctx.clock.now(),
  });
  if (!recorded) return duplicate();
  if (isTerminal(found.state)) return { status: 'ignored', envelopeId: found.id };
  if (fetched) {
    const result = await observe(ctx, found.id, fetched, 'push', { webhookId: signal.deliveryId });
    if (result.changed || result.envelope.remoteId !== found.remoteId) {
      ctx.wake(found.id);
      ctx.ensureWatching(found.id);
    }
    return { status: 'observed', envelopeId: found.id };
  }
  ctx.spawn(
    processDelivery(ctx, connector, found, signal).catch((err: unknown) =>
      ctx.logger.warn(
        { envelopeId: found.id, err: describeError(err) },
        'webhook fetch failed; reconciliation covers it',
      ),
    ),
  );
  return { status: 'recorded', envelopeId: found.id };
}
