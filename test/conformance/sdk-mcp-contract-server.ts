/**
 * A plain MCP tasks server on the official `@modelcontextprotocol/sdk` 1.x: its McpServer, its
 * StreamableHTTPServerTransport (stateful sessions), its experimental tasks (MCP 2025-11-25,
 * `registerToolTask`) and its InMemoryTaskStore, which keeps tasks in process memory. The tool
 * `demo_task` implements the conformance test contract's `durationMs`, `steps`, `fail` and
 * `sideEffectMs` (not `askInput`). The MCP comparison target of
 * test/conformance/conformance-discriminates-sdk-mcp.test.ts: its tasks must not survive a restart.
 * `--port P` (0 = any); serves `/mcp`; prints `sdk mcp server ready <url>`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { mcpSessions } from '../peers/mcp-sessions.ts';

const taskStore = new InMemoryTaskStore();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The contract's work: steps as status messages, the side effect, then the tool result. */
async function work(
  taskId: string,
  c: { durationMs?: number; steps?: number; fail?: boolean; sideEffectMs?: number },
): Promise<void> {
  const live = async () => (await taskStore.getTask(taskId))?.status === 'working';
  const steps = c.steps ?? 3;
  for (let i = 1; i <= steps; i++) {
    await sleep((c.durationMs ?? 1000) / Math.max(1, steps));
    if (!(await live())) return;
    await taskStore.updateTaskStatus(taskId, 'working', `step ${i}/${steps}`);
  }
  let receipt: { doneAt: string } | undefined;
  if (c.sideEffectMs) {
    await taskStore.updateTaskStatus(taskId, 'working', 'side effect started');
    await sleep(c.sideEffectMs);
    receipt = { doneAt: new Date().toISOString() };
  }
  if (!(await live())) return;
  await taskStore.storeTaskResult(
    taskId,
    'completed',
    c.fail
      ? { content: [{ type: 'text', text: 'asked to fail' }], isError: true }
      : {
          content: [{ type: 'text', text: `done after ${steps} steps` }],
          ...(receipt ? { structuredContent: { receipt } } : {}),
        },
  );
}

function build(): McpServer {
  const server = new McpServer(
    { name: 'sdk mcp contract server', version: '1.0.0' },
    {
      capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore,
      taskMessageQueue: new InMemoryTaskMessageQueue(),
    },
  );
  server.experimental.tasks.registerToolTask(
    'demo_task',
    {
      inputSchema: {
        durationMs: z.number().optional(),
        steps: z.number().optional(),
        askInput: z.string().optional(),
        fail: z.boolean().optional(),
        artifactChunks: z.number().optional(),
        sideEffectMs: z.number().optional(),
        label: z.string().optional(),
      },
      execution: { taskSupport: 'required' },
    },
    {
      createTask: async (args, extra) => {
        // Straight on the store, with no session: every session may read the task (the conformance
        // run reads it on a session of its own, around its proxy).
        const task = await taskStore.createTask({ ttl: 600_000, pollInterval: 200 }, extra.requestId, {
          method: 'tools/call',
          params: { name: 'demo_task', arguments: args },
        });
        void work(task.taskId, args).catch(() => {});
        return { task };
      },
      getTask: async (_args, extra) => (await taskStore.getTask(extra.taskId))!,
      getTaskResult: async (_args, extra) => (await taskStore.getTaskResult(extra.taskId)) as { content: [] },
    },
  );
  return server;
}

const http = createServer(mcpSessions(build).handle);
const portArg = process.argv.indexOf('--port');
http.listen(portArg > 0 ? Number(process.argv[portArg + 1]) : 0, '127.0.0.1', () => {
  console.log(`sdk mcp server ready http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`);
});
