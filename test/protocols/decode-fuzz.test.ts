import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeCancelTaskRequest,
  decodeCreatePushConfigRequest,
  decodeDeletePushConfigRequest,
  decodeGetPushConfigRequest,
  decodeGetTaskRequest,
  decodeListPushConfigsRequest,
  decodeListTasksRequest,
  decodeSendMessageRequest,
  decodeSubscribeToTaskRequest,
  normalizeKeys,
} from '../../src/protocols/a2a/decode.ts';
import { A2AError } from '../../src/protocols/a2a/errors.ts';

const DECODERS = {
  decodeSendMessageRequest,
  decodeGetTaskRequest,
  decodeCancelTaskRequest,
  decodeSubscribeToTaskRequest,
  decodeListTasksRequest,
  decodeCreatePushConfigRequest,
  decodeGetPushConfigRequest,
  decodeDeletePushConfigRequest,
  decodeListPushConfigsRequest,
};

/** Inputs shaped like A2A requests, with wrong types sprinkled in, so fuzzing reaches deep fields. */
const wireish = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom('TASK_STATE_WORKING', 'ROLE_USER', 'ROLE_AGENT', 2, '3', -1, 99, 'true', '', 'x'),
    fc.jsonValue(),
    tie('obj'),
    fc.array(tie('value'), { maxLength: 3 }),
  ),
  obj: fc.dictionary(
    fc.constantFrom(
      'message',
      'parts',
      'text',
      'data',
      'raw',
      'url',
      'role',
      'messageId',
      'message_id',
      'taskId',
      'task_id',
      'contextId',
      'id',
      'configuration',
      'returnImmediately',
      'historyLength',
      'history_length',
      'pageSize',
      'status',
      'statusTimestampAfter',
      'includeArtifacts',
      'url',
      'authentication',
      'scheme',
      'credentials',
      'token',
      'metadata',
      '__proto__',
      'constructor',
    ),
    tie('value'),
    { maxKeys: 6 },
  ),
}));

describe('wire decoders never throw anything but the protocol error', () => {
  for (const [name, decode] of Object.entries(DECODERS)) {
    it(`${name}: any input → a value or A2AError InvalidParamsError`, () => {
      fc.assert(
        fc.property(fc.oneof(fc.anything(), wireish.value, wireish.obj), (input) => {
          try {
            decode(input);
          } catch (err) {
            expect(err).toBeInstanceOf(A2AError);
            expect((err as A2AError).errorName).toBe('InvalidParamsError');
            expect((err as A2AError).fieldViolations.length).toBeGreaterThan(0);
          }
        }),
        { numRuns: 400 },
      );
    });
  }
});

const message = fc.record({
  messageId: fc.string({ minLength: 1, maxLength: 20 }),
  role: fc.constantFrom('ROLE_USER', 'ROLE_AGENT'),
  parts: fc.array(
    fc.oneof(
      fc.record({ text: fc.string() }),
      fc.record({ data: fc.jsonValue() }),
      fc.record({ url: fc.webUrl(), mediaType: fc.constant('text/plain') }),
      fc.record({ raw: fc.base64String(), filename: fc.string() }),
    ),
    { minLength: 1, maxLength: 3 },
  ),
});

describe('decoders are lenient on input and strict on output', () => {
  it('a valid message decodes to itself (camelCase in, camelCase out)', () => {
    fc.assert(
      fc.property(message, (m) => {
        const decoded = decodeSendMessageRequest({ message: m });
        expect(JSON.parse(JSON.stringify(decoded.message))).toEqual(JSON.parse(JSON.stringify(m)));
      }),
    );
  });

  it('snake_case aliases and enum integers are accepted', () => {
    const req = decodeSendMessageRequest({
      message: {
        message_id: 'm1',
        role: 1,
        parts: [{ text: 'hi', media_type: 'text/plain' }],
        context_id: 'c1',
      },
      configuration: {
        history_length: '3',
        return_immediately: true,
        task_push_notification_config: { url: 'https://h/x' },
      },
    });
    expect(req).toEqual({
      message: {
        messageId: 'm1',
        role: 'ROLE_USER',
        parts: [{ text: 'hi', mediaType: 'text/plain' }],
        contextId: 'c1',
      },
      configuration: {
        historyLength: 3,
        returnImmediately: true,
        taskPushNotificationConfig: { url: 'https://h/x' },
      },
    });
    expect(decodeListTasksRequest({ status: 2, page_size: '10', include_artifacts: 'true' })).toEqual({
      status: 'TASK_STATE_WORKING',
      pageSize: 10,
      includeArtifacts: true,
    });
  });

  it('data and metadata are opaque: their keys are never re-cased', () => {
    const req = decodeSendMessageRequest({
      message: {
        messageId: 'm',
        role: 'ROLE_USER',
        parts: [{ data: { snake_key: 1 } }],
        metadata: { a_b: 2 },
      },
    });
    expect(req.message.parts[0]!.data).toEqual({ snake_key: 1 });
    expect(req.message.metadata).toEqual({ a_b: 2 });
    expect(normalizeKeys({ metadata: { x_y: 1 }, page_size: 2 })).toEqual({
      metadata: { x_y: 1 },
      pageSize: 2,
    });
  });

  it.each([
    [{ message: { messageId: 'm', role: 'ROLE_USER', parts: [] } }, 'message.parts'],
    [{ message: { messageId: 'm', role: 'ROLE_BOSS', parts: [{ text: 'x' }] } }, 'message.role'],
    [{ message: { messageId: '', role: 'ROLE_USER', parts: [{ text: 'x' }] } }, 'message.messageId'],
    [{ message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'x', data: 1 }] } }, 'message.parts[0]'],
    [{ message: { messageId: 'm', role: 'ROLE_USER', parts: [{ raw: '%%%' }] } }, 'message.parts[0].raw'],
    [
      {
        message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'x' }] },
        configuration: { historyLength: -1 },
      },
      'configuration.historyLength',
    ],
    [{ message: 'hi' }, 'message'],
  ])('names the field at fault: %j', (input, field) => {
    try {
      decodeSendMessageRequest(input);
      expect.unreachable();
    } catch (err) {
      expect((err as A2AError).fieldViolations[0]!.field).toBe(field);
    }
  });

  it('ListTasks validation', () => {
    expect(() => decodeListTasksRequest({ pageSize: 101 })).toThrow(/pageSize/);
    expect(() => decodeListTasksRequest({ status: 'working' })).toThrow(/status/);
    expect(() => decodeListTasksRequest({ statusTimestampAfter: 'yesterday' })).toThrow(
      /statusTimestampAfter/,
    );
    expect(decodeListTasksRequest({ pageSize: 0 })).toEqual({}); // proto3 unset, accepted leniently
  });
});
