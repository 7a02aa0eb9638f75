import { describe, expect, it } from 'vitest';
import {
  decodeCallToolParams,
  decodeMessage,
  decodeRequestMeta,
  decodeSubscriptionsListenParams,
  decodeTaskIdParams,
  decodeUpdateTaskParams,
  parseBody,
} from '../../../src/protocols/mcp/decode.ts';
import {
  decodeCreateTaskResult,
  decodeDiscoverResult,
  decodeGetTaskResult,
  decodeToolCallAnswer,
} from '../../../src/protocols/mcp/decode-result.ts';
import { discoverResult, requestMeta } from '../../../src/protocols/mcp/encode.ts';
import {
  advertisesTasks,
  checkTaskMethod,
  declaresTasks,
  discoverFallback,
  eraOfRequest,
  negotiateInitializeVersion,
  pickVersion,
  requireTasksDeclared,
} from '../../../src/protocols/mcp/era.ts';
import { MCP_ERRORS, McpError, errorResponse, taskNotFound } from '../../../src/protocols/mcp/errors.ts';
import {
  decodeInitializeResult,
  decodeLegacyCreateTaskResult,
  legacyCreateTaskResult,
  legacyServerSupportsToolTasks,
  legacyServerTasksCapability,
  legacyTaskPayload,
} from '../../../src/protocols/mcp/legacy.ts';

const META = requestMeta({ tasks: true, clientInfo: { name: 'c', version: '1' } });
const TASK = {
  taskId: 't1',
  status: 'working',
  createdAt: '2026-07-28T10:00:00Z',
  lastUpdatedAt: '2026-07-28T10:00:00Z',
  ttlMs: 60000,
};

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(McpError);
    return (e as McpError).field;
  }
  throw new Error('expected a decode error');
}

describe('request decoders', () => {
  it('decodes the envelope, and refuses batches, bad ids and bad JSON with the right code', () => {
    expect(decodeMessage({ jsonrpc: '2.0', id: 7, method: 'tasks/get', params: { taskId: 'a' } })).toEqual({
      kind: 'request',
      id: 7,
      method: 'tasks/get',
      params: { taskId: 'a' },
    });
    expect(decodeMessage({ jsonrpc: '2.0', method: 'notifications/cancelled' }).kind).toBe('notification');
    expect(() => decodeMessage([])).toThrow(expect.objectContaining({ rpcCode: -32600, field: 'body' }));
    expect(fieldOf(() => decodeMessage({ jsonrpc: '2.0', id: 1.5, method: 'x' }))).toBe('id');
    expect(fieldOf(() => decodeMessage({ jsonrpc: '1.0', id: 1, method: 'x' }))).toBe('jsonrpc');
    expect(() => parseBody('{')).toThrow(expect.objectContaining({ rpcCode: -32700 }));
  });

  it('reads the per-request _meta and names the missing key', () => {
    const m = decodeRequestMeta({ _meta: META });
    expect(m.protocolVersion).toBe('2026-07-28');
    expect(m.clientInfo).toEqual({ name: 'c', version: '1' });
    expect(declaresTasks(m)).toBe(true);
    expect(fieldOf(() => decodeRequestMeta({}))).toBe('params._meta');
    expect(
      fieldOf(() =>
        decodeRequestMeta({ _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } }),
      ),
    ).toBe('params._meta["io.modelcontextprotocol/clientCapabilities"]');
  });

  it('tools/call: MRTR answers and the legacy task param are decoded; bad answers name their key', () => {
    const p = decodeCallToolParams(
      {
        name: 'test_tool_with_task',
        arguments: { a: 1 },
        inputResponses: { user_name: { action: 'accept', content: { name: 'Alice' } } },
        requestState: 'opaque',
        _meta: META,
      },
      true,
    );
    expect(p).toMatchObject({ name: 'test_tool_with_task', requestState: 'opaque' });
    expect(p.inputResponses?.user_name).toEqual({ action: 'accept', content: { name: 'Alice' } });
    expect(
      fieldOf(() => decodeCallToolParams({ name: 'x', inputResponses: { k: { action: 'maybe' } } }, false)),
    ).toBe('params.inputResponses["k"].action');
    expect(fieldOf(() => decodeCallToolParams({ name: 'x' }, true))).toBe('params._meta');
    expect(fieldOf(() => decodeCallToolParams({ name: '' }, false))).toBe('params.name');
  });

  it('a modern tools/call ignores the legacy task param entirely, even a malformed one', () => {
    for (const task of [{ ttl: 1000 }, { ttl: -1 }, 'soon', null]) {
      const p = decodeCallToolParams({ name: 'slow_compute', task, _meta: META }, true);
      expect(p).not.toHaveProperty('task');
    }
    expect(fieldOf(() => decodeCallToolParams({ name: 'slow_compute', task: { ttl: -1 } }, false))).toBe(
      'params.task.ttl',
    );
  });

  it('tasks/get, tasks/update, subscriptions/listen', () => {
    expect(decodeTaskIdParams({ taskId: 'a', _meta: META }, true).taskId).toBe('a');
    expect(fieldOf(() => decodeTaskIdParams({ taskId: 3 }, false))).toBe('params.taskId');
    expect(
      decodeUpdateTaskParams({ taskId: 'a', inputResponses: { k: { action: 'decline' } }, _meta: META })
        .inputResponses,
    ).toEqual({
      k: { action: 'decline' },
    });
    expect(fieldOf(() => decodeUpdateTaskParams({ taskId: 'a', _meta: META }))).toBe('params.inputResponses');
    expect(
      decodeSubscriptionsListenParams({ notifications: { taskIds: ['a'] }, _meta: META }).notifications,
    ).toEqual({ taskIds: ['a'] });
    expect(
      fieldOf(() => decodeSubscriptionsListenParams({ notifications: { taskIds: [1] }, _meta: META })),
    ).toBe('params.notifications.taskIds[0]');
  });
});

