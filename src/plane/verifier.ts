import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { backoffPolicy, nextBackoff } from '../core/backoff.ts';
import type { AcceptanceCheck, Envelope, VerifierRef } from '../core/envelope.ts';
import { TaskplaneError } from '../core/errors.ts';
import { isTerminal } from '../core/states.ts';
import { signatureHeaders, signingKey } from '../protocols/standard-webhooks.ts';
import type { AcceptanceLimits } from './acceptance-limits.ts';
import { childSignal, waitFor, type PlaneContext } from './context.ts';
import { updateLocal } from './observe.ts';

/**
 * The external verifier acceptance check (docs/plane.md, "Acceptance"): once every other check passed,
 * the plane POSTs the task's output and receipt to a URL the caller named (on the create, or the
 * target's configuration), signed with Standard Webhooks so the verifier can tell the request is ours. A
 * 2xx `{accepted, reasons}` decides; anything else is retried with backoff, and a verifier that never
 * answers leaves acceptance `pending` with the reason: never guessed either way. The progress is kept on
 * the envelope (`acceptance.verification.dueAt`, indexed), so a plane that restarts resumes it.
 *
 * The HTTP call goes through a port (VerifierPort) the server wires with the SSRF guard the host uses for
 * push URLs: the plane stays sans-I/O and runs in the browser lab without one.
 */

/** The HTTP side of verification, wired by the server (server/verifier-transport.ts). */
export interface VerifierPort {
  /** Null when `url` may be called (scheme, every resolved address public unless allowed), else why not. */
  check(url: string): Promise<string | null>;
  /**
   * POSTs `body` with `headers` to `url` (checked again at the call, connecting to the address checked,
   * no redirects), and resolves with the status and up to a bounded prefix of the body. Rejects on a
   * transport failure, or when `signal` aborts (the plane's timeout).
   */
  post(req: {
    url: string;
    body: string;
    headers: Record<string, string>;
    signal: AbortSignal;
  }): Promise<{ status: number; body: string }>;
}

/** The event type a verifier receives, in the body's `type`. */
export const VERIFY_EVENT_TYPE = 'taskplane.acceptance.verify';
const MAX_URL_CHARS = 2048;
const MAX_TASK_TIMEOUT_MS = 60_000;
const MAX_TASK_ATTEMPTS = 20;
const REASONS_KEPT = 20;
const REASON_CHARS = 1000;

const invalid = (field: string, message: string) =>
  new TaskplaneError('invalid_argument', `${field}: ${message}`, { field });

/**
 * Validates a create's `acceptance.verifier` ({url, timeoutMs?, maxAttempts?}) and checks its URL
 * through the port now, so a URL the plane will never call is a 400 at create, not a pending verdict
 * later. Errors name the field.
 */
export async function checkTaskVerifier(
  value: unknown,
  port: VerifierPort | undefined,
  limits: AcceptanceLimits,
): Promise<VerifierRef | undefined> {
  if (value === undefined || value === null) return undefined;
  const field = 'acceptance.verifier';
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid(field, 'must be an object {url}');
  const v = value as Record<string, unknown>;
  if (typeof v.url !== 'string' || v.url === '' || v.url.length > MAX_URL_CHARS)
    throw invalid(`${field}.url`, `must be an http(s) URL of at most ${MAX_URL_CHARS} characters`);
  let url: URL;
  try {
    url = new URL(v.url);
  } catch {
    throw invalid(`${field}.url`, 'is not an absolute URL');
  }
  if (url.username !== '' || url.password !== '')
    throw invalid(
      `${field}.url`,
      'must not carry credentials: requests are signed (GET /v1/verifier-secret)',
    );
  const timeoutMs = v.timeoutMs ?? limits.verifierTimeoutMs;
  if (
    typeof timeoutMs !== 'number' ||
    !Number.isInteger(timeoutMs) ||
    timeoutMs < 1 ||
    timeoutMs > MAX_TASK_TIMEOUT_MS
  )
    throw invalid(`${field}.timeoutMs`, `must be an integer in 1..${MAX_TASK_TIMEOUT_MS}`);
  const maxAttempts = v.maxAttempts ?? limits.verifierMaxAttempts;
  if (
    typeof maxAttempts !== 'number' ||
    !Number.isInteger(maxAttempts) ||
    maxAttempts < 1 ||
    maxAttempts > MAX_TASK_ATTEMPTS
  )
    throw invalid(`${field}.maxAttempts`, `must be an integer in 1..${MAX_TASK_ATTEMPTS}`);
  if (!port) throw invalid(`${field}.url`, 'this plane has no verifier transport configured');
  const refused = await port.check(v.url);
  if (refused !== null) throw invalid(`${field}.url`, `refused: ${refused}`);
  return { url: v.url, timeoutMs, maxAttempts, from: 'task' };
}

