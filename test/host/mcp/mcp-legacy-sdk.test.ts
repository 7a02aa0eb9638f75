import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { RunningHost } from '../../../src/host/start-host.ts';
import { MemoryStore } from '../../../src/store/memory/memory-store.ts';
import { startTestHost } from '../in-process.ts';
import agent from './conformance-agent.ts';

/**
 * The 2025-11-25 surface for the installed base, driven by the official v1 SDK client
 * (`@modelcontextprotocol/sdk` 1.x, experimental tasks): initialize, task-augmented tools/call,
 * tasks/get polling, tasks/result, tasks/list and tasks/cancel, over the stateless endpoint.
 */
let h: RunningHost;
let client: Client;
beforeAll(async () => {
  h = await startTestHost(new MemoryStore(), { agent, mcpPollIntervalMs: 50 });
  client = new Client({ name: 'sdk-v1-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(h.mcpUrl)));
});
afterAll(async () => {
  await client?.close();
  await h?.close();
});

describe('MCP 2025-11-25 with the v1 SDK client', () => {
  it('negotiates 2025-11-25 and sees the experimental tasks capability and per-tool task support', async () => {
    expect(client.getServerCapabilities()?.tasks).toEqual({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    });
    const { tools } = await client.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
    expect(support).toMatchObject({ greet: 'forbidden', slow_compute: 'optional', failing_job: 'required' });
  });

  it('runs a task-augmented call to its result with callToolStream', async () => {
    const seen: string[] = [];
    let result: unknown;
    let taskId = '';
    for await (const m of client.experimental.tasks.callToolStream(
      { name: 'slow_compute', arguments: { seconds: 0.2, label: 'v1' } },
      CallToolResultSchema,
    )) {
      seen.push(m.type);
      if (m.type === 'taskCreated') taskId = m.task.taskId;
      if (m.type === 'result') result = m.result;
      if (m.type === 'error') throw m.error;
    }
    expect(seen[0]).toBe('taskCreated');
    expect(seen.at(-1)).toBe('result');
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'Computed v1 after 0.2s' }] });
    const task = await client.experimental.tasks.getTask(taskId);
    expect(task).toMatchObject({ taskId, status: 'completed', ttl: 86_400_000, pollInterval: 50 });
    const listed = await client.experimental.tasks.listTasks();
    expect(listed.tasks.map((t) => t.taskId)).toContain(taskId);
  });

  it('a plain call is answered synchronously; a task-required tool called without a task is -32601', async () => {
    const plain = await client.callTool({ name: 'greet', arguments: { name: 'Bo' } });
    expect(plain.content).toEqual([{ type: 'text', text: 'Hello, Bo!' }]);
    await expect(
      client.request({ method: 'tools/call', params: { name: 'failing_job' } }, CallToolResultSchema),
    ).rejects.toMatchObject({ code: -32601 });
  });

  it('a tool error surfaces as failed in this era, and tasks/result returns the tool result', async () => {
    const messages = [];
    for await (const m of client.experimental.tasks.callToolStream(
      { name: 'failing_job', arguments: {} },
      CallToolResultSchema,
    ))
      messages.push(m);
    const created = messages.find((m) => m.type === 'taskCreated');
    expect(created).toBeDefined();
    const taskId = created!.type === 'taskCreated' ? created!.task.taskId : '';
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe('failed');
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'The job failed' }] });
  });

  it('tasks/result on a running task streams notifications/tasks/status, then the result', async () => {
    const statuses: string[] = [];
    client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
      statuses.push(`${n.params.taskId}:${n.params.status}`);
    });
    const stream = client.experimental.tasks.callToolStream(
      { name: 'slow_compute', arguments: { seconds: 0.5, label: 'streamed' } },
      CallToolResultSchema,
    );
    const first = await stream.next();
    const taskId = first.value?.type === 'taskCreated' ? first.value.task.taskId : '';
    await stream.return(undefined);
    const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'Computed streamed after 0.5s' }] });
    expect(statuses[0]).toBe(`${taskId}:working`);
    expect(statuses.at(-1)).toBe(`${taskId}:completed`);
  });

  it('cancels a running task, and refuses to cancel it again (2025-11-25: -32602 on a terminal task)', async () => {
    const stream = client.experimental.tasks.callToolStream(
      { name: 'slow_compute', arguments: { seconds: 60 } },
      CallToolResultSchema,
    );
    const first = await stream.next();
    expect(first.value?.type).toBe('taskCreated');
    const taskId = first.value?.type === 'taskCreated' ? first.value.task.taskId : '';
    await stream.return(undefined);
    const cancelled = await client.experimental.tasks.cancelTask(taskId);
    expect(cancelled).toMatchObject({ taskId, status: 'cancelled' });
    await expect(client.experimental.tasks.cancelTask(taskId)).rejects.toMatchObject({ code: -32602 });
    await expect(client.experimental.tasks.getTask('task_not_there')).rejects.toMatchObject({ code: -32602 });
  });
});
