import { TaskplaneError, VersionConflictError } from '../../core/errors.ts';

/** Driver errors to the port's codes; a TaskplaneError passes through. */
export function translate(err: unknown): unknown {
  if (err instanceof TaskplaneError) return err;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
      return new TaskplaneError('unavailable', 'sqlite database is locked by another writer', { cause: err });
    }
    if (code.startsWith('SQLITE_CONSTRAINT')) {
      return new TaskplaneError('conflict', 'a record with this key already exists', { cause: err });
    }
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
      return new TaskplaneError('unavailable', 'file is not a readable sqlite database', {
        cause: err,
        retryable: false,
      });
    }
    if (code === 'SQLITE_CANTOPEN') {
      return new TaskplaneError('unavailable', 'sqlite database file cannot be opened', {
        cause: err,
        retryable: false,
      });
    }
  }
  return new TaskplaneError('internal', 'sqlite store error', { cause: err });
}

/** A TaskplaneError as data, to cross from the write worker (a class instance would not). */
export interface ErrorData {
  code: TaskplaneError['code'];
  message: string;
  field: string | undefined;
  retryable: boolean;
  details: Record<string, unknown> | undefined;
  /** The driver error underneath (SQLITE_… code, message, stack), for the logs. */
  cause: { code: string | undefined; message: string; stack: string | undefined } | undefined;
}

export function errorToData(err: unknown): ErrorData {
  const e = translate(err) as TaskplaneError;
  const cause = e.cause as { code?: unknown; message?: unknown; stack?: unknown } | undefined;
  return {
    code: e.code,
    message: e.message,
    field: e.field,
    retryable: e.retryable,
    details: e.details,
    cause:
      cause === undefined
        ? undefined
        : {
            code: typeof cause.code === 'string' ? cause.code : undefined,
            message: String(cause.message ?? cause),
            stack: typeof cause.stack === 'string' ? cause.stack : undefined,
          },
  };
}

export function errorFromData(d: ErrorData): TaskplaneError {
  // The subclass callers branch on: a version conflict is retried (`instanceof VersionConflictError`).
  if (d.code === 'version_conflict')
    return Object.assign(new VersionConflictError(''), { message: d.message });
  const cause =
    d.cause && Object.assign(new Error(d.cause.message), { code: d.cause.code, stack: d.cause.stack });
  return new TaskplaneError(d.code, d.message, {
    retryable: d.retryable,
    ...(d.field !== undefined ? { field: d.field } : {}),
    ...(d.details !== undefined ? { details: d.details } : {}),
    ...(cause ? { cause } : {}),
  });
}
