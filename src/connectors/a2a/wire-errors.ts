import { TaskplaneError } from '../../core/errors.ts';

/**
 * A2A wire errors → our stable codes (connector.ts contract). Mapped by ErrorInfo reason or JSON-RPC
 * code first and by HTTP status last, because the HTTP column changed between 1.0.0 and 1.0.1
 * (docs/a2a-notes.md, "Error table"). Remote message text is kept short and never trusted as ours.
 *
 * `not_found` comes only from the protocol's own TaskNotFoundError (JSON-RPC -32001, or ErrorInfo
 * reason TASK_NOT_FOUND in a REST google.rpc.Status body). A bare HTTP 404, an HTML page or a gateway's
 * JSON is a route that does not answer as A2A (the agent moved, a proxy lost its route): that says
 * nothing about the task, so it is a retryable `unavailable` marked `route: not_protocol`, on which the
 * connector re-reads the agent card. Reading it as "the agent does not know this task" made the plane
 * resubmit to a dead URL and record a failure for a task that had completed. A redirect that reaches
 * the connector (307 and 308 are followed) is the same.
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
    // A redirect left to us (a stream's 301/302/303, which would turn the POST into a GET) is a route
    // that moved, as a bare 404 is: nothing the agent said about the task.
    if (s === 404 || (s >= 300 && s < 400)) return routeError(s, info.message);
    code =
      s === 401
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

/** Marks an answer that did not come from an A2A endpoint (see the module comment). */
export const NOT_A2A = 'not_protocol';

export function routeError(httpStatus: number, what?: string): TaskplaneError {
  return new TaskplaneError(
    'unavailable',
    `remote: HTTP ${httpStatus} from a route that did not answer as A2A${what ? ` (${what.slice(0, 80)})` : ''}`,
    { details: { httpStatus, route: NOT_A2A } },
  );
}

/** True for an error that says the route is wrong, not the task: the card may have changed. */
export function isRouteError(err: unknown): boolean {
  return err instanceof TaskplaneError && err.details?.route === NOT_A2A;
}
