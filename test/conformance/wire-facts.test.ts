import { describe, expect, it } from 'vitest';
import { parseFrame, requestFacts, stateFacts } from '../../src/conformance/wire-facts.ts';

/** The proxy's reading of the A2A wire: both bindings, creating messages told from follow-ups. */
describe('wire facts', () => {
  it('reads a JSON-RPC creating message and a follow-up on a task', () => {
    const create = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendStreamingMessage',
      params: { message: { messageId: 'm1', contextId: 'c1', role: 'ROLE_USER', parts: [] } },
    });
    expect(requestFacts('POST', '/a2a/jsonrpc', create)).toEqual({
      method: 'SendStreamingMessage',
      messageId: 'm1',
      taskId: null,
      contextId: 'c1',
      creates: true,
    });
    const answer = JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'SendMessage',
      params: { message: { message_id: 'm2', task_id: 't1', parts: [] } },
    });
    expect(requestFacts('POST', '/a2a/jsonrpc', answer)).toMatchObject({
      messageId: 'm2',
      taskId: 't1',
      creates: false,
    });
  });

  it('reads HTTP+JSON routes, with or without a tenant prefix', () => {
    expect(requestFacts('GET', '/a2a/rest/tasks/t%2F1', '')).toMatchObject({
      method: 'GetTask',
      taskId: 't/1',
    });
    expect(requestFacts('POST', '/a2a/rest/acme/tasks/t1:cancel', '{}')).toMatchObject({
      method: 'CancelTask',
      taskId: 't1',
    });
    expect(requestFacts('GET', '/a2a/rest/tasks/t1:subscribe', '')).toMatchObject({
      method: 'SubscribeToTask',
    });
    expect(requestFacts('GET', '/a2a/rest/tasks?contextId=c', '')).toMatchObject({ method: 'ListTasks' });
    expect(
      requestFacts(
        'POST',
        '/a2a/rest/message:send',
        JSON.stringify({ message: { messageId: 'm', contextId: 'c' } }),
      ),
    ).toMatchObject({
      method: 'SendMessage',
      creates: true,
    });
    expect(requestFacts('GET', '/.well-known/agent-card.json', '')).toMatchObject({ method: 'card' });
    expect(requestFacts('POST', '/elsewhere', 'not json')).toMatchObject({ method: 'other', creates: false });
  });

  it('reads task states from answers, stream frames and list pages', () => {
    const status = { state: 'TASK_STATE_WORKING', timestamp: '2026-01-01T00:00:00.000Z' };
    expect(
      stateFacts({ jsonrpc: '2.0', id: 1, result: { task: { id: 't', contextId: 'c', status } } }),
    ).toEqual([
      { taskId: 't', contextId: 'c', state: 'TASK_STATE_WORKING', timestampMs: Date.parse(status.timestamp) },
    ]);
    expect(
      parseFrame(
        JSON.stringify({ statusUpdate: { taskId: 't', status: { state: 'TASK_STATE_COMPLETED' } } }),
      ),
    ).toEqual([{ taskId: 't', contextId: null, state: 'TASK_STATE_COMPLETED', timestampMs: null }]);
    expect(
      stateFacts({
        tasks: [
          { id: 'a', status },
          { id: 'b', status },
        ],
      }).map((f) => f.taskId),
    ).toEqual(['a', 'b']);
    expect(parseFrame('not json')).toEqual([]);
  });
});
