/**
 * The A2A 1.0 error table (the 1.0.1 mapping: docs/a2a-notes.md, "Error table") and the standard JSON-RPC errors,
 * with builders for both wire shapes:
 * - JSON-RPC: `{code, message, data: [ErrorInfo, BadRequest?]}` (1.0.1: details as an `@type` array).
 * - REST: google.rpc.Status `{"error": {code, status, message, details}}` with the HTTP status.
 *
 * Clients should map by ErrorInfo `reason` or JSON-RPC code, not by HTTP status (the HTTP column changed
 * between 1.0.0 and 1.0.1), so every error carries an ErrorInfo with domain `a2a-protocol.org`.
 */

export const A2A_ERROR_DOMAIN = 'a2a-protocol.org';
export const ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo';
export const BAD_REQUEST_TYPE = 'type.googleapis.com/google.rpc.BadRequest';

export type RpcStatus =
  | 'INVALID_ARGUMENT'
  | 'FAILED_PRECONDITION'
  | 'NOT_FOUND'
  | 'INTERNAL'
  | 'UNAUTHENTICATED'
  | 'PERMISSION_DENIED'
  | 'UNIMPLEMENTED'
  | 'RESOURCE_EXHAUSTED';

export interface A2AErrorSpec {
  /** JSON-RPC error code. */
  code: number;
  /** HTTP status for the HTTP+JSON binding (1.0.1 table). */
  http: number;
  /** google.rpc status name (gRPC / REST `status`). */
  status: RpcStatus;
  /** ErrorInfo reason: the name in UPPER_SNAKE without `Error`. */
  reason: string;
  /** Default message. */
  message: string;
}

/**
 * Every error this package emits. The first nine are the A2A errors (-32001…-32009); then the standard
 * JSON-RPC errors, then the two auth errors, which A2A leaves without a JSON-RPC code ("custom error",
 * A2A 1.0, errors): we use -32040/-32041 inside the A2A-reserved range -32001…-32099 so clients can tell them apart.
 */
export const A2A_ERRORS = {
  TaskNotFoundError: {
    code: -32001,
    http: 404,
    status: 'NOT_FOUND',
    reason: 'TASK_NOT_FOUND',
    message: 'Task not found',
  },
  TaskNotCancelableError: {
    code: -32002,
    http: 400,
    status: 'FAILED_PRECONDITION',
    reason: 'TASK_NOT_CANCELABLE',
    message: 'Task cannot be canceled',
  },
  PushNotificationNotSupportedError: {
    code: -32003,
    http: 400,
    status: 'FAILED_PRECONDITION',
    reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED',
    message: 'Push notifications are not supported',
  },
  UnsupportedOperationError: {
    code: -32004,
    http: 400,
    status: 'FAILED_PRECONDITION',
    reason: 'UNSUPPORTED_OPERATION',
    message: 'This operation is not supported',
  },
  ContentTypeNotSupportedError: {
    code: -32005,
    http: 400,
    status: 'INVALID_ARGUMENT',
    reason: 'CONTENT_TYPE_NOT_SUPPORTED',
    message: 'Incompatible content types',
  },
  InvalidAgentResponseError: {
    code: -32006,
    http: 500,
    status: 'INTERNAL',
    reason: 'INVALID_AGENT_RESPONSE',
    message: 'Invalid agent response',
  },
  ExtendedAgentCardNotConfiguredError: {
    code: -32007,
    http: 400,
    status: 'FAILED_PRECONDITION',
    reason: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED',
    message: 'Extended agent card is not configured',
  },
  ExtensionSupportRequiredError: {
    code: -32008,
    http: 400,
    status: 'FAILED_PRECONDITION',
    reason: 'EXTENSION_SUPPORT_REQUIRED',
    message: 'A required extension is not supported by the client',
  },
  VersionNotSupportedError: {
    code: -32009,
    http: 400,
    status: 'FAILED_PRECONDITION',
    reason: 'VERSION_NOT_SUPPORTED',
    message: 'This A2A protocol version is not supported',
  },
  // Standard JSON-RPC 2.0 errors (also used, by HTTP status, on the REST binding).
  JSONParseError: {
    code: -32700,
    http: 400,
    status: 'INVALID_ARGUMENT',
    reason: 'PARSE_ERROR',
    message: 'Invalid JSON',
  },
  InvalidRequestError: {
    code: -32600,
    http: 400,
    status: 'INVALID_ARGUMENT',
    reason: 'INVALID_REQUEST',
    message: 'Invalid request',
  },
  MethodNotFoundError: {
    code: -32601,
    http: 404,
    status: 'NOT_FOUND',
    reason: 'METHOD_NOT_FOUND',
    message: 'Method not found',
  },
  InvalidParamsError: {
    code: -32602,
    http: 400,
    status: 'INVALID_ARGUMENT',
    reason: 'INVALID_PARAMS',
    message: 'Invalid parameters',
  },
  InternalError: {
    code: -32603,
    http: 500,
    status: 'INTERNAL',
    reason: 'INTERNAL',
    message: 'Internal error',
  },
  // Auth (A2A 1.0, errors: 401/UNAUTHENTICATED, 403/PERMISSION_DENIED).
  UnauthenticatedError: {
    code: -32040,
    http: 401,
    status: 'UNAUTHENTICATED',
    reason: 'UNAUTHENTICATED',
    message: 'Authentication required',
  },
  PermissionDeniedError: {
    code: -32041,
    http: 403,
    status: 'PERMISSION_DENIED',
    reason: 'PERMISSION_DENIED',
    message: 'Permission denied',
  },
  /** Body over the host's limit: JSON-RPC -32600 semantics, REST 413. */
  PayloadTooLargeError: {
    code: -32600,
    http: 413,
    status: 'RESOURCE_EXHAUSTED',
    reason: 'PAYLOAD_TOO_LARGE',
    message: 'Request body too large',
  },
  /**
   * A request body whose Content-Type is not JSON (`application/json` or `application/a2a+json`): the
   * JSON-RPC binding answers ContentTypeNotSupportedError (-32005), the HTTP+JSON binding 415, the
   * status HTTP itself has for it (RFC 9110 §15.5.16).
   */
  UnsupportedMediaTypeError: {
    code: -32005,
    http: 415,
    status: 'INVALID_ARGUMENT',
    reason: 'CONTENT_TYPE_NOT_SUPPORTED',
    message: 'The request body must be application/json or application/a2a+json',
  },
} as const satisfies Record<string, A2AErrorSpec>;

