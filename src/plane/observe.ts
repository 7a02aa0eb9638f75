import {
  contentBytes,
  type ArtifactRef,
  type Envelope,
  type EnvelopeEventType,
  type NewEnvelopeEvent,
  type ObservationSource,
  summarise,
  type PendingInput,
  type PendingRequest,
} from '../core/envelope.ts';
import { inputHash } from '../core/canonical-json.ts';
import { TaskplaneError, VersionConflictError } from '../core/errors.ts';
import { decideTransition, isTerminal, type TransitionDecision } from '../core/states.ts';
import type { RemoteSnapshot } from '../connectors/connector.ts';
import { neutralParts } from './artifact-content.ts';
import { decideAcceptance, prepareAcceptance } from './acceptance.ts';
import type { PlaneContext } from './context.ts';
import { withRetention } from './retention-sweeper.ts';
import { recordTaskSpan } from './tracing.ts';

/**
 * THE observe path (docs/plane.md, "The truth rule"): every observation from every source (create, stream,
 * push, poll, reconcile, api) comes through `observe`. It re-reads the envelope, asks the one
 * forward-only rule (core/states.ts decideTransition), and writes the result with its event in one
 * CAS transaction, retrying from a fresh read when another path wrote first.
 */

export interface ObserveResult {
  envelope: Envelope;
  /** The state moved (an event `state_changed` was written). */
  changed: boolean;
  /** Something was written at all (state, artifacts, input, binding). */
  written: boolean;
  /** The seq of the last event this observe's write added, when it added any (its change notice's). */
  lastSeq?: number;
  decision: TransitionDecision;
}

/** The longest status message kept; a longer one is cut, as a person reads its start. */
export const STATUS_MESSAGE_MAX_CHARS = 65_536;

/**
 * Artifact refs after this snapshot, hashed canonically so key order or whitespace never makes a "new"
 * artifact. A changed artifact keeps its content when it fits both result caps, counting what the job's
 * other artifacts already keep; otherwise only its hash, media type and size.
 */
function artifactRefs(
  current: ArtifactRef[],
  snapshot: RemoteSnapshot,
  source: ObservationSource,
  now: number,
  caps: { maxTaskBytes: number; maxArtifactBytes: number },
): { refs: ArtifactRef[]; changed: ArtifactRef[] } {
  if (!snapshot.artifacts || snapshot.artifacts.length === 0) return { refs: current, changed: [] };
  const byId = new Map(current.map((a) => [a.artifactId, a]));
  const changed: ArtifactRef[] = [];
  for (const artifact of snapshot.artifacts) {
    const hash = inputHash(artifact.content ?? null);
    const prior = byId.get(artifact.artifactId);
    if (prior && prior.hash === hash) continue;
    const parts = neutralParts(artifact);
    const size = contentBytes(parts);
    let keptElsewhere = 0;
    for (const [id, ref] of byId) if (id !== artifact.artifactId && ref.parts) keptElsewhere += ref.size ?? 0;
    const ref: ArtifactRef = {
      artifactId: artifact.artifactId,
      hash,
      size,
      provenance: { source, remoteId: snapshot.remoteId, at: now },
    };
    if (artifact.name !== undefined) ref.name = artifact.name;
    if (artifact.mediaType !== undefined) ref.mediaType = artifact.mediaType;
    if (size <= caps.maxArtifactBytes && keptElsewhere + size <= caps.maxTaskBytes) ref.parts = parts;
    byId.set(artifact.artifactId, ref);
    changed.push(ref);
  }
  return { refs: [...byId.values()], changed };
}

/** The pending input the envelope should show after this observation. */
function nextPendingInput(
  env: Envelope,
  snapshot: RemoteSnapshot,
  now: number,
  answerDoubtMs: number,
): PendingInput | null {
  const waiting =
    env.state === 'waiting_for_input' ||
    (env.state === 'cancel_requested' && snapshot.state === 'waiting_for_input');
  if (!waiting) return null;
  if (snapshot.inputRequests && snapshot.inputRequests.length > 0)
    return pendingRequests(env.pendingInput, snapshot.inputRequests, now, answerDoubtMs);
  const req = snapshot.inputRequest ?? {
    // A remote that gives no request id (A2A has none) still gets a stable one per status version.
    requestId: `req_${snapshot.remoteVersion ?? snapshot.stateTimestamp ?? 0}`,
    prompt: '',
  };
  const prior = env.pendingInput;
  if (prior && prior.requestId === req.requestId) return prior;
  const pending: PendingInput = {
    requestId: req.requestId,
    prompt: req.prompt,
    askedAt: now,
    answeredAt: null,
    deadlineAt: null,
  };
  if (req.schema) pending.schema = req.schema;
  if (req.method) pending.method = req.method;
  return pending;
}

