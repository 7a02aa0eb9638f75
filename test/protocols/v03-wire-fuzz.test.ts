import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { A2AError } from '../../src/protocols/a2a/errors.ts';
import type { A2ARequestHandler, CallContext } from '../../src/protocols/a2a/handler.ts';
import { decodeTask } from '../../src/connectors/a2a/task-snapshot.ts';
import { callV03 } from '../../src/protocols/a2a/v03/jsonrpc.ts';
import { v03Rest } from '../../src/protocols/a2a/v03/rest.ts';
import type { HttpRequest } from '../../src/protocols/a2a/http-common.ts';
import { VirtualClock } from '../../src/core/clock.ts';
import { eventFromV03, streamResponseToV03, taskFromV03 } from '../../src/protocols/a2a/v03/wire.ts';
import { canonicalCardPayload } from '../../src/protocols/a2a/card-signature.ts';
import type { StreamResponse, Task } from '../../src/protocols/a2a/types.ts';

/**
 * The 0.3 translators take whatever a client or an agent sends: on the host a bad 0.3 request is an
 * A2AError (the protocol's own error naming the field), never anything else; a 1.0 value survives the
 * round trip through its 0.3 form; the card canonicalizer takes any JSON.
 */
const task: Task = {
  id: 't1',
  contextId: 'c1',
  status: {
    state: 'TASK_STATE_INPUT_REQUIRED',
    timestamp: '2026-01-01T00:00:00.000Z',
    message: { messageId: 'q', role: 'ROLE_AGENT', parts: [{ text: 'which?' }] },
  },
  artifacts: [
    {
      artifactId: 'a',
      parts: [
        { data: { x: 1 } },
        { data: [1, 'two'] },
        { data: null },
        { raw: 'aGk=', mediaType: 'text/plain', filename: 'hi.txt' },
        { url: 'https://example.com/f', metadata: { k: 'v' } },
      ],
    },
  ],
  history: [{ messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'go' }] }],
};

/** A handler whose every operation answers the fixture task (only the translation is under test). */
const handler = new Proxy(
  {},
  {
    get: (_t, name) => async () => {
      if (name === 'sendMessage') return { task };
      if (name === 'getExtendedAgentCard')
        return {
          name: 'n',
          description: 'd',
          version: '1',
          supportedInterfaces: [{ url: 'http://h/rpc', protocolBinding: 'JSONRPC', protocolVersion: '0.3' }],
          capabilities: {},
          defaultInputModes: [],
          defaultOutputModes: [],
          skills: [],
        };
      if (name === 'listTaskPushNotificationConfigs') return { configs: [] };
      if (name === 'deleteTaskPushNotificationConfig') return undefined;
      if (name === 'createTaskPushNotificationConfig' || name === 'getTaskPushNotificationConfig')
        return { id: 'p', taskId: 't1', url: 'https://example.com/h' };
      if (name === 'sendStreamingMessage' || name === 'subscribeToTask') return (async function* () {})();
      return task;
    },
  },
) as unknown as A2ARequestHandler;
const ctx: CallContext = { owner: 'o', extensions: [], signal: new AbortController().signal };

const methods = fc.constantFrom(
  'message/send',
  'message/stream',
  'tasks/get',
  'tasks/cancel',
  'tasks/resubscribe',
  'tasks/pushNotificationConfig/set',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
  'tasks/pushNotificationConfig/delete',
  'agent/getAuthenticatedExtendedCard',
  'tasks/list',
);

