/**
 * Faults the emulator can inject. Response faults shape one response's life; request faults answer
 * HTTP requests with errors before they reach a route. Both can be set from the test (the emulator's
 * methods), from the control endpoint, and response faults also from the request's metadata, so a
 * connector under test needs no knowledge of the emulator.
 */

export interface ResponseFaults {
  /** Destroy the socket of the first stream of this response after this many events have been written. */
  dropStreamAfterEvents?: number;
  /** End the first stream cleanly right before its terminal event (the response still finishes). */
  endStreamWithoutTerminal?: boolean;
  /** The response never leaves `queued` (the field bug where an aborted stream strands it). */
  stuckInQueued?: boolean;
  /** Forget the response this long after creation: every later request for it answers 404. */
  retentionMs?: number;
  /** A cancel arriving while the response runs finishes it instead; the cancel returns it `completed`. */
  cancelLosesRace?: boolean;
  /** Finish as `failed` with this error instead of `completed`. */
  failWith?: { code: string; message: string };
  /** Finish as `incomplete` with this reason after half the output. */
  incompleteReason?: 'max_output_tokens' | 'content_filter' | 'max_messages' | 'steered';
  /** Deliver each webhook of this response this many extra times (each with the same `webhook-id`). */
  webhookDuplicates?: number;
  /** Hold each webhook of this response back this long before the first attempt. */
  webhookDelayMs?: number;
}

export type RouteName = 'create' | 'retrieve' | 'cancel' | 'any';

export interface RequestFault {
  route: RouteName;
  /** 429 or a 5xx. */
  status: number;
  /** Sent as `retry-after-ms` (and `retry-after` in whole seconds) when set. */
  retryAfterMs?: number;
  /** How many matching requests fail before the fault is used up. @default 1 */
  times?: number;
}

/** The metadata key a request may carry its response faults under, as a JSON string. */
export const FAULTS_METADATA_KEY = 'emulator_faults';

export class FaultInputError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

const INCOMPLETE = new Set(['max_output_tokens', 'content_filter', 'max_messages', 'steered']);

function nonNegativeInt(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new FaultInputError(field, `${field} must be a non-negative integer`);
  }
  return value;
}

function bool(value: unknown, field: string): boolean {
  if (typeof value !== 'boolean') throw new FaultInputError(field, `${field} must be a boolean`);
  return value;
}

/** Validates response faults from untrusted JSON; the error names the wrong field. */
export function parseResponseFaults(raw: unknown, prefix = 'faults'): ResponseFaults {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new FaultInputError(prefix, `${prefix} must be an object`);
  }
  const r = raw as Record<string, unknown>;
  const out: ResponseFaults = {};
  for (const key of Object.keys(r)) {
    const field = `${prefix}.${key}`;
    const v = r[key];
    switch (key) {
      case 'dropStreamAfterEvents':
      case 'retentionMs':
      case 'webhookDuplicates':
      case 'webhookDelayMs':
        out[key] = nonNegativeInt(v, field);
        break;
      case 'endStreamWithoutTerminal':
      case 'stuckInQueued':
      case 'cancelLosesRace':
        out[key] = bool(v, field);
        break;
      case 'failWith': {
        const f = v as Record<string, unknown> | null;
        if (
          typeof f !== 'object' ||
          f === null ||
          typeof f.code !== 'string' ||
          typeof f.message !== 'string'
        ) {
          throw new FaultInputError(field, `${field} must be {code: string, message: string}`);
        }
        out.failWith = { code: f.code, message: f.message };
        break;
      }
      case 'incompleteReason':
        if (typeof v !== 'string' || !INCOMPLETE.has(v)) {
          throw new FaultInputError(field, `${field} must be one of ${[...INCOMPLETE].join(', ')}`);
        }
        out.incompleteReason = v as NonNullable<ResponseFaults['incompleteReason']>;
        break;
      default:
        throw new FaultInputError(field, `${field} is not a known fault`);
    }
  }
  return out;
}

const ROUTES = new Set(['create', 'retrieve', 'cancel', 'any']);

export function parseRequestFault(raw: unknown, prefix = 'request'): RequestFault {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new FaultInputError(prefix, `${prefix} must be an object`);
  }
  const r = raw as Record<string, unknown>;
  if (typeof r.route !== 'string' || !ROUTES.has(r.route)) {
    throw new FaultInputError(`${prefix}.route`, `${prefix}.route must be one of ${[...ROUTES].join(', ')}`);
  }
  const status = r.status;
  if (typeof status !== 'number' || !(status === 429 || (status >= 500 && status <= 599))) {
    throw new FaultInputError(`${prefix}.status`, `${prefix}.status must be 429 or 5xx`);
  }
  const out: RequestFault = { route: r.route as RouteName, status };
  if (r.retryAfterMs !== undefined)
    out.retryAfterMs = nonNegativeInt(r.retryAfterMs, `${prefix}.retryAfterMs`);
  if (r.times !== undefined) out.times = nonNegativeInt(r.times, `${prefix}.times`);
  return out;
}