/**
 * Several keyed requests at once: those the remote still lists keep what we knew of them (asked
 * when, answered with what), new ones are added, settled ones drop out. Unchanged → the same object.
 */
function pendingRequests(
  prior: PendingInput | null,
  listed: NonNullable<RemoteSnapshot['inputRequests']>,
  now: number,
  /** A key answered this long ago and still listed did not get through: it can be answered again. */
  answerDoubtMs: number,
): PendingInput {
  const known = new Map((prior?.requests ?? []).map((r) => [r.requestId, r]));
  const requests: PendingRequest[] = listed.map((r) => {
    const before = known.get(r.requestId);
    if (before?.answeredAt && now - before.answeredAt >= answerDoubtMs)
      return { ...before, answeredAt: null, answer: null };
    if (before) return before;
    const fresh: PendingRequest = {
      requestId: r.requestId,
      prompt: r.prompt,
      askedAt: now,
      answeredAt: null,
    };
    if (r.schema) fresh.schema = r.schema;
    if (r.method) fresh.method = r.method;
    return fresh;
  });
  if (
    prior?.requests &&
    prior.requests.length === requests.length &&
    prior.requests.every((r, i) => r === requests[i])
  )
    return prior;
  return summarise({ askedAt: prior?.requests ? prior.askedAt : now, deadlineAt: null }, requests);
}

/** Request ids of a pending input: each of several, or its one. */
export function pendingIds(p: PendingInput | null): string[] {
  if (!p) return [];
  return p.requests ? p.requests.map((r) => r.requestId) : [p.requestId];
}

/**
 * How many webhook delivery ids an envelope keeps. The durable dedup is the deliveries table; this is
 * for a person reading one job: enough for a job's normal life (an A2A task pushes one delivery per
 * status or artifact update, typically under 20) while keeping the row small however chatty the agent.
 */
export const WEBHOOK_IDS_KEPT = 20;

/** Where an observation came from, beyond its source: the push delivery that woke us. */
export interface ObserveMeta {
  /** Delivery id of the (verified, new) webhook this observation answers. */
  webhookId?: string;
  /**
   * The job's record as the caller last had it from the store (its own previous write): the first
   * attempt decides against it instead of reading the record again. Safe however stale it is: a write
   * decided against an old version fails its version check and the next attempt reads afresh, and a
   * snapshot that changes nothing against an old record changes nothing against a newer one (remote
   * versions only move forward). A stream watcher passes it while no other writer has touched the job.
   */
  known?: Envelope;
}