const anything = fc.oneof(fc.jsonValue(), fc.constant(undefined));
const part = fc.record(
  {
    kind: fc.constantFrom('text', 'file', 'data', 'video', undefined),
    text: anything,
    file: fc.oneof(
      fc.record({ bytes: anything, uri: anything, mimeType: anything, name: anything }),
      anything,
    ),
    data: anything,
    metadata: fc.oneof(fc.constant({ data_part_compat: true }), anything),
  },
  { requiredKeys: [] },
);
const sendParams = fc.record(
  {
    message: fc.record(
      {
        kind: anything,
        messageId: fc.oneof(fc.string(), anything),
        role: fc.constantFrom('user', 'agent', 'ROLE_USER', 5, undefined),
        parts: fc.oneof(fc.array(part, { maxLength: 3 }), anything),
        taskId: anything,
        contextId: anything,
      },
      { requiredKeys: [] },
    ),
    configuration: fc.oneof(
      fc.record(
        {
          blocking: anything,
          historyLength: anything,
          pushNotificationConfig: fc.oneof(
            fc.record(
              {
                url: anything,
                token: anything,
                authentication: fc.record({ schemes: anything, credentials: anything }),
              },
              { requiredKeys: [] },
            ),
            anything,
          ),
        },
        { requiredKeys: [] },
      ),
      anything,
    ),
    id: anything,
    taskId: anything,
    pushNotificationConfigId: anything,
    pushNotificationConfig: anything,
  },
  { requiredKeys: [] },
);

describe('0.3 wire translation', () => {
  it('any params to any 0.3 method: an answer or an A2AError, nothing else', async () => {
    await fc.assert(
      fc.asyncProperty(methods, fc.oneof(sendParams, fc.jsonValue()), async (method, params) => {
        try {
          await callV03(handler, method, params, ctx, 1);
        } catch (err) {
          expect(err).toBeInstanceOf(A2AError);
        }
      }),
      { numRuns: 400, seed: 17 },
    );
  });

  it('any body to any 0.3 HTTP+JSON route: a 0.3 answer, never an internal error', async () => {
    const routes = fc.constantFrom(
      ['POST', 'message:send'],
      ['POST', 'message:stream'],
      ['GET', 'tasks/t1'],
      ['POST', 'tasks/t1:cancel'],
      ['GET', 'tasks/t1:subscribe'],
      ['POST', 'tasks/t1/pushNotificationConfigs'],
      ['GET', 'tasks/t1/pushNotificationConfigs/p'],
      ['DELETE', 'tasks/t1/pushNotificationConfigs/p'],
      ['GET', 'tasks'],
    );
    const options = {
      handler,
      authenticate: () => 'o',
      clock: new VirtualClock(0),
      onInternalError: (err: unknown) => {
        throw err;
      },
    };
    await fc.assert(
      fc.asyncProperty(routes, fc.oneof(sendParams, fc.jsonValue()), async ([method, path], body) => {
        const text = JSON.stringify(body) ?? '';
        const req: HttpRequest = {
          method: method!,
          headers: { get: () => null },
          path: `/v1/${path}`,
          searchParams: new URLSearchParams(),
          text: () => Promise.resolve(text),
          signal: new AbortController().signal,
        };
        const reply = await v03Rest(options, req, path!.split('/'), { bytes: 1 << 20, depth: 64 });
        if (reply.kind === 'json') expect(reply.status).not.toBe(500);
      }),
      { numRuns: 300, seed: 17 },
    );
  });

  it('a 1.0 task survives the trip through its 0.3 form', () => {
    const back = taskFromV03(streamResponseToV03({ task }));
    expect(back).toEqual(task);
  });

  it('status updates carry final at terminal and interrupted states only', () => {
    const update = (state: Task['status']['state']): StreamResponse => ({
      statusUpdate: { taskId: 't', contextId: 'c', status: { state } },
    });
    expect(streamResponseToV03(update('TASK_STATE_WORKING')).final).toBe(false);
    expect(streamResponseToV03(update('TASK_STATE_INPUT_REQUIRED')).final).toBe(true);
    expect(streamResponseToV03(update('TASK_STATE_COMPLETED')).final).toBe(true);
    expect(eventFromV03(streamResponseToV03(update('TASK_STATE_WORKING')))).toEqual(
      update('TASK_STATE_WORKING'),
    );
  });

  it('any agent answer: a 1.0 task the connector reads, or an error, never a crash', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        try {
          decodeTask(taskFromV03(v));
        } catch (err) {
          expect(err).toBeInstanceOf(Error);
          expect(err).not.toBeInstanceOf(TypeError);
        }
      }),
      { numRuns: 400, seed: 17 },
    );
  });

  it('the card canonicalizer takes any JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(typeof canonicalCardPayload(v)).toBe('string');
      }),
      { numRuns: 400, seed: 17 },
    );
  });
});