describe('result decoders', () => {
  it('CreateTaskResult must be flat and carry none of result, error, inputRequests, requestState', () => {
    expect(decodeCreateTaskResult({ ...TASK, resultType: 'task' }).taskId).toBe('t1');
    for (const k of ['result', 'error', 'inputRequests', 'requestState']) {
      expect(fieldOf(() => decodeCreateTaskResult({ ...TASK, resultType: 'task', [k]: {} }))).toBe(
        `result.${k}`,
      );
    }
    expect(fieldOf(() => decodeCreateTaskResult({ ...TASK, resultType: 'task', ttl: 5 }))).toBe('result.ttl');
    expect(fieldOf(() => decodeCreateTaskResult({ ...TASK, resultType: 'task', ttlMs: 1.5 }))).toBe(
      'result.ttlMs',
    );
  });

  it('tasks/get: the status decides the required field', () => {
    expect(fieldOf(() => decodeGetTaskResult({ ...TASK, resultType: 'complete', status: 'completed' }))).toBe(
      'result.result',
    );
    expect(fieldOf(() => decodeGetTaskResult({ ...TASK, resultType: 'complete', status: 'failed' }))).toBe(
      'result.error',
    );
    expect(
      fieldOf(() => decodeGetTaskResult({ ...TASK, resultType: 'complete', status: 'input_required' })),
    ).toBe('result.inputRequests');
    expect(fieldOf(() => decodeGetTaskResult({ ...TASK, resultType: 'task' }))).toBe('result.resultType');
  });

  it('tools/call answers: complete (resultType may be absent), input_required, or a task only when declared', () => {
    expect(decodeToolCallAnswer({ content: [] }, false).kind).toBe('complete');
    expect(
      decodeToolCallAnswer(
        { resultType: 'input_required', inputRequests: { k: { method: 'roots/list' } } },
        false,
      ).kind,
    ).toBe('input_required');
    expect(decodeToolCallAnswer({ ...TASK, resultType: 'task' }, true).kind).toBe('task');
    expect(fieldOf(() => decodeToolCallAnswer({ ...TASK, resultType: 'task' }, false))).toBe(
      'result.resultType',
    );
    expect(() => decodeToolCallAnswer({ content: [] }, false)).not.toThrow();
  });

  it('server/discover round-trips, advertising exactly {} for the extension', () => {
    const d = decodeDiscoverResult(
      JSON.parse(JSON.stringify(discoverResult({ serverInfo: { name: 'taskplane', version: '1' } }))),
    );
    expect(d.capabilities).toEqual({ extensions: { 'io.modelcontextprotocol/tasks': {} } });
    expect(advertisesTasks(d.capabilities)).toBe(true);
    expect(advertisesTasks({ extensions: { 'io.modelcontextprotocol/tasks': { x: 1 } } })).toBe(false);
    expect(d._meta).toEqual({ 'io.modelcontextprotocol/serverInfo': { name: 'taskplane', version: '1' } });
    expect(d.supportedVersions[0]).toBe('2026-07-28');
  });
});

