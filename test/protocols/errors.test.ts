import { describe, expect, it } from 'vitest';
import {
  A2A_ERRORS,
  A2AError,
  invalidParams,
  jsonRpcError,
  restError,
} from '../../src/protocols/a2a/errors.ts';
import { formatSseEvent } from '../../src/protocols/a2a/sse.ts';

describe('A2A error table (1.0.1)', () => {
  it.each([
    ['TaskNotFoundError', -32001, 404, 'NOT_FOUND', 'TASK_NOT_FOUND'],
    ['TaskNotCancelableError', -32002, 400, 'FAILED_PRECONDITION', 'TASK_NOT_CANCELABLE'],
    [
      'PushNotificationNotSupportedError',
      -32003,
      400,
      'FAILED_PRECONDITION',
      'PUSH_NOTIFICATION_NOT_SUPPORTED',
    ],
    ['UnsupportedOperationError', -32004, 400, 'FAILED_PRECONDITION', 'UNSUPPORTED_OPERATION'],
    ['ContentTypeNotSupportedError', -32005, 400, 'INVALID_ARGUMENT', 'CONTENT_TYPE_NOT_SUPPORTED'],
    ['InvalidAgentResponseError', -32006, 500, 'INTERNAL', 'INVALID_AGENT_RESPONSE'],
    [
      'ExtendedAgentCardNotConfiguredError',
      -32007,
      400,
      'FAILED_PRECONDITION',
      'EXTENDED_AGENT_CARD_NOT_CONFIGURED',
    ],
    ['ExtensionSupportRequiredError', -32008, 400, 'FAILED_PRECONDITION', 'EXTENSION_SUPPORT_REQUIRED'],
    ['VersionNotSupportedError', -32009, 400, 'FAILED_PRECONDITION', 'VERSION_NOT_SUPPORTED'],
    ['JSONParseError', -32700, 400, 'INVALID_ARGUMENT', 'PARSE_ERROR'],
    ['InvalidRequestError', -32600, 400, 'INVALID_ARGUMENT', 'INVALID_REQUEST'],
    ['MethodNotFoundError', -32601, 404, 'NOT_FOUND', 'METHOD_NOT_FOUND'],
    ['InvalidParamsError', -32602, 400, 'INVALID_ARGUMENT', 'INVALID_PARAMS'],
    ['InternalError', -32603, 500, 'INTERNAL', 'INTERNAL'],
  ] as const)('%s → %i / HTTP %i / %s / %s', (name, code, http, status, reason) => {
    const err = new A2AError(name);
    const rpc = jsonRpcError(err);
    expect(rpc.code).toBe(code);
    expect(rpc.data[0]).toEqual({
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason,
      domain: 'a2a-protocol.org',
    });
    const rest = restError(err);
    expect(rest.httpStatus).toBe(http);
    expect(rest.body.error).toMatchObject({ code: http, status, details: [{ reason }] });
    expect(A2A_ERRORS[name].code).toBe(code);
  });

  it('validation errors carry a google.rpc.BadRequest with the field', () => {
    const rpc = jsonRpcError(invalidParams('message.parts', 'must be a non-empty array'));
    expect(rpc.data[1]).toEqual({
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [{ field: 'message.parts', description: 'must be a non-empty array' }],
    });
  });

  it('anything else becomes InternalError without its text', () => {
    const rpc = jsonRpcError(new Error('SELECT * FROM secrets failed'));
    expect(rpc).toMatchObject({ code: -32603, message: 'Internal error' });
  });
});

describe('SSE framing', () => {
  it('writes id, event and multi-line data', () => {
    expect(formatSseEvent({ id: '7', data: 'a\nb' })).toBe('id: 7\ndata: a\ndata: b\n\n');
    expect(formatSseEvent({ event: 'error', id: '1\n2', data: '{}' })).toBe(
      'event: error\nid: 12\ndata: {}\n\n',
    );
  });
});
