import type AnthropicClient from '@anthropic-ai/sdk';
import { TaskplaneError } from '../../core/errors.ts';

type SdkModule = typeof import('@anthropic-ai/sdk');
let sdk: SdkModule | null = null;

/**
 * Loads the SDK on first use, so a process that never talks to Claude (every other CLI command) does
 * not pay for importing it at start.
 */
export async function loadSdk(): Promise<SdkModule> {
  sdk ??= await import('@anthropic-ai/sdk');
  return sdk;
}

export type { AnthropicClient };

/**
 * `@anthropic-ai/sdk` errors → our stable codes (connector.ts contract). `not_found` only for the
 * API's own answer: a 404 whose body is the Anthropic error envelope with `not_found_error`. A 404
 * without it (a proxy, a wrong base URL) says nothing about the session: `unavailable`, marked
 * `route: not_protocol`. The remote's message is cut short and never shown as ours.
 */
export function claudeError(err: unknown, what: string): TaskplaneError {
  if (err instanceof TaskplaneError) return err;
  // Not loaded yet: nothing the SDK threw can be on hand.
  const Anthropic = sdk?.default;
  if (!Anthropic) return new TaskplaneError('unavailable', `${what}: connection lost`, { cause: err });
  if (err instanceof Anthropic.APIUserAbortError)
    return new TaskplaneError('unavailable', `${what}: aborted`, { cause: err });
  if (err instanceof Anthropic.APIConnectionTimeoutError)
    return new TaskplaneError('timeout', `${what}: timed out`, { cause: err });
  if (err instanceof Anthropic.APIConnectionError)
    return new TaskplaneError('unavailable', `${what}: remote unreachable`, {
      cause: err,
      details: { notSent: refused(err) },
    });
  if (err instanceof Anthropic.APIError) {
    const status = err.status ?? 0;
    const body = (err.error ?? {}) as { type?: unknown; error?: { type?: unknown; message?: unknown } };
    const type = typeof body.error?.type === 'string' ? body.error.type : null;
    const message =
      `${what}: remote ${status} ${type ?? ''} ${String(body.error?.message ?? '').slice(0, 200)}`
        .replace(/\s+/g, ' ')
        .trim();
    const details = { httpStatus: status, ...(type ? { errorType: type } : {}) };
    if (status === 404)
      return type === 'not_found_error'
        ? new TaskplaneError('not_found', message, { cause: err, details })
        : new TaskplaneError('unavailable', message, {
            cause: err,
            details: { ...details, route: 'not_protocol' },
          });
    if (status === 401) return new TaskplaneError('unauthenticated', message, { cause: err, details });
    if (status === 403) return new TaskplaneError('permission_denied', message, { cause: err, details });
    if (status === 409) return new TaskplaneError('failed_precondition', message, { cause: err, details });
    if (status === 429 || status === 408 || status >= 500)
      return new TaskplaneError('unavailable', message, { cause: err, details });
    if (status === 400) return new TaskplaneError('remote_error', message, { cause: err, details });
    return new TaskplaneError('remote_error', message, { cause: err, details });
  }
  // A stream cut mid-body surfaces as a plain TypeError ("terminated") from fetch.
  return new TaskplaneError('unavailable', `${what}: connection lost`, { cause: err });
}

function refused(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    if ((e as { code?: unknown }).code === 'ECONNREFUSED') return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
