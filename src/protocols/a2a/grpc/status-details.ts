import {
  A2A_ERROR_DOMAIN,
  BAD_REQUEST_TYPE,
  ERROR_INFO_TYPE,
  type A2AError,
  type RpcStatus,
} from '../errors.ts';
import { a2aPackageDefinition } from './codec.ts';

/**
 * gRPC status codes and the `grpc-status-details-bin` trailer of an A2A error (A2A 1.0, gRPC binding:
 * the status per the 1.0.1 error table, and a google.rpc.Status whose details carry a
 * google.rpc.ErrorInfo with the error's reason and domain `a2a-protocol.org`, plus a
 * google.rpc.BadRequest naming the invalid fields). Clients map by ErrorInfo reason first, as on the
 * JSON bindings.
 */

export const STATUS_DETAILS_KEY = 'grpc-status-details-bin';

/** google.rpc.Code numbers (the gRPC status codes). */
export const GRPC_CODES: Record<
  RpcStatus | 'OK' | 'CANCELLED' | 'UNKNOWN' | 'UNAVAILABLE' | 'DEADLINE_EXCEEDED',
  number
> = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
};

interface MessageCodec {
  serialize(value: object): Buffer;
  deserialize(data: Buffer): Record<string, unknown>;
}

function codec(name: string): MessageCodec {
  return a2aPackageDefinition()[name] as unknown as MessageCodec;
}

/** The trailer bytes for `err` sent with gRPC status `code`. */
export function encodeStatusDetails(err: A2AError, code: number): Buffer {
  // `type_url`: protobufjs's built-in google.protobuf.Any keeps the proto field name.
  const details: { type_url: string; value: Buffer }[] = [
    {
      type_url: ERROR_INFO_TYPE,
      value: codec('google.rpc.ErrorInfo').serialize({
        reason: err.spec.reason,
        domain: A2A_ERROR_DOMAIN,
        metadata: err.metadata,
      }),
    },
  ];
  if (err.fieldViolations.length > 0) {
    details.push({
      type_url: BAD_REQUEST_TYPE,
      value: codec('google.rpc.BadRequest').serialize({ fieldViolations: err.fieldViolations }),
    });
  }
  return codec('google.rpc.Status').serialize({ code, message: err.message, details });
}

/** What a client reads from a status details trailer: the ErrorInfo reason and the violations. */
export interface DecodedStatusDetails {
  reason?: string;
  domain?: string;
  metadata?: Record<string, string>;
  fieldViolations?: { field: string; description: string }[];
}

/** Reads a `grpc-status-details-bin` trailer; anything unreadable is no details at all. */
export function decodeStatusDetails(bytes: Buffer): DecodedStatusDetails {
  try {
    const status = codec('google.rpc.Status').deserialize(bytes) as {
      details?: { type_url?: string; value?: string }[];
    };
    const out: DecodedStatusDetails = {};
    for (const any of status.details ?? []) {
      const value = Buffer.from(any.value ?? '', 'base64');
      if (any.type_url === ERROR_INFO_TYPE) {
        const info = codec('google.rpc.ErrorInfo').deserialize(value) as DecodedStatusDetails;
        if (info.reason) out.reason = info.reason;
        if (info.domain) out.domain = info.domain;
        if (info.metadata) out.metadata = info.metadata;
      } else if (any.type_url === BAD_REQUEST_TYPE) {
        const bad = codec('google.rpc.BadRequest').deserialize(value) as DecodedStatusDetails;
        if (bad.fieldViolations) out.fieldViolations = bad.fieldViolations;
      }
    }
    return out;
  } catch {
    return {};
  }
}