export async function observe(
  ctx: PlaneContext,
  envelopeId: string,
  snapshot: RemoteSnapshot,
  source: ObservationSource,
  meta: ObserveMeta = {},
): Promise<ObserveResult> {
  // A stale record costs one extra attempt, not one of the retries the configuration allows.
  const known = meta.known?.id === envelopeId ? meta.known : undefined;
  const attempts = ctx.config.maxObserveRetries + (known ? 1 : 0);
  for (let attempt = 0; attempt < attempts; attempt++) {
    const env = attempt === 0 && known ? known : await ctx.store.getEnvelope(envelopeId);
    if (!env) throw new TaskplaneError('not_found', 'envelope not found');
    const now = ctx.clock.now();
    // A snapshot of another remote job than the one bound (a resubmission replaced it between the
    // caller's read and this one) is not news about this job.
    // A snapshot that names the bound id as the one it replaces (an MCP input round that became a task)
    // is this job's.
    const otherJob =
      env.remoteId !== null &&
      snapshot.remoteId !== '' &&
      snapshot.remoteId !== env.remoteId &&
      snapshot.replacesRemoteId !== env.remoteId;
    const decision: TransitionDecision = otherJob
      ? { apply: false, reason: 'stale' }
      : decideTransition(
          { state: env.state, nativeState: env.nativeState, remoteVersion: env.remoteVersion },
          {
            state: snapshot.state,
            nativeState: snapshot.nativeState,
            remoteVersion: snapshot.remoteVersion,
            reason: snapshot.reason ?? null,
          },
        );
    // The remote's word about this job, whatever it changes: reconciliation need not ask again soon.
    if (decision.apply && isTerminal(decision.next.state)) ctx.heard.forget(env.target, env.id);
    else if (!otherJob && source !== 'reconcile' && source !== 'local')
      ctx.heard.note(env.target, env.id, now);
    const schema = env.acceptance?.status === 'pending' ? env.acceptance.schema : undefined;
    if (decision.apply && isTerminal(snapshot.state) && schema && ctx.schemaCompiler) {
      // Deciding acceptance below is synchronous: a validator the cache no longer holds is compiled
      // off the event loop first (a no-op when it is held).
      await prepareAcceptance(schema, ctx.schemaCompiler, ctx.config.acceptance);
    }
    // A stale snapshot must not touch anything; a duplicate may still carry new artifact chunks.
    const fresh = decision.apply || decision.reason === 'duplicate';
    const next: Envelope = { ...env };
    const events: NewEnvelopeEvent[] = [];
    const event = (type: EnvelopeEventType, data: Record<string, unknown>) =>
      events.push({ envelopeId: env.id, tenant: env.tenant, type, at: now, data: { source, ...data } });

    if (fresh && !isTerminal(env.state)) {
      if (
        snapshot.replacesRemoteId !== undefined &&
        env.remoteId === snapshot.replacesRemoteId &&
        snapshot.remoteId &&
        snapshot.remoteId !== env.remoteId
      ) {
        // The job moved to a remote object of its own (an MCP input round became a task).
        next.remoteId = snapshot.remoteId;
        event('bound', { remoteId: snapshot.remoteId, replaces: snapshot.replacesRemoteId });
      }
      if (env.remoteId === null && snapshot.remoteId) {
        next.remoteId = snapshot.remoteId;
        event('bound', { remoteId: snapshot.remoteId });
      }
      if (snapshot.contextId && env.contextId !== snapshot.contextId) next.contextId = snapshot.contextId;
      if (snapshot.cursor !== undefined && snapshot.cursor !== env.streamCursor)
        next.streamCursor = snapshot.cursor;
      const arts = artifactRefs(env.artifacts, snapshot, source, now, ctx.config.results);
      next.artifacts = arts.refs;
      for (const a of arts.changed)
        event('artifact', {
          artifactId: a.artifactId,
          hash: a.hash,
          name: a.name ?? null,
          size: a.size ?? null,
          kept: a.parts !== undefined,
        });
      if (snapshot.result !== undefined) next.result = snapshot.result;
      if (snapshot.statusMessage !== undefined) {
        const message = snapshot.statusMessage?.slice(0, STATUS_MESSAGE_MAX_CHARS) ?? null;
        if (message !== (env.statusMessage ?? null)) next.statusMessage = message;
      }
      // Usage is what budgets are checked against, so a change alone is worth a write.
      if (snapshot.usage && JSON.stringify(snapshot.usage) !== JSON.stringify(env.usage))
        next.usage = snapshot.usage;
    }

    if (decision.apply) {
      next.state = decision.next.state;
      next.nativeState = decision.next.nativeState;
      next.remoteVersion = decision.next.remoteVersion;
      if (snapshot.stateTimestamp !== null) next.stateTimestamp = snapshot.stateTimestamp;
      if (snapshot.error) next.error = snapshot.error;
      if (env.state !== next.state) {
        event('state_changed', {
          from: env.state,
          to: next.state,
          nativeState: next.nativeState,
          remoteVersion: next.remoteVersion,
          ...(snapshot.reason ? { reason: snapshot.reason } : {}),
          ...(next.statusMessage !== env.statusMessage && next.statusMessage
            ? { message: next.statusMessage }
            : {}),
        });
      }
      if (isTerminal(next.state) && next.cancel && next.cancel.outcome === null) {
        // The true outcome, including "completed after cancel was requested" (docs/a2a-notes.md,
        // "Completion is not acceptance").
        next.cancel = { ...next.cancel, outcome: next.state, pending: null };
        event('cancel_outcome', { outcome: next.state });
      }
      if (isTerminal(next.state) && next.acceptance) {
        const contents = (snapshot.artifacts ?? []).map((a) => a.content);
        const acceptance = decideAcceptance(next, contents, now);
        if (acceptance && acceptance !== next.acceptance) {
          next.acceptance = acceptance;
          event('acceptance', { status: acceptance.status, reasons: acceptance.reasons });
        }
      }
    }
    // What the agent says it is doing, said again without a new state: followers of the job's events
    // see it too (with a new state it rides on that state's event).
    if (next.statusMessage !== env.statusMessage && next.statusMessage && next.state === env.state)
      event('status_message', { message: next.statusMessage });
    if (fresh && !isTerminal(env.state)) {
      const pending = nextPendingInput(next, snapshot, now, 2 * ctx.config.requestTimeoutMs);
      if (pending !== env.pendingInput) {
        next.pendingInput = pending;
        const before = new Set(pendingIds(env.pendingInput));
        for (const r of pending?.requests ?? (pending ? [pending] : []))
          if (!before.has(r.requestId))
            event('input_requested', { requestId: r.requestId, prompt: r.prompt });
      }
    }

    if (meta.webhookId && !isTerminal(env.state) && !env.webhookIds.includes(meta.webhookId)) {
      // Recorded even when the state did not move: the delivery happened and confirmed the state.
      next.webhookIds = [...env.webhookIds, meta.webhookId].slice(-WEBHOOK_IDS_KEPT);
    }
    const written =
      events.length > 0 ||
      next.artifacts !== env.artifacts ||
      next.streamCursor !== env.streamCursor ||
      next.webhookIds !== env.webhookIds ||
      next.usage !== env.usage ||
      next.pendingInput !== env.pendingInput ||
      next.statusMessage !== env.statusMessage;
    // The last APPLIED stream event: a duplicate or stale frame changes nothing, so it neither moves
    // lastEventId nor costs a write of its own.
    if (written && fresh && typeof snapshot.eventId === 'string') next.lastEventId = snapshot.eventId;
    if (!written) {
      if (decision.apply === false && decision.reason !== 'stale')
        ctx.counters.count('duplicatesObservation', env);
      return { envelope: env, changed: false, written: false, decision };
    }
    next.lastConfirmedAt = now;
    next.updatedAt = now;
    try {
      const { envelope, events: added } = await ctx.store.updateEnvelope(
        withRetention(next, ctx.config.retention, now),
        env.version,
        events,
      );
      if (!isTerminal(env.state) && isTerminal(envelope.state)) finished(ctx, envelope, now);
      if (decision.apply && env.state !== envelope.state && snapshot.stateTimestamp !== null) {
        ctx.counters.delay(source, now - snapshot.stateTimestamp, env);
      }
      if (next.usage !== env.usage) ctx.onUsage?.(envelope);
      acceptanceWritten(ctx, env, envelope);
      if (
        typeof envelope.acceptance?.verification?.dueAt === 'number' &&
        typeof env.acceptance?.verification?.dueAt !== 'number'
      )
        ctx.onVerificationDue?.(envelope.id);
      const lastSeq = added.at(-1)?.seq;
      return {
        envelope,
        changed: env.state !== envelope.state,
        written: true,
        decision,
        ...(lastSeq !== undefined ? { lastSeq } : {}),
      };
    } catch (err) {
      if (err instanceof VersionConflictError) continue;
      throw err;
    }
  }
  throw new TaskplaneError('unavailable', 'observe: too many concurrent writers', { retryable: true });
}

