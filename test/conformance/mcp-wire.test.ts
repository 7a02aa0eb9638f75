import { describe, expect, it } from 'vitest';
import { MCP_WIRE } from '../../src/conformance/mcp-wire.ts';
import { parseUsage } from '../../src/conformance/wire-facts.ts';

const rpc = (method: string, params: unknown) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });

/** The proxy's reading of the MCP wire, and of usage reports on both protocols. */
describe('MCP wire facts', () => {
  it('tells a job’s creating tools/call (by its label) from an MRTR retry and names the task of task methods', () => {
    const call = rpc('tools/call', {
      name: 'demo_task',
      arguments: { durationMs: 5, label: 'cf-cancel-a-1' },
    });
    expect(MCP_WIRE.requestFacts('POST', '/mcp', call)).toEqual({
      method: 'tools/call',
      messageId: null,
      taskId: null,
      contextId: 'cf-cancel-a-1',
      creates: true,
    });
    const retry = rpc('tools/call', { name: 'demo_task', arguments: {}, requestState: 'x' });
    expect(MCP_WIRE.requestFacts('POST', '/mcp', retry).creates).toBe(false);
    expect(MCP_WIRE.requestFacts('POST', '/mcp', rpc('tasks/get', { taskId: 't1' }))).toMatchObject({
      method: 'tasks/get',
      taskId: 't1',
    });
    const listen = rpc('subscriptions/listen', { notifications: { taskIds: ['t2'] } });
    expect(MCP_WIRE.requestFacts('POST', '/mcp', listen).taskId).toBe('t2');
    const update = rpc('tasks/update', { taskId: 't3', inputResponses: { b: {}, a: {} } });
    expect(MCP_WIRE.requestFacts('POST', '/mcp', update).messageId).toBe('t3:a,b');
    expect(MCP_WIRE.requestFacts('GET', '/mcp', '').method).toBe('other');
  });

  it('reads task states from results (both eras) and notification frames, with ttl and creation time', () => {
    const created = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      result: {
        resultType: 'task',
        taskId: 't1',
        status: 'working',
        createdAt: '2026-01-01T00:00:00.000Z',
        lastUpdatedAt: '2026-01-01T00:00:01.000Z',
        ttlMs: 6000,
      },
    });
    expect(MCP_WIRE.states(created)).toEqual([
      {
        taskId: 't1',
        contextId: null,
        state: 'working',
        timestampMs: Date.parse('2026-01-01T00:00:01.000Z'),
        ttlMs: 6000,
        createdAtMs: Date.parse('2026-01-01T00:00:00.000Z'),
      },
    ]);
    const legacy = JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      result: { task: { taskId: 't2', status: 'working', ttl: null } },
    });
    expect(MCP_WIRE.states(legacy)).toMatchObject([{ taskId: 't2', state: 'working', ttlMs: null }]);
    const note = rpc('notifications/tasks', { taskId: 't1', status: 'completed' }).replace('"id":1,', '');
    expect(MCP_WIRE.states(note)).toMatchObject([{ taskId: 't1', state: 'completed' }]);
    expect(MCP_WIRE.isTerminal('completed')).toBe(true);
    expect(MCP_WIRE.isTerminal('input_required')).toBe(false);
    expect(
      MCP_WIRE.states(JSON.stringify({ jsonrpc: '2.0', id: 3, result: { resultType: 'complete' } })),
    ).toEqual([]);
  });

  it('reads usage: A2A metadata.usage on a task or artifact update, MCP _meta.usage in a task result', () => {
    const task = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      result: {
        task: {
          id: 't1',
          status: { state: 'TASK_STATE_COMPLETED' },
          artifacts: [{ artifactId: 'result', metadata: { usage: { steps: 3, bogus: 'x', negative: -1 } } }],
        },
      },
    });
    expect(parseUsage(task)).toEqual([{ taskId: 't1', usage: { steps: 3 } }]);
    const update = JSON.stringify({
      artifactUpdate: { taskId: 't2', artifact: { artifactId: 'r', metadata: { usage: { tokens: 10 } } } },
    });
    expect(parseUsage(update)).toEqual([{ taskId: 't2', usage: { tokens: 10 } }]);
    expect(parseUsage(JSON.stringify({ task: { id: 't3', status: { state: 'x' } } }))).toEqual([]);
    const mcp = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      result: { taskId: 't4', status: 'completed', result: { content: [], _meta: { usage: { tokens: 7 } } } },
    });
    expect(MCP_WIRE.usage(mcp)).toEqual([{ taskId: 't4', usage: { tokens: 7 } }]);
  });
});