export type A2AErrorName = keyof typeof A2A_ERRORS;

export interface FieldViolation {
  field: string;
  description: string;
}

/**
 * The one error type the protocol layer throws. `message` is safe to show a client (never raw internal
 * text); `fieldViolations` become a google.rpc.BadRequest detail.
 */
export class A2AError extends Error {
  readonly errorName: A2AErrorName;
  readonly spec: A2AErrorSpec;
  readonly fieldViolations: FieldViolation[];
  readonly metadata: Record<string, string>;

  constructor(
    name: A2AErrorName,
    message?: string,
    options: { fieldViolations?: FieldViolation[]; metadata?: Record<string, string> } = {},
  ) {
    const spec: A2AErrorSpec = A2A_ERRORS[name];
    super(message ?? spec.message);
    this.name = 'A2AError';
    this.errorName = name;
    this.spec = spec;
    this.fieldViolations = options.fieldViolations ?? [];
    this.metadata = options.metadata ?? {};
  }
}

export function isA2AError(err: unknown): err is A2AError {
  return err instanceof A2AError;
}

/** Invalid params naming the field (JSON-RPC -32602 / REST 400 with a BadRequest detail). */
/** A request body over the binding's limit (HTTP 413). */
export function payloadTooLarge(limit: number): A2AError {
  return new A2AError('PayloadTooLargeError', `Request body exceeds ${limit} bytes`);
}

export function invalidParams(field: string, description: string): A2AError {
  return new A2AError('InvalidParamsError', `${field}: ${description}`, {
    fieldViolations: [{ field, description }],
  });
}

export const taskNotFound = (id?: string) =>
  new A2AError(
    'TaskNotFoundError',
    id === undefined ? undefined : `Task not found: ${id}`,
    id ? { metadata: { taskId: id } } : {},
  );

/** The `@type` detail array both bindings carry. */
export function errorDetails(err: A2AError): Record<string, unknown>[] {
  const details: Record<string, unknown>[] = [
    {
      '@type': ERROR_INFO_TYPE,
      reason: err.spec.reason,
      domain: A2A_ERROR_DOMAIN,
      ...(Object.keys(err.metadata).length > 0 ? { metadata: err.metadata } : {}),
    },
  ];
  if (err.fieldViolations.length > 0) {
    details.push({ '@type': BAD_REQUEST_TYPE, fieldViolations: err.fieldViolations });
  }
  return details;
}

/** Any thrown value → an A2AError a client may see (internal text never leaks). */
export function toA2AError(err: unknown): A2AError {
  return isA2AError(err) ? err : new A2AError('InternalError');
}

/** JSON-RPC `error` member. */
export function jsonRpcError(err: unknown): {
  code: number;
  message: string;
  data: Record<string, unknown>[];
} {
  const e = toA2AError(err);
  return { code: e.spec.code, message: e.message, data: errorDetails(e) };
}

/** A whole JSON-RPC error response. `id` is null when the request id could not be read (JSON-RPC §5). */
export function jsonRpcErrorResponse(id: string | number | null, err: unknown) {
  return { jsonrpc: '2.0' as const, id, error: jsonRpcError(err) };
}

/** REST google.rpc.Status body and its HTTP status. */
export function restError(err: unknown): {
  httpStatus: number;
  body: { error: { code: number; status: string; message: string; details: Record<string, unknown>[] } };
} {
  const e = toA2AError(err);
  return {
    httpStatus: e.spec.http,
    body: {
      error: { code: e.spec.http, status: e.spec.status, message: e.message, details: errorDetails(e) },
    },
  };
}
