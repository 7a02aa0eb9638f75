/**
 * One small error hierarchy with stable codes (undici style). Translation to JSON-RPC, HTTP, A2A or MCP
 * shapes happens only at the edge (server/, protocols/); a client never sees raw internal text.
 *
 * A request whose every field is valid can still be one the target does not take: `unprocessable` (its
 * input fails the target's input schema), apart from `invalid_argument` (a field is wrong).
 *
 * Bad input has two codes, by who supplied it: `config` for the operator's configuration (options, flags,
 * environment, files read at start), `invalid_argument` for a caller's request. A `config` error that
 * reaches an HTTP edge is the server's fault, not the caller's, so it answers 500.
 *
 * `resource_exhausted` is a caller over its share (a per-tenant limit of server/tenant-limits.ts): retry
 * later, after `details.retryAfterSeconds` when given.
 */
export type ErrorCode =
  | 'invalid_argument'
  | 'unprocessable'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'resource_exhausted'
  | 'not_found'
  | 'conflict'
  | 'version_conflict'
  | 'unauthenticated'
  | 'permission_denied'
  | 'failed_precondition'
  | 'unsupported'
  | 'unavailable'
  | 'timeout'
  | 'remote_error'
  | 'schema_too_new'
  | 'config'
  | 'internal';

export interface TaskplaneErrorOptions {
  /** The request or config field at fault, when one is. */
  field?: string;
  retryable?: boolean;
  cause?: unknown;
  details?: Record<string, unknown>;
}

export class TaskplaneError extends Error {
  readonly code: ErrorCode;
  readonly field: string | undefined;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: TaskplaneErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TaskplaneError';
    this.code = code;
    this.field = options.field;
    this.retryable =
      options.retryable ?? (code === 'unavailable' || code === 'timeout' || code === 'resource_exhausted');
    this.details = options.details;
  }
}

export const invalidArgument = (field: string, message: string) =>
  new TaskplaneError('invalid_argument', `${field}: ${message}`, { field });

/** A configuration value is wrong; the message starts with the field (`poll.multiplier: must be >= 1`). */
export const configError = (field: string, message: string) =>
  new TaskplaneError('config', `${field}: ${message}`, { field });

export const notFound = (what: string) => new TaskplaneError('not_found', `${what} not found`);

/**
 * A remote answered, but not in a form its protocol reads: an event that is not JSON, JSON that is not
 * the protocol's answer, a success without the answer asked for, a start that names no job. That is no
 * verdict on the job: the request may have been taken (a start may have created the task), so it is
 * `remote_error` marked retryable, never recorded as an outcome; a start is asked again with the same
 * messageId, or found (connectors/connector.ts).
 */
export const unreadableAnswer = (what: string, cause?: unknown) =>
  new TaskplaneError('remote_error', `remote: ${what}`, {
    retryable: true,
    ...(cause === undefined ? {} : { cause }),
  });

/** An optimistic-concurrency check failed: someone else wrote the record first. Retry from a fresh read. */
export class VersionConflictError extends TaskplaneError {
  constructor(what: string) {
    super('version_conflict', `${what} was changed by another writer`, { retryable: true });
    this.name = 'VersionConflictError';
  }
}

export function isTaskplaneError(err: unknown): err is TaskplaneError {
  return err instanceof TaskplaneError;
}