/** The verifier of a target's configuration (AcceptanceLimitsOptions `verifiers`), as a task carries it. */
export function targetVerifier(limits: AcceptanceLimits, target: string): VerifierRef | undefined {
  const v = Object.hasOwn(limits.verifiers, target) ? limits.verifiers[target] : undefined;
  if (!v) return undefined;
  return {
    url: v.url,
    timeoutMs: v.timeoutMs ?? limits.verifierTimeoutMs,
    maxAttempts: v.maxAttempts ?? limits.verifierMaxAttempts,
    from: 'target',
  };
}

/** The setting that holds the plane's verifier root secret (per-tenant keys are derived from it). */
export const VERIFIER_SECRET_SETTING = 'verifier-signing-secret';

function base64(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

/** A fresh root secret: 32 random bytes. */
export function newRootSecret(bytes: Uint8Array): string {
  return base64(bytes);
}

/**
 * A tenant's verifier signing secret (`whsec_…`), derived from the plane's root: each tenant verifies
 * with its own, so one tenant's key cannot sign a request another tenant's verifier accepts.
 */
export function deriveTenantSecret(root: string, tenant: string): string {
  return `whsec_${base64(hmac(sha256, utf8ToBytes(root), utf8ToBytes(`taskplane verifier\u0000${tenant}`)))}`;
}

/** The tenant's secret, the root made on first use and kept in the store's settings (shared by planes). */
export async function tenantVerifierSecret(ctx: PlaneContext, tenant: string): Promise<string> {
  const root =
    (await ctx.store.getSetting(VERIFIER_SECRET_SETTING)) ??
    (await ctx.store.putSettingIfAbsent(VERIFIER_SECRET_SETTING, newRootSecret(ctx.random.bytes(32))));
  return deriveTenantSecret(root, tenant);
}

/** Calls `each` with every job whose verifier call is due (indexed), oldest update first. */
export async function forEachDueVerification(
  ctx: PlaneContext,
  each: (envelopeId: string) => void,
): Promise<void> {
  let cursor: string | undefined;
  do {
    const page = await ctx.store.listEnvelopes({
      verificationDue: true,
      order: 'asc',
      limit: 500,
      ...(cursor ? { cursor } : {}),
    });
    for (const env of page.items) each(env.id);
    cursor = page.nextCursor;
  } while (cursor);
}

/** What the verifier receives: the task's output and receipt, and the checks already passed. */
export function verifyRequestBody(env: Envelope): Record<string, unknown> {
  return {
    type: VERIFY_EVENT_TYPE,
    taskId: env.id,
    target: env.target,
    workflowId: env.workflowId,
    state: env.state,
    output:
      env.result !== undefined && env.result !== null
        ? env.result
        : env.artifacts.map((a) => ({
            artifactId: a.artifactId,
            name: a.name ?? null,
            parts: a.parts ?? null,
          })),
    receiptId: env.acceptance?.receiptId ?? null,
    artifacts: env.artifacts.map((a) => ({
      artifactId: a.artifactId,
      name: a.name ?? null,
      mediaType: a.mediaType ?? null,
      hash: a.hash,
      size: a.size ?? null,
    })),
    checks: env.acceptance?.checks ?? [],
  };
}

type Attempt =
  | { kind: 'answered'; accepted: boolean; reasons: string[] }
  | { kind: 'failed'; error: string; retry: boolean };

/** Reads a verifier's answer: only a 2xx `{accepted: boolean, reasons?: string[]}` decides. */
export function readAnswer(status: number, text: string): Attempt {
  if (status >= 200 && status < 300) {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return { kind: 'failed', error: `HTTP ${status} with a body that is not JSON`, retry: true };
    }
    const b = body as { accepted?: unknown; reasons?: unknown } | null;
    const reasons = b?.reasons ?? [];
    if (
      typeof b !== 'object' ||
      b === null ||
      typeof b.accepted !== 'boolean' ||
      !Array.isArray(reasons) ||
      !reasons.every((r) => typeof r === 'string')
    )
      return {
        kind: 'failed',
        error: `HTTP ${status} without {accepted: boolean, reasons: string[]}`,
        retry: true,
      };
    const kept = (reasons as string[]).slice(0, REASONS_KEPT).map((r) => r.slice(0, REASON_CHARS));
    return { kind: 'answered', accepted: b.accepted, reasons: kept };
  }
  // A request timeout, a rate limit and a server error can pass; any other answer will not change by
  // asking again (a 401 is a verifier that does not know our key yet: a person decides).
  const retry = status === 408 || status === 429 || status >= 500;
  return { kind: 'failed', error: `HTTP ${status}`, retry };
}

