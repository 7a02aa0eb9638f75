import type { Context, Hono } from 'hono';
import type { Clock } from '../core/clock.ts';
import type { Envelope, EnvelopeEvent } from '../core/envelope.ts';
import { artifactView, outputSummary, registerArtifactRoutes } from './artifact-routes.ts';
import { TaskplaneError } from '../core/errors.ts';
import { isNormalizedState, NORMALIZED_STATES, type NormalizedState } from '../core/states.ts';
import type { CreateTaskRequest, Plane } from '../plane/plane.ts';
import type { EnvelopeStore } from '../store/store.ts';
import { eventStream, latestEventSeq, resumePoint } from './event-stream.ts';
import { jsonLines } from './event-export.ts';
import { readJsonObject, type BodyLimits } from './request-body.ts';
import type { TenantLimits } from './tenant-limits.ts';

/** Hono variables set by the auth middleware. */
export type ServerEnv = { Variables: { tenant: string; keyId: string } };

/**
 * What the API shows of an envelope: everything but the push token hash, with artifacts described
 * (their content is at /v1/tasks/{id}/artifacts) and summed up in `output`.
 */
export function taskView(env: Envelope): Record<string, unknown> {
  const { subscription, artifacts, ...rest } = env;
  return {
    ...rest,
    statusMessage: env.statusMessage ?? null,
    artifacts: artifacts.map(artifactView),
    output: outputSummary(env),
    subscription: subscription
      ? { kind: subscription.kind, registeredAt: subscription.registeredAt ?? null }
      : null,
  };
}

export function eventView(e: EnvelopeEvent): EnvelopeEvent {
  return e;
}

function timeParam(field: string, raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const n = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (!Number.isFinite(n))
    throw new TaskplaneError('invalid_argument', `${field}: epoch ms or ISO 8601 time`, { field });
  return n;
}

function str(body: Record<string, unknown>, field: string): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string')
    throw new TaskplaneError('invalid_argument', `${field}: must be a string`, { field });
  return v;
}

/** Longest wait a create may ask for, so a request never outlives its proxy's patience. */
const MAX_CREATE_WAIT_MS = 60_000;

/**
 * How long POST /v1/tasks waits for the remote's first answer: not at all unless asked, with
 * `?wait=started` (until the start answers or its first attempt fails) or `Prefer: wait=N` (RFC 7240,
 * at most N seconds).
 */
function createWait(prefer: string | undefined, query: string | undefined): 'started' | number | undefined {
  if (query !== undefined && query !== '') {
    if (query === 'started') return 'started';
    throw new TaskplaneError('invalid_argument', "wait: must be 'started'", { field: 'wait' });
  }
  const m = /(?:^|[,;\s])wait\s*=\s*"?([^",;\s]*)/i.exec(prefer ?? '');
  if (!m) return undefined;
  const seconds = Number(m[1]);
  if (!(Number.isFinite(seconds) && seconds >= 0))
    throw new TaskplaneError('invalid_argument', 'Prefer: wait must be a number of seconds', {
      field: 'prefer',
    });
  return Math.min(seconds * 1000, MAX_CREATE_WAIT_MS);
}

/**
 * The key from the Idempotency-Key header or the body's idempotencyKey. Both given and different is a
 * 400: picking one silently would dedupe on a key the caller did not mean.
 */
function oneIdempotencyKey(header: string | undefined, body: string | undefined): string | undefined {
  if (header !== undefined && body !== undefined && header !== body)
    throw new TaskplaneError(
      'invalid_argument',
      'idempotencyKey: the body and the Idempotency-Key header name different keys; send one, or the same in both',
      { field: 'idempotencyKey' },
    );
  return header ?? body;
}

