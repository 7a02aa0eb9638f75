import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { isTaskplaneError, type ErrorCode } from '../core/errors.ts';
import { ConfigError } from '../core/backoff.ts';

/**
 * Our error codes → HTTP, at the edge only. The body is always
 * `{"error": {"code", "message", "field"}}`; internal errors never show their text.
 */
const STATUS: Record<ErrorCode, ContentfulStatusCode> = {
  invalid_argument: 400,
  payload_too_large: 413,
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
  error: { code: string; message: string; field: string | null };
}

export function errorResponse(err: unknown): { status: ContentfulStatusCode; body: ErrorBody } {
  if (isTaskplaneError(err)) {
    const status = STATUS[err.code] ?? 500;
    const message =
      status >= 500 && err.code !== 'unavailable' && err.code !== 'timeout' ? 'internal error' : err.message;
    return { status, body: { error: { code: err.code, message, field: err.field ?? null } } };
  }
  if (err instanceof ConfigError) {
    return {
      status: 400,
      body: { error: { code: 'invalid_argument', message: err.message, field: err.field } },
    };
  }
  return { status: 500, body: { error: { code: 'internal', message: 'internal error', field: null } } };
}

export function sendError(c: Context, err: unknown): Response {
  const { status, body } = errorResponse(err);
  // A refused request body that may still be arriving: close rather than read the rest (request-body.ts).
  if (isTaskplaneError(err) && err.details?.closeConnection === true) c.header('connection', 'close');
  return c.json(body, status);
}
