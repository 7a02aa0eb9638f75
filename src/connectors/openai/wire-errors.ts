import type OpenAIClient from 'openai';
import { TaskplaneError } from '../../core/errors.ts';

type SdkModule = typeof import('openai');
let sdk: SdkModule | null = null;

/**
 * Loads the SDK on first use, so a process (or the lab's browser bundle, which imports the plane's
 * index) that never talks to OpenAI does not pay for importing it.
 */
export async function loadSdk(): Promise<SdkModule> {
  sdk ??= await import('openai');
  return sdk;
}

export type { OpenAIClient };

/**
 * OpenAI SDK errors → our stable codes (connector.ts contract).
 *
 * `not_found` only for OpenAI's own answer: a 404 whose body is OpenAI's JSON error object (the SDK puts
 * it on `err.error`). A 404 without it (a proxy's page, a wrong base URL) says nothing about the
 * response: `unavailable` with `route: not_protocol`. A 429 is a refusal before any work: the create
 * certainly started nothing, so it is marked `notSent` (the engine may then start it again without
 * risking a second response). A 5xx or a dropped connection after the request left may have started
 * one.
 */
export function fromSdkError(err: unknown, during: string): TaskplaneError {
  if (err instanceof TaskplaneError) return err;
  // Not loaded yet: nothing the SDK threw can be on hand.
  if (!sdk) return new TaskplaneError('unavailable', `${during}: connection lost`, { cause: err });
  const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } = sdk;
  if (err instanceof APIUserAbortError)
    return new TaskplaneError('unavailable', `${during}: aborted`, { cause: err });
  if (err instanceof APIConnectionTimeoutError)
    return new TaskplaneError('timeout', `${during}: timed out`, { cause: err });
  if (err instanceof APIConnectionError) {
    const refused = /ECONNREFUSED/.test(String(causeCode(err)));
    return new TaskplaneError('unavailable', `${during}: connection failed`, {
      cause: err,
      ...(refused ? { details: { notSent: true } } : {}),
    });
  }
  if (err instanceof APIError) {
    const status = err.status;
    const body = err.error as { message?: unknown; type?: unknown; code?: unknown } | undefined;
    const openaiBody = !!body && typeof body === 'object' && typeof body.message === 'string';
    const message =
      `${during}: ${status ?? 'no status'} ${openaiBody ? String(body.message).slice(0, 200) : ''}`.trim();
    const details: Record<string, unknown> = { status: status ?? null };
    if (openaiBody && typeof body.code === 'string') details.remoteCode = body.code;
    if (status === 404)
      return openaiBody
        ? new TaskplaneError('not_found', message, { cause: err, details })
        : new TaskplaneError('unavailable', message, {
            cause: err,
            details: { ...details, route: 'not_protocol' },
          });
    if (status === 429)
      return new TaskplaneError('unavailable', message, {
        cause: err,
        details: { ...details, notSent: true },
      });
    if (status === undefined || status >= 500 || status === 408)
      return new TaskplaneError('unavailable', message, { cause: err, details });
    if (status === 401) return new TaskplaneError('unauthenticated', message, { cause: err, details });
    if (status === 403) return new TaskplaneError('permission_denied', message, { cause: err, details });
    if (status === 409) return new TaskplaneError('failed_precondition', message, { cause: err, details });
    if (status === 400 || status === 422)
      return new TaskplaneError('invalid_argument', message, {
        cause: err,
        details,
        ...(typeof (err as { param?: unknown }).param === 'string'
          ? { field: (err as { param: string }).param }
          : {}),
      });
    return new TaskplaneError('remote_error', message, { cause: err, details });
  }
  // undici reports a dropped stream as `TypeError: terminated`.
  return new TaskplaneError('unavailable', `${during}: stream dropped`, { cause: err });
}

function causeCode(err: Error): unknown {
  let cur: unknown = err;
  for (let i = 0; i < 5 && cur; i++) {
    const c = cur as { code?: unknown; cause?: unknown };
    if (typeof c.code === 'string') return c.code;
    cur = c.cause;
  }
  return undefined;
}