describe('the error table', () => {
  it('codes and HTTP statuses', () => {
    expect(MCP_ERRORS.HeaderMismatch).toMatchObject({ code: -32020, http: 400 });
    expect(MCP_ERRORS.MissingRequiredClientCapability).toMatchObject({ code: -32021, http: 400 });
    expect(MCP_ERRORS.UnsupportedProtocolVersion).toMatchObject({ code: -32022, http: 400 });
    expect(MCP_ERRORS.MethodNotFound).toMatchObject({ code: -32601, http: 404 });
    expect(MCP_ERRORS.InvalidParams.code).toBe(-32602);
    expect(MCP_ERRORS.TaskNotFound.code).toBe(-32602);
    const codes = Object.values(MCP_ERRORS).map((e) => e.code);
    expect(codes).not.toContain(-32002);
    expect(codes).not.toContain(-32042);
  });

  it('-32021 carries requiredCapabilities for the tasks extension', () => {
    const m = decodeRequestMeta({ _meta: requestMeta({}) });
    try {
      requireTasksDeclared(m);
      expect.unreachable();
    } catch (e) {
      expect(errorResponse(1, e as McpError)).toEqual({
        jsonrpc: '2.0',
        id: 1,
        error: {
          code: -32021,
          message: 'Missing required client capability',
          data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
        },
      });
    }
  });

  it('an expired task and an unknown one share the code; only the message differs', () => {
    expect(taskNotFound(true).toJsonRpc()).toEqual({
      code: -32602,
      message: 'Failed to retrieve task: Task has expired',
    });
    expect(taskNotFound().rpcCode).toBe(-32602);
  });

  it('tasks/result and tasks/list are unknown methods in the modern era only', () => {
    expect(() => checkTaskMethod('tasks/result', 'modern')).toThrow(
      expect.objectContaining({ rpcCode: -32601, httpStatus: 404 }),
    );
    expect(() => checkTaskMethod('tasks/list', 'modern')).toThrow(
      expect.objectContaining({ rpcCode: -32601 }),
    );
    expect(() => checkTaskMethod('tasks/update', 'legacy')).toThrow(
      expect.objectContaining({ rpcCode: -32601 }),
    );
    expect(() => checkTaskMethod('tasks/result', 'legacy')).not.toThrow();
    expect(() => checkTaskMethod('tasks/update', 'modern')).not.toThrow();
  });
});

describe('era negotiation', () => {
  it('picks the newest common version, and falls back to initialize only for era answers', () => {
    expect(pickVersion(['2025-11-25', '2026-07-28'])).toBe('2026-07-28');
    expect(pickVersion(['2025-06-18'])).toBe('2025-06-18');
    expect(pickVersion(['1999-01-01'])).toBeUndefined();
    expect(negotiateInitializeVersion('2025-06-18')).toBe('2025-06-18');
    expect(negotiateInitializeVersion('2026-07-28')).toBe('2025-11-25');
    expect(discoverFallback(404)).toBe('legacy');
    expect(discoverFallback(400)).toBe('legacy');
    expect(discoverFallback(200, -32601)).toBe('legacy');
    expect(discoverFallback(401)).toBe('error');
    expect(discoverFallback(503)).toBe('error');
  });

  it('a _meta version we do not speak is -32022 naming what we do', () => {
    expect(eraOfRequest(decodeRequestMeta({ _meta: META }))).toBe('modern');
    const meta = decodeRequestMeta({ _meta: requestMeta({ protocolVersion: '2030-01-01' }) });
    expect(() => eraOfRequest(meta)).toThrow(
      expect.objectContaining({
        rpcCode: -32022,
        data: expect.objectContaining({ requested: '2030-01-01' }),
      }),
    );
  });

  it('the legacy create result is nested with ttl/pollInterval, and tasks/result is tagged with its task', () => {
    const out = legacyCreateTaskResult({ ...TASK, status: 'working', ttlMs: 60000, pollIntervalMs: 500 });
    expect(out).toEqual({
      task: {
        taskId: 't1',
        status: 'working',
        createdAt: TASK.createdAt,
        lastUpdatedAt: TASK.lastUpdatedAt,
        ttl: 60000,
        pollInterval: 500,
      },
    });
    expect(decodeLegacyCreateTaskResult(out)).toEqual(out);
    expect(legacyTaskPayload('t1', { content: [] })).toEqual({
      content: [],
      _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't1' } },
    });
  });

  it('reads the legacy tasks capability from initialize', () => {
    const init = decodeInitializeResult({
      protocolVersion: '2025-11-25',
      capabilities: { tasks: legacyServerTasksCapability() },
      serverInfo: { name: 's', version: '1' },
    });
    expect(legacyServerSupportsToolTasks(init.capabilities)).toBe(true);
    expect(legacyServerSupportsToolTasks({ tasks: { list: {} } })).toBe(false);
  });
});
