import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Logger } from '../core/logger.ts';
import { isTaskplaneError, type ErrorCode } from '../core/errors.ts';
import { bodyLeftUnread } from './request-body.ts';

/**
 * Our error codes → HTTP, at the edge only: the one table the plane server answers from. The
 * body is always `{"error": {"code", "message", "field"}}`; internal errors never show their text.
 */
const STATUS: Record<ErrorCode, ContentfulStatusCode> = {
  invalid_argument: 400,
  unprocessable: 422,
  payload_too_large: 413,
  unsupported_media_type: 415,
  resource_exhausted: 429,
  not_found: 404,
  conflict: 409,
  version_conflict: 409,
  unauthenticated: 401,
  permission_denied: 403,
  failed_precondition: 409,
  unsupported: 400,
  unavailable: 503,
  timeout: 504,
  remote_error: 502,
  schema_too_new: 500,
  config: 500,
  internal: 500,
};

export interface ErrorBody {
  error: {
    code: string;
    message: string;
    field: string | null;
    /** 422 only: where the input fails the target's input schema (plane/acceptance.ts InputViolation). */
    violations?: unknown[];
  };
}

export function errorResponse(err: unknown): { status: ContentfulStatusCode; body: ErrorBody } {
  if (isTaskplaneError(err)) {
    const status = STATUS[err.code] ?? 500;
    const message =
      status >= 500 && err.code !== 'unavailable' && err.code !== 'timeout' ? 'internal error' : err.message;
    const body: ErrorBody = { error: { code: err.code, message, field: err.field ?? null } };
    // Only this code's details are shown: they are built from the caller's own input and the schema.
    if (err.code === 'unprocessable' && Array.isArray(err.details?.violations))
      body.error.violations = err.details.violations;
    return { status, body };
  }
  return { status: 500, body: { error: { code: 'internal', message: 'internal error', field: null } } };
}

export function sendError(c: Context, err: unknown): Response {
  const { status, body } = errorResponse(err);
  // A refused request body that may still be arriving: close rather than read the rest (request-body.ts).
  if (isTaskplaneError(err) && err.details?.closeConnection === true) c.header('connection', 'close');
  else if (bodyLeftUnread(c.req.raw)) c.header('connection', 'close');
  const retryAfter = isTaskplaneError(err) ? err.details?.retryAfterSeconds : undefined;
  if (typeof retryAfter === 'number') c.header('retry-after', String(retryAfter));
  return c.json(body, status);
}

/**
 * The plane server's one error handler (hono `app.onError`): routes and middleware throw, this answers
 * and logs. A 500 (anything not a TaskplaneError, or one whose code maps to 500) is a fault of ours:
 * logged at error level with its stack, as is a fault an answer hides on purpose (the webhook route
 * answers 401 whatever went wrong, with the real error as the cause). Everything else is an answer the
 * caller caused or can retry: debug only, so a client sending bad requests cannot fill the log.
 */
export function errorHandler(logger: Logger): (err: Error, c: Context) => Response {
  const isFault = (e: unknown) => errorResponse(e).status === 500;
  return (err, c) => {
    const request = { method: c.req.method, path: c.req.path };
    const { status } = errorResponse(err);
    if (status === 500) logger.error({ err, ...request }, 'request failed');
    else if (err.cause !== undefined && isFault(err.cause))
      logger.error({ err: err.cause, status, ...request }, 'request failed (answered as a refusal)');
    else {
      const cause = err.cause instanceof Error ? { cause: err.cause.message } : {};
      logger.debug({ err: err.message, ...cause, status, ...request }, 'request refused');
    }
    return sendError(c, err);
  };
}
