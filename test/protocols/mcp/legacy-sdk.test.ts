import {
  CancelTaskResultSchema,
  CreateTaskResultSchema,
  GetTaskResultSchema,
  ListTasksResultSchema,
  TaskStatusNotificationSchema,
} from '@modelcontextprotocol/sdk/experimental/tasks';
import { describe, expect, it } from 'vitest';
import {
  decodeLegacyCreateTaskResult,
  decodeLegacyListTasksResult,
  decodeLegacyTaskResult,
  legacyCreateTaskResult,
  legacyTaskStatusNotification,
  toLegacyTask,
} from '../../../src/protocols/mcp/legacy.ts';
import type { Task } from '../../../src/protocols/mcp/types.ts';
import { createTaskResult } from '../../../src/protocols/mcp/encode.ts';

/**
 * The 2025-11-25 shapes checked against the schemas `@modelcontextprotocol/sdk` 1.x validates with:
 * what we send, its client parses; what its server sends, we decode.
 */

const task: Task = {
  taskId: '3f2a',
  status: 'working',
  statusMessage: 'started',
  createdAt: '2026-07-28T10:00:00.000Z',
  lastUpdatedAt: '2026-07-28T10:00:01.000Z',
  ttlMs: 60_000,
  pollIntervalMs: 1000,
};

describe('legacy tasks against the v1 SDK schemas', () => {
  it('our create result, tasks/get, tasks/cancel, tasks/list and status notification parse in the SDK', () => {
    expect(CreateTaskResultSchema.safeParse(legacyCreateTaskResult(task)).success).toBe(true);
    expect(GetTaskResultSchema.safeParse(toLegacyTask(task)).success).toBe(true);
    expect(CancelTaskResultSchema.safeParse(toLegacyTask({ ...task, status: 'cancelled' })).success).toBe(
      true,
    );
    expect(ListTasksResultSchema.safeParse({ tasks: [toLegacyTask(task)] }).success).toBe(true);
    expect(
      TaskStatusNotificationSchema.safeParse(legacyTaskStatusNotification({ ...task, ttlMs: null })).success,
    ).toBe(true);
  });

  it('what the SDK schema accepts from a v1 server, we decode to the same values', () => {
    const sdkTask = {
      taskId: 'abc',
      status: 'completed',
      ttl: null,
      createdAt: 'a',
      lastUpdatedAt: 'b',
      pollInterval: 1000,
    };
    const create = CreateTaskResultSchema.parse({ task: sdkTask });
    expect(decodeLegacyCreateTaskResult(create)).toEqual({ task: sdkTask });
    expect(decodeLegacyTaskResult(GetTaskResultSchema.parse(sdkTask))).toEqual(sdkTask);
    expect(
      decodeLegacyListTasksResult(ListTasksResultSchema.parse({ tasks: [sdkTask], nextCursor: 'n' })),
    ).toEqual({
      tasks: [sdkTask],
      nextCursor: 'n',
    });
  });

  it('the SDK schemas tell the eras apart: our modern flat create result is not a legacy one', () => {
    expect(CreateTaskResultSchema.safeParse(createTaskResult(task)).success).toBe(false);
  });

  it('the modern spelling is not a legacy task: ttlMs without ttl is refused, naming ttl', () => {
    const modern = { taskId: 'abc', status: 'working', ttlMs: 5, createdAt: 'a', lastUpdatedAt: 'b' };
    expect(() => decodeLegacyTaskResult(modern)).toThrow(expect.objectContaining({ field: 'result.ttl' }));
  });
});
