import { TaskplaneError } from '../../core/errors.ts';

/**
 * A2A wire errors → our stable codes (connector.ts contract). Mapped by ErrorInfo reason or JSON-RPC
 * code first and by HTTP status last, because the HTTP column changed between 1.0.0 and 1.0.1
 * (spec/a2a-1.0.md §1.13 item 6). Remote message text is kept short and never trusted as ours.
 */
const BY_REASON: Record<string, TaskplaneError['code']> = {
  TASK_NOT_FOUND: 'not_found',
  TASK_NOT_CANCELABLE: 'failed_precondition',
  UNSUPPORTED_OPERATION: 'failed_precondition',
  PUSH_NOTIFICATION_NOT_SUPPORTED: 'unsupported',
  CONTENT_TYPE_NOT_SUPPORTED: 'invalid_argument',
  INVALID_AGENT_RESPONSE: 'remote_error',
  VERSION_NOT_SUPPORTED: 'unsupported',
  EXTENSION_SUPPORT_REQUIRED: 'unsupported',
  UNAUTHENTICATED: 'unauthenticated',
  PERMISSION_DENIED: 'permission_denied',
};

const BY_RPC_CODE: Record<number, TaskplaneError['code']> = {
  [-32001]: 'not_found',
  [-32002]: 'failed_precondition',
  [-32003]: 'unsupported',
  [-32004]: 'failed_precondition',
  [-32005]: 'invalid_argument',
  [-32006]: 'remote_error',
  [-32007]: 'unsupported',
  [-32008]: 'unsupported',
  [-32009]: 'unsupported',
  [-32600]: 'invalid_argument',
  [-32601]: 'unsupported',
  [-32602]: 'invalid_argument',
  [-32603]: 'unavailable',
  [-32700]: 'invalid_argument',
};

function reasonOf(details: unknown): string | undefined {
  if (!Array.isArray(details)) return undefined;
  for (const d of details) {
    if (d && typeof d === 'object' && typeof (d as { reason?: unknown }).reason === 'string')
      return (d as { reason: string }).reason;
  }
  return undefined;
}

export interface WireErrorInfo {
  rpcCode?: number;
  httpStatus?: number;
  details?: unknown;
  message?: string;
}

export function a2aWireError(info: WireErrorInfo): TaskplaneError {
  const reason = reasonOf(info.details);
  let code: TaskplaneError['code'] | undefined = reason ? BY_REASON[reason] : undefined;
  if (!code && info.rpcCode !== undefined) code = BY_RPC_CODE[info.rpcCode];
  if (!code && info.httpStatus !== undefined) {
    const s = info.httpStatus;
    code =
      s === 404
        ? 'not_found'
        : s === 401
          ? 'unauthenticated'
          : s === 403
            ? 'permission_denied'
            : s === 409
              ? 'failed_precondition'
              : s >= 500 || s === 429
                ? 'unavailable'
                : 'remote_error';
  }
  code ??= 'remote_error';
  const text = (info.message ?? '').slice(0, 200);
  return new TaskplaneError(
    code,
    `remote: ${reason ?? info.rpcCode ?? info.httpStatus ?? ''} ${text}`.trim(),
    {
      details: {
        ...(reason ? { reason } : {}),
        ...(info.rpcCode !== undefined ? { rpcCode: info.rpcCode } : {}),
        ...(info.httpStatus !== undefined ? { httpStatus: info.httpStatus } : {}),
      },
    },
  );
}

/** fetch() failures: network errors are retryable `unavailable`; our own timeouts are `timeout`. */
export function transportError(err: unknown, signal: AbortSignal, timedOut: () => boolean): TaskplaneError {
  if (err instanceof TaskplaneError) return err;
  if (timedOut()) return new TaskplaneError('timeout', 'remote call timed out', { cause: err });
  if (signal.aborted) return new TaskplaneError('unavailable', 'remote call aborted', { cause: err });
  return new TaskplaneError('unavailable', 'remote unreachable', { cause: err });
}