/** A write decided the job's acceptance (or undid a decision): tell the plane's listeners. */
function acceptanceWritten(ctx: PlaneContext, before: Envelope, after: Envelope): void {
  const was = before.acceptance?.status;
  const now = after.acceptance?.status;
  if (now !== was && (now === 'accepted' || now === 'rejected' || was === 'accepted' || was === 'rejected'))
    ctx.onAcceptance?.(after);
}

/** A job just reached its terminal state: its span ends, and the counters let go of its per-job entries. */
function finished(ctx: PlaneContext, envelope: Envelope, now: number): void {
  recordTaskSpan(envelope, now);
  ctx.counters.finished(envelope.id, envelope.tenant);
}

/**
 * Local writes that are not observations of the remote (cancel intent, answers, lost, rebinding after a
 * resubmission) go through this CAS helper: `mutate` returns the next envelope and its events, or null
 * to write nothing. Retries from a fresh read on a version conflict.
 */
export async function updateLocal(
  ctx: PlaneContext,
  envelopeId: string,
  mutate: (
    env: Envelope,
    now: number,
  ) => { next: Envelope; events: Array<{ type: EnvelopeEventType; data: Record<string, unknown> }> } | null,
): Promise<{ envelope: Envelope; written: boolean }> {
  for (let attempt = 0; attempt < ctx.config.maxObserveRetries; attempt++) {
    const env = await ctx.store.getEnvelope(envelopeId);
    if (!env) throw new TaskplaneError('not_found', 'envelope not found');
    const now = ctx.clock.now();
    const change = mutate(env, now);
    if (!change) return { envelope: env, written: false };
    const next = withRetention({ ...change.next, updatedAt: now }, ctx.config.retention, now);
    const events = change.events.map((e) => ({
      envelopeId: env.id,
      tenant: env.tenant,
      type: e.type,
      at: now,
      data: e.data,
    }));
    try {
      const { envelope } = await ctx.store.updateEnvelope(next, env.version, events);
      if (!isTerminal(env.state) && isTerminal(envelope.state)) finished(ctx, envelope, now);
      acceptanceWritten(ctx, env, envelope);
      return { envelope, written: true };
    } catch (err) {
      if (err instanceof VersionConflictError) continue;
      throw err;
    }
  }
  throw new TaskplaneError('unavailable', 'update: too many concurrent writers', { retryable: true });
}
