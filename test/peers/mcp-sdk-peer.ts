import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { ElicitResultSchema, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { mcpSessions } from './mcp-sessions.ts';

/**
 * A fault-injecting MCP server built on the official `@modelcontextprotocol/sdk` 1.x (2025-11-25, its
 * experimental tasks), not on our code, as test/peers/sdk-peer.ts is for A2A. The SDK's own
 * StreamableHTTPServerTransport (stateful sessions), McpServer, `registerToolTask`, InMemoryTaskStore
 * and InMemoryTaskMessageQueue answer every MCP request; the peer only supplies the tools' work:
 *
 * - `work` `{label}`: a task that works until `finish()` (or `autoFinishMs`);
 * - `ask` `{question}`: a task that asks for input with `elicitation/create` (queued by the SDK and
 *   delivered on `tasks/result`), then completes with the answer;
 * - `fail_tool` `{}`: a task whose tool result is `isError: true`;
 * - `greet` `{name}`: a plain tool (no task), answered at once.
 *
 * Faults: `delayMs` holds every POST that long; `dropNext()` destroys the next POST's connection
 * after the SDK handled it (its answer is lost).
 */
export interface McpSdkPeer {
  url: string;
  /** Task ids created, in order. */
  readonly created: string[];
  /** Completes every working `work` task (or one). */
  finish(taskId?: string): void;
  delayMs: number;
  dropNext(): void;
  /** Answers cut off by dropNext(). */
  readonly dropped: number;
  close(): Promise<void>;
}

export async function startMcpSdkPeer(
  options: { autoFinishMs?: number; pollIntervalMs?: number } = {},
): Promise<McpSdkPeer> {
  const taskStore = new InMemoryTaskStore();
  const created: string[] = [];
  const working = new Map<string, (text: string) => Promise<void>>();
  const poll = options.pollIntervalMs ?? 50;
  let drop = false;

  const build = () => {
    const server = new McpServer(
      { name: 'sdk-peer', version: '1.0.0' },
      {
        capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
        taskStore,
        taskMessageQueue: new InMemoryTaskMessageQueue(),
      },
    );
    server.registerTool('greet', { inputSchema: { name: z.string() } }, ({ name }) => ({
      content: [{ type: 'text', text: `Hello, ${name}!` }],
    }));
    server.experimental.tasks.registerToolTask(
      'work',
      { inputSchema: { label: z.string().optional() }, execution: { taskSupport: 'required' } },
      {
        createTask: async ({ label }, extra) => {
          const task = await extra.taskStore.createTask({ ttl: 600_000, pollInterval: poll });
          created.push(task.taskId);
          const done = async (text: string) => {
            working.delete(task.taskId);
            const now = await taskStore.getTask(task.taskId);
            if (now && now.status === 'working')
              await extra.taskStore.storeTaskResult(task.taskId, 'completed', {
                content: [{ type: 'text', text: `${label ?? 'work'}: ${text}` }],
              });
          };
          working.set(task.taskId, done);
          if (options.autoFinishMs !== undefined)
            setTimeout(() => void done('auto').catch(() => {}), options.autoFinishMs).unref();
          return { task };
        },
        getTask: async (_args, extra) => (await extra.taskStore.getTask(extra.taskId))!,
        getTaskResult: async (_args, extra) =>
          (await extra.taskStore.getTaskResult(extra.taskId)) as { content: [] },
      },
    );
    server.experimental.tasks.registerToolTask(
      'ask',
      { inputSchema: { question: z.string() }, execution: { taskSupport: 'required' } },
      {
        createTask: async ({ question }, extra) => {
          const task = await extra.taskStore.createTask({ ttl: 600_000, pollInterval: poll });
          created.push(task.taskId);
          void (async () => {
            // What the SDK's request-scoped sendRequest does inside a task: mark it input_required,
            // then queue the request for tasks/result (relatedTask).
            await taskStore.updateTaskStatus(task.taskId, 'input_required');
            const answer = await server.server.request(
              {
                method: 'elicitation/create',
                params: {
                  message: question,
                  requestedSchema: {
                    type: 'object',
                    properties: { reply: { type: 'string' } },
                    required: ['reply'],
                  },
                },
              },
              ElicitResultSchema,
              { relatedTask: { taskId: task.taskId } },
            );
            await taskStore.updateTaskStatus(task.taskId, 'working');
            await taskStore.storeTaskResult(task.taskId, 'completed', {
              content: [
                { type: 'text', text: `answered ${answer.action}: ${JSON.stringify(answer.content ?? {})}` },
              ],
            });
          })().catch(() => {});
          return { task };
        },
        getTask: async (_args, extra) => (await extra.taskStore.getTask(extra.taskId))!,
        getTaskResult: async (_args, extra) =>
          (await extra.taskStore.getTaskResult(extra.taskId)) as { content: [] },
      },
    );
    server.experimental.tasks.registerToolTask(
      'fail_tool',
      { execution: { taskSupport: 'required' } },
      {
        createTask: async (extra) => {
          const task = await extra.taskStore.createTask({ ttl: 600_000, pollInterval: poll });
          created.push(task.taskId);
          setTimeout(() => {
            void extra.taskStore
              .storeTaskResult(task.taskId, 'completed', {
                content: [{ type: 'text', text: 'the tool failed' }],
                isError: true,
              })
              .catch(() => {});
          }, 50).unref();
          return { task };
        },
        getTask: async (extra) => (await extra.taskStore.getTask(extra.taskId))!,
        getTaskResult: async (extra) =>
          (await extra.taskStore.getTaskResult(extra.taskId)) as { content: [] },
      },
    );
    return server;
  };

  const peer = {
    created,
    delayMs: 0,
    dropped: 0,
    finish(taskId?: string) {
      for (const [id, done] of [...working])
        if (!taskId || id === taskId) void done('finished').catch(() => {});
    },
    dropNext() {
      drop = true;
    },
  };

  const sessions = mcpSessions(build, {
    before: async () => {
      if (peer.delayMs > 0) await new Promise((r) => setTimeout(r, peer.delayMs));
    },
    beforeHandle: (req, res, body) => {
      if (drop && req.method === 'POST' && !isInitializeRequest(body)) {
        drop = false;
        // The SDK handles the request in full; its answer never reaches the client.
        const cut = (() => {
          peer.dropped++;
          req.socket.destroy();
          return res;
        }) as never;
        res.write = cut;
        res.end = cut;
      }
    },
  });
  const http: Server = createServer(sessions.handle);
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    ...peer,
    get delayMs() {
      return peer.delayMs;
    },
    set delayMs(v: number) {
      peer.delayMs = v;
    },
    get dropped() {
      return peer.dropped;
    },
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      await sessions.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
