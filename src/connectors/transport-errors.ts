import { TaskplaneError } from '../core/errors.ts';

/**
 * What a failed fetch() means for the engine, the same for every connector that makes its own HTTP
 * calls (A2A, MCP): the protocol's own error answers are mapped by each connector; this covers the
 * calls that got no answer at all.
 */

/** fetch() failures: network errors are retryable `unavailable`; our own timeouts are `timeout`. */
export function transportError(err: unknown, signal: AbortSignal, timedOut: () => boolean): TaskplaneError {
  if (err instanceof TaskplaneError) return err;
  if (timedOut()) return new TaskplaneError('timeout', 'remote call timed out', { cause: err });
  if (signal.aborted) return new TaskplaneError('unavailable', 'remote call aborted', { cause: err });
  // Refused before anything was sent: the remote certainly never got the request (a start may then be
  // failed by policy after its deadline); any other network error leaves that in doubt.
  const refused = connectCode(err) === 'ECONNREFUSED';
  return new TaskplaneError('unavailable', refused ? 'remote refused the connection' : 'remote unreachable', {
    cause: err,
    details: { notSent: refused },
  });
}

function connectCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('E')) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
