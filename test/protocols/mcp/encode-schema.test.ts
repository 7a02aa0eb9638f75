import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ackResult,
  callToolResult,
  createTaskResult,
  embeddedResult,
  getTaskResult,
  inputRequiredResult,
  taskNotification,
  subscriptionAcknowledged,
} from '../../../src/protocols/mcp/encode.ts';
import { decodeCreateTaskResult, decodeGetTaskResult } from '../../../src/protocols/mcp/decode-result.ts';
import type { DetailedTask, JsonObject, Task } from '../../../src/protocols/mcp/types.ts';
import { validator } from './schema.ts';

const iso = fc.integer({ min: 0, max: 4_102_444_800_000 }).map((ms) => new Date(ms).toISOString());

const task: fc.Arbitrary<Task> = fc.record(
  {
    taskId: fc.string({ minLength: 1, maxLength: 30 }),
    status: fc.constantFrom('working', 'input_required', 'completed', 'failed', 'cancelled'),
    statusMessage: fc.string({ maxLength: 20 }),
    createdAt: iso,
    lastUpdatedAt: iso,
    ttlMs: fc.oneof(fc.constant(null), fc.integer({ min: 1, max: 2 ** 40 })),
    pollIntervalMs: fc.integer({ min: 1, max: 600_000 }),
  },
  { requiredKeys: ['taskId', 'status', 'createdAt', 'lastUpdatedAt', 'ttlMs'] },
);

const toolResult: fc.Arbitrary<JsonObject> = fc.record(
  {
    content: fc.array(fc.record({ type: fc.constant('text'), text: fc.string() }), { maxLength: 2 }),
    isError: fc.boolean(),
  },
  { requiredKeys: ['content'] },
);

const elicit = fc.record({
  method: fc.constant('elicitation/create' as const),
  params: fc.record({
    message: fc.string(),
    requestedSchema: fc.constant({ type: 'object', properties: { confirm: { type: 'boolean' } } }),
  }),
});

const detailed: fc.Arbitrary<DetailedTask> = fc.oneof(
  task.map((t) => ({ ...t, status: 'working' as const })),
  task.map((t) => ({ ...t, status: 'cancelled' as const })),
  fc
    .tuple(task, fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), elicit, { maxKeys: 3 }))
    .map(([t, inputRequests]) => ({ ...t, status: 'input_required' as const, inputRequests })),
  fc.tuple(task, toolResult).map(([t, result]) => ({ ...t, status: 'completed' as const, result })),
  fc
    .tuple(task, fc.integer({ min: -32768, max: -32000 }), fc.string())
    .map(([t, code, message]) => ({ ...t, status: 'failed' as const, error: { code, message } })),
);

describe('our encoders produce what the tasks extension schema allows', () => {
  const createValid = validator('CreateTaskResult');
  const getValid = validator('GetTaskResult');
  const ackValid = validator('UpdateTaskResult');
  const cancelValid = validator('CancelTaskResult');
  const notifValid = validator('TaskStatusNotification');

  it('CreateTaskResult: flat, resultType "task", and decodes back to the same task', () => {
    fc.assert(
      fc.property(task, (t) => {
        const out = createTaskResult(t);
        expect(createValid(out)).toBeNull();
        for (const k of ['result', 'error', 'inputRequests', 'requestState', 'ttl', 'pollInterval', 'task']) {
          expect(out).not.toHaveProperty(k);
        }
        expect(decodeCreateTaskResult(JSON.parse(JSON.stringify(out)))).toEqual(out);
      }),
    );
  });

  it('GetTaskResult: resultType "complete" with the DetailedTask, round-trips through the decoder', () => {
    fc.assert(
      fc.property(detailed, (t) => {
        const out = getTaskResult(t);
        expect(getValid(out)).toBeNull();
        expect(out.resultType).toBe('complete');
        expect(decodeGetTaskResult(JSON.parse(JSON.stringify(out)))).toEqual(out);
      }),
    );
  });

  it('a completed task embeds its result with resultType "complete" and no related-task meta', () => {
    const out = getTaskResult({
      taskId: 't',
      status: 'completed',
      createdAt: '2026-01-01T00:00:00.000Z',
      lastUpdatedAt: '2026-01-01T00:00:01.000Z',
      ttlMs: 60_000,
      result: {
        content: [{ type: 'text', text: 'done' }],
        isError: true,
        _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't' } },
      },
    });
    expect(out).toMatchObject({ status: 'completed', result: { resultType: 'complete', isError: true } });
    expect((out as { result: JsonObject }).result).not.toHaveProperty('_meta');
    expect(embeddedResult({ content: [], _meta: { keep: 1 } })).toEqual({
      content: [],
      resultType: 'complete',
      _meta: { keep: 1 },
    });
  });

  it('tasks/update and tasks/cancel acknowledgements carry no task fields', () => {
    expect(ackResult()).toEqual({ resultType: 'complete' });
    expect(ackValid(ackResult())).toBeNull();
    expect(cancelValid(ackResult())).toBeNull();
  });

  it('notifications/tasks carries the same DetailedTask as tasks/get, tagged with the subscription', () => {
    fc.assert(
      fc.property(detailed, (t) => {
        const n = taskNotification(t, 'sub-1');
        expect(notifValid(n)).toBeNull();
        const { resultType: _r, ...same } = getTaskResult(t);
        expect(n.params).toEqual({ ...same, _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } });
      }),
    );
    const ack = subscriptionAcknowledged('sub-1', ['a', 'b']);
    expect(ack.method).toBe('notifications/subscriptions/acknowledged');
    expect(ack.params).toMatchObject({ notifications: { taskIds: ['a', 'b'] } });
  });

  it('MRTR and plain tool results: explicit resultType, inputRequests the schema allows', () => {
    const resultValid = validator('Result');
    const requestsValid = validator('InputRequests');
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), elicit, { maxKeys: 3 }),
        fc.string(),
        (reqs, state) => {
          const out = inputRequiredResult(reqs, state);
          expect(resultValid(out)).toBeNull();
          expect(requestsValid(out.inputRequests)).toBeNull();
          expect(out).toMatchObject({ resultType: 'input_required', requestState: state });
        },
      ),
    );
    const done = callToolResult([{ type: 'text', text: 'Hello, Alice!' }], { isError: false });
    expect(resultValid(done)).toBeNull();
    expect(done.resultType).toBe('complete');
  });

  it('refuses to encode a ttlMs or pollIntervalMs that is not a positive integer', () => {
    const base: Task = { taskId: 't', status: 'working', createdAt: 'a', lastUpdatedAt: 'b', ttlMs: 0 };
    expect(() => createTaskResult(base)).toThrow(expect.objectContaining({ field: 'ttlMs' }));
    expect(() => createTaskResult({ ...base, ttlMs: 5, pollIntervalMs: 1.5 })).toThrow(
      expect.objectContaining({ field: 'pollIntervalMs' }),
    );
  });
});
