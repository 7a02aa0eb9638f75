import {
  SUPPORTED_PROTOCOL_VERSIONS,
  TASKS_EXTENSION,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcId,
  type JsonValue,
} from './types.ts';

/**
 * The MCP error table: every error this package builds, with its JSON-RPC code and the HTTP status
 * the Streamable HTTP transport answers with. The spec reserves -32020…-32099 for MCP; -32002 and
 * -32042 are retired and never emitted.
 */
export const MCP_ERRORS = {
  ParseError: { code: -32700, http: 400, message: 'Parse error' },
  InvalidRequest: { code: -32600, http: 400, message: 'Invalid request' },
  /** Unknown methods, and the methods the tasks extension removed (`tasks/result`, `tasks/list`). */
  MethodNotFound: { code: -32601, http: 404, message: 'Method not found' },
  InvalidParams: { code: -32602, http: 400, message: 'Invalid params' },
  /**
   * An unknown, expired or foreign task id. Same code as InvalidParams (the extension has no
   * "not found" or "forbidden" code), but HTTP 200: the request was well formed, and answering a
   * foreign id exactly like an unknown one does not reveal that it exists.
   */
  TaskNotFound: { code: -32602, http: 200, message: 'Failed to retrieve task: Task not found' },
  InternalError: { code: -32603, http: 500, message: 'Internal error' },
  /**
   * A peer's answer that does not match the schema. Never sent by a server: a client raises it about
   * what it received, and the code is what it reports upward as the JSON-RPC equivalent.
   */
  InvalidResult: { code: -32603, http: 502, message: 'Invalid result from peer' },
  HeaderMismatch: { code: -32020, http: 400, message: 'Header mismatch' },
  MissingRequiredClientCapability: {
    code: -32021,
    http: 400,
    message: 'Missing required client capability',
  },
  UnsupportedProtocolVersion: { code: -32022, http: 400, message: 'Unsupported protocol version' },
} as const;

export type McpErrorName = keyof typeof MCP_ERRORS;

/**
 * The one error type of this package. Decoders and validators throw or return only this; `field` names
 * the offending place (`params.taskId`, `header Mcp-Name`) so the error text can say what to fix.
 */
export class McpError extends Error {
  override readonly name = 'McpError';
  readonly rpcCode: number;
  readonly httpStatus: number;

  constructor(
    readonly code: McpErrorName,
    message: string,
    readonly data?: JsonValue,
    readonly field?: string,
  ) {
    super(message);
    this.rpcCode = MCP_ERRORS[code].code;
    this.httpStatus = MCP_ERRORS[code].http;
  }

  toJsonRpc(): JsonRpcErrorObject {
    return this.data === undefined
      ? { code: this.rpcCode, message: this.message }
      : { code: this.rpcCode, message: this.message, data: this.data };
  }
}

/** `{jsonrpc, id, error}`; `id` is null when the request id could not be read. */
export function errorResponse(
  id: JsonRpcId | null,
  err: McpError,
): { jsonrpc: '2.0'; id: JsonRpcId | null; error: JsonRpcErrorObject } {
  return { jsonrpc: '2.0', id, error: err.toJsonRpc() };
}

export function parseError(reason: string): McpError {
  return new McpError('ParseError', `${MCP_ERRORS.ParseError.message}: ${reason}`);
}

export function invalidRequest(field: string, reason: string): McpError {
  return new McpError(
    'InvalidRequest',
    `${MCP_ERRORS.InvalidRequest.message}: ${field}: ${reason}`,
    { field },
    field,
  );
}

export function invalidParams(field: string, reason: string): McpError {
  return new McpError(
    'InvalidParams',
    `${MCP_ERRORS.InvalidParams.message}: ${field}: ${reason}`,
    { field },
    field,
  );
}

export function invalidResult(field: string, reason: string): McpError {
  return new McpError(
    'InvalidResult',
    `${MCP_ERRORS.InvalidResult.message}: ${field}: ${reason}`,
    { field },
    field,
  );
}

export function methodNotFound(method: string): McpError {
  return new McpError('MethodNotFound', `${MCP_ERRORS.MethodNotFound.message}: ${method}`);
}

/** `expired` changes only the message: clients must not be able to tell expiry from absence by code. */
export function taskNotFound(expired = false): McpError {
  return new McpError(
    'TaskNotFound',
    expired ? 'Failed to retrieve task: Task has expired' : MCP_ERRORS.TaskNotFound.message,
  );
}

export function internalError(): McpError {
  return new McpError('InternalError', MCP_ERRORS.InternalError.message);
}

export function headerMismatch(header: string, reason: string): McpError {
  return new McpError(
    'HeaderMismatch',
    `${MCP_ERRORS.HeaderMismatch.message}: ${header}: ${reason}`,
    { header },
    `header ${header}`,
  );
}

/** Defaults to the tasks extension, the only capability this package gates on. */
export function missingRequiredClientCapability(
  requiredCapabilities: JsonObject = { extensions: { [TASKS_EXTENSION]: {} } },
): McpError {
  return new McpError('MissingRequiredClientCapability', MCP_ERRORS.MissingRequiredClientCapability.message, {
    requiredCapabilities,
  });
}

export function unsupportedProtocolVersion(
  requested: string | null,
  supported: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS,
): McpError {
  return new McpError(
    'UnsupportedProtocolVersion',
    `${MCP_ERRORS.UnsupportedProtocolVersion.message}: ${requested ?? '(none)'}`,
    { supported: [...supported], requested },
    'protocolVersion',
  );
}

/**
 * Legacy (2025-11-25) answer to a `taskSupport: "required"` tool called without `task`: the 2025 spec
 * says -32601, where the modern era says -32021.
 */
export function legacyTaskRequired(tool: string): McpError {
  return new McpError('MethodNotFound', `Tool ${tool} must be called as a task`);
}