export function registerTaskRoutes(
  app: Hono<ServerEnv>,
  deps: {
    plane: Plane;
    store: EnvelopeStore;
    signal: AbortSignal;
    limits: BodyLimits;
    tenantLimits: TenantLimits;
    revoked: (keyId: string) => AbortSignal;
    /** Time for the streams' batching and keep-alive. */
    clock: Clock;
  },
): void {
  const { plane, store } = deps;
  // A tenant's bodies are read at its body rate (tenant-limits.ts paceBody).
  const jsonBody = (c: Context<ServerEnv>) =>
    readJsonObject(c.req.raw, deps.limits, (bytes) => deps.tenantLimits.paceBody(c.get('tenant'), bytes));

  app.post('/v1/tasks', async (c) => {
    const body = await jsonBody(c);
    const idempotencyKey = oneIdempotencyKey(c.req.header('idempotency-key'), str(body, 'idempotencyKey'));
    const acceptance = body.acceptance as CreateTaskRequest['acceptance'] | undefined;
    const wait = createWait(c.req.header('prefer'), c.req.query('wait'));
    const { envelope, created } = await plane.create(
      {
        tenant: c.get('tenant'),
        target: str(body, 'target') ?? '',
        input: body.input,
        idempotencyKey: idempotencyKey ?? null,
        contextId: str(body, 'contextId') ?? null,
        workflowId: str(body, 'workflowId') ?? null,
        parentId: str(body, 'parentId') ?? null,
        actor: str(body, 'actor') ?? null,
        keyId: c.get('keyId'),
        expectedDurationMs: (body.expectedDurationMs as number | undefined) ?? null,
        timeoutMs: (body.timeoutMs as number | undefined) ?? null,
        ...(acceptance ? { acceptance } : {}),
        ...(body.budget !== undefined ? { budget: body.budget as { limit: number; unit: string } } : {}),
      },
      wait === undefined ? {} : { wait },
    );
    // 202 while the remote has not answered yet (the start runs behind the response), 201 once it has.
    const answered = envelope.remoteId !== null || envelope.state !== 'accepted';
    c.header('Location', `/v1/tasks/${encodeURIComponent(envelope.id)}`);
    return c.json(taskView(envelope), !created ? 200 : answered ? 201 : 202);
  });

  app.get('/v1/tasks', async (c) => {
    const q = c.req.query();
    const states = q.state ? q.state.split(',').map((s) => s.trim()) : undefined;
    const unknownStates = states?.filter((s) => !isNormalizedState(s)) ?? [];
    if (unknownStates.length > 0)
      throw new TaskplaneError(
        'invalid_argument',
        `state: unknown ${unknownStates.map((s) => `'${s}'`).join(', ')}; one of ${NORMALIZED_STATES.join(', ')}`,
        { field: 'state' },
      );
    const limit = q.limit ? Number(q.limit) : undefined;
    if (limit !== undefined && !(Number.isInteger(limit) && limit > 0 && limit <= 500)) {
      throw new TaskplaneError('invalid_argument', 'limit: integer in 1..500', { field: 'limit' });
    }
    const updatedAfter = timeParam('updatedAfter', q.updatedAfter);
    // Read before the list: tailing /v1/events?after=eventSeq then misses nothing the list missed.
    const eventSeq = await latestEventSeq(store);
    const page = await plane.list(c.get('tenant'), {
      ...(states ? { states: states as NormalizedState[] } : {}),
      ...(q.target ? { target: q.target } : {}),
      ...(q.workflowId ? { workflowId: q.workflowId } : {}),
      ...(updatedAfter !== undefined ? { updatedAfter } : {}),
      ...(q.cursor ? { cursor: q.cursor } : {}),
      ...(limit ? { limit } : {}),
    });
    return c.json({ tasks: page.items.map(taskView), nextCursor: page.nextCursor ?? null, eventSeq });
  });

  app.get('/v1/tasks/:id', async (c) => {
    return c.json(taskView(await plane.get(c.get('tenant'), c.req.param('id'))));
  });

  app.post('/v1/tasks/:id/cancel', async (c) => {
    const body = await jsonBody(c);
    return c.json(
      taskView(await plane.cancel(c.get('tenant'), c.req.param('id'), str(body, 'actor') ?? null)),
    );
  });

  app.post('/v1/tasks/:id/acceptance', async (c) => {
    const body = await jsonBody(c);
    const env = await plane.decideAcceptance(c.get('tenant'), c.req.param('id'), {
      decision: body.decision as 'accepted' | 'rejected',
      reason: body.reason as string,
      keyId: c.get('keyId') ?? null,
      actor: str(body, 'actor') ?? null,
    });
    return c.json(taskView(env));
  });

  app.post('/v1/tasks/:id/input', async (c) => {
    const body = await jsonBody(c);
    const env = await plane.answer(c.get('tenant'), c.req.param('id'), {
      requestId: str(body, 'requestId') ?? '',
      value: body.value,
      actor: str(body, 'actor') ?? null,
    });
    return c.json(taskView(env));
  });

  app.get('/v1/tasks/:id/history', async (c) => {
    const tenant = c.get('tenant');
    const id = c.req.param('id');
    await plane.get(tenant, id);
    const after = Number(c.req.query('after') ?? '0') || 0;
    const format = c.req.query('format') ?? 'json';
    if (format === 'jsonl') return jsonLines(store, tenant, id, after);
    if (format !== 'json')
      throw new TaskplaneError('invalid_argument', "format: must be 'json' or 'jsonl'", { field: 'format' });
    return c.json({ events: await plane.events(tenant, { afterSeq: after, envelopeId: id }) });
  });

  app.get('/v1/tasks/:id/events', async (c) => {
    const tenant = c.get('tenant');
    const id = c.req.param('id');
    await plane.get(tenant, id);
    const afterSeq = await resumePoint(c, store);
    return eventStream(c, {
      store,
      tenant,
      envelopeId: id,
      afterSeq,
      signal: deps.signal,
      revoked: deps.revoked(c.get('keyId')),
      onEnd: deps.tenantLimits.openStream(tenant),
      pace: () => deps.tenantLimits.paceStreamSend(tenant),
      clock: deps.clock,
    });
  });

  app.get('/v1/events', async (c) => {
    const tenant = c.get('tenant');
    const afterSeq = await resumePoint(c, store);
    return eventStream(c, {
      store,
      tenant,
      afterSeq,
      signal: deps.signal,
      revoked: deps.revoked(c.get('keyId')),
      onEnd: deps.tenantLimits.openStream(tenant),
      pace: () => deps.tenantLimits.paceStreamSend(tenant),
      clock: deps.clock,
    });
  });

  registerArtifactRoutes(app, { plane });

  app.get('/v1/signals', async (c) => {
    return c.json(await plane.signals(c.get('tenant')));
  });
}