/**
 * Calls the verifier of one envelope until it answers or the attempts are spent, writing each attempt to
 * the envelope (so a restart resumes from the last one). Returns when nothing is due any more, or when
 * the plane stops.
 */
export async function runVerification(
  ctx: PlaneContext,
  envelopeId: string,
  port: VerifierPort,
): Promise<void> {
  const policy = backoffPolicy({
    initialIntervalMs: ctx.config.acceptance.verifierRetryMs,
    maximumIntervalMs: Math.max(ctx.config.acceptance.verifierRetryMs, 300_000),
  });
  for (;;) {
    if (ctx.signal.aborted) return;
    const env = await ctx.store.getEnvelope(envelopeId);
    const acceptance = env?.acceptance;
    const verifier = acceptance?.verifier;
    const dueAt = acceptance?.verification?.dueAt;
    if (
      !env ||
      !verifier ||
      acceptance.status !== 'pending' ||
      typeof dueAt !== 'number' ||
      !isTerminal(env.state)
    )
      return;
    const wait = dueAt - ctx.clock.now();
    if (wait > 0 && !(await waitFor(ctx.clock, wait, ctx.signal))) return;
    const attempt = await callOnce(ctx, env, verifier, port);
    if (ctx.signal.aborted) return;
    const attempts = (acceptance.verification?.attempts ?? 0) + 1;
    await updateLocal(ctx, envelopeId, (cur, now) => {
      const a = cur.acceptance;
      // A person decided meanwhile, or another plane recorded this attempt: theirs stands.
      if (
        !a ||
        a.status !== 'pending' ||
        a.verification?.dueAt == null ||
        (a.verification.attempts ?? 0) >= attempts
      )
        return null;
      if (attempt.kind === 'answered') {
        const check: AcceptanceCheck = {
          check: 'verifier',
          verdict: attempt.accepted ? 'passed' : 'failed',
          reasons: attempt.reasons,
        };
        const status = attempt.accepted ? 'accepted' : 'rejected';
        const reasons = attempt.accepted
          ? []
          : attempt.reasons.length
            ? attempt.reasons
            : ['the verifier rejected it'];
        return {
          next: {
            ...cur,
            acceptance: {
              ...a,
              status,
              reasons,
              checks: [...(a.checks ?? []), check],
              verification: { dueAt: null, attempts, lastError: null, outcome: 'answered' },
              decidedAt: now,
            },
          },
          events: [{ type: 'acceptance', data: { source: 'verifier', status, reasons, attempts } }],
        };
      }
      const last = !attempt.retry || attempts >= verifier.maxAttempts;
      const delay = last ? undefined : nextBackoff(policy, attempts - 1, ctx.random);
      const reasons = last
        ? [`verifier gave no verdict after ${attempts} attempt(s): ${attempt.error}`]
        : a.reasons;
      return {
        next: {
          ...cur,
          acceptance: {
            ...a,
            reasons,
            verification: {
              dueAt: last ? null : now + (delay ?? 0),
              attempts,
              lastError: attempt.error,
              outcome: last ? 'gave_up' : null,
            },
          },
        },
        events: last
          ? [{ type: 'acceptance', data: { source: 'verifier', status: 'pending', reasons, attempts } }]
          : [],
      };
    });
    if (attempt.kind === 'failed')
      ctx.logger.warn({ envelopeId, attempts, err: attempt.error }, 'acceptance verifier gave no verdict');
  }
}

async function callOnce(
  ctx: PlaneContext,
  env: Envelope,
  verifier: VerifierRef,
  port: VerifierPort,
): Promise<Attempt> {
  const body = JSON.stringify(verifyRequestBody(env));
  const key = signingKey(await tenantVerifierSecret(ctx, env.tenant), 'verifier secret');
  // One id per task: a verifier that already answered this task can answer the same again.
  const headers = {
    'content-type': 'application/json',
    ...signatureHeaders(key, `vfy_${env.id}`, ctx.clock.now(), body),
  };
  const timeout = new AbortController();
  const cancelTimer = ctx.clock.setTimer(verifier.timeoutMs, () =>
    timeout.abort(new TaskplaneError('timeout', 'verifier timed out')),
  );
  try {
    const res = await port.post({
      url: verifier.url,
      body,
      headers,
      signal: childSignal(ctx.signal, timeout.signal),
    });
    return readAnswer(res.status, res.body);
  } catch (err) {
    if (timeout.signal.aborted)
      return { kind: 'failed', error: `timed out after ${verifier.timeoutMs} ms`, retry: true };
    const message = err instanceof TaskplaneError ? err.message : 'the request failed';
    return { kind: 'failed', error: message, retry: true };
  } finally {
    cancelTimer();
  }
}
