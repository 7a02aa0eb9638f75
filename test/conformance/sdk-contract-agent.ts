/**
 * A plain @a2a-js/sdk agent (express, InMemoryTaskStore: its tasks live in process memory) that
 * implements the conformance test contract with the executor docs/conformance.md shows. The comparison
 * target of test/conformance/conformance-discriminates-sdk-a2a.test.ts: it passes the rows a memory
 * store can pass and must fail the restart rows. `--port P` (0 = any); prints `sdk agent ready <url>`.
 */
import express from 'express';
import { AgentCard, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';

// --- the executor (docs/conformance.md, "An @a2a-js/sdk agent") ---------------------------------
type Contract = {
  durationMs?: number;
  askInput?: string;
  fail?: boolean;
  artifactChunks?: number;
  sideEffectMs?: number;
};
type Ids = { taskId: string; contextId: string };
const contracts = new Map<string, Contract>();
const cancelled = new Set<string>();
const now = () => new Date().toISOString();
const status = (bus: ExecutionEventBus, ids: Ids, state: string, text?: string) =>
  bus.publish(
    AgentEvent.statusUpdate(
      TaskStatusUpdateEvent.fromJSON({
        ...ids,
        status: {
          state,
          timestamp: now(),
          ...(text && { message: { messageId: crypto.randomUUID(), role: 'ROLE_AGENT', parts: [{ text }] } }),
        },
      }),
    ),
  );

const executor: AgentExecutor = {
  async execute(ctx: RequestContext, bus: ExecutionEventBus) {
    const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
    const answering = ctx.task !== undefined; // a follow-up message answers our input request
    const part = ctx.userMessage.parts[0]?.content;
    if (!answering) contracts.set(ctx.taskId, part?.$case === 'data' ? (part.value as Contract) : {});
    const c = contracts.get(ctx.taskId) ?? {};
    const working = {
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: { state: 'TASK_STATE_WORKING', timestamp: now() },
    };
    if (answering) status(bus, ids, 'TASK_STATE_WORKING', 'answer received');
    else bus.publish(AgentEvent.task(Task.fromJSON(working)));
    const workMs = (c.durationMs ?? 1000) / (c.askInput ? 2 : 1); // half before the question, half after
    for (let t = 0; t < workMs; t += 100) {
      if (cancelled.has(ctx.taskId)) return bus.finished();
      await new Promise((r) => setTimeout(r, Math.min(100, workMs - t)));
    }
    if (c.askInput && !answering)
      return (status(bus, ids, 'TASK_STATE_INPUT_REQUIRED', c.askInput), bus.finished());
    if (c.sideEffectMs) {
      // Once begun, the effect runs to its end whatever a cancel says; its receipt is an artifact.
      status(bus, ids, 'TASK_STATE_WORKING', 'side effect started');
      await new Promise((r) => setTimeout(r, c.sideEffectMs));
      const receipt = { artifactId: 'receipt', parts: [{ data: { doneAt: now() } }] };
      bus.publish(
        AgentEvent.artifactUpdate(
          TaskArtifactUpdateEvent.fromJSON({ ...ids, lastChunk: true, artifact: receipt }),
        ),
      );
      if (cancelled.has(ctx.taskId)) return bus.finished();
    }
    const chunks = c.artifactChunks ?? 1;
    for (let i = 1; i <= chunks; i++) {
      const artifact = { artifactId: 'result', parts: [{ text: `chunk ${i}` }] };
      bus.publish(
        AgentEvent.artifactUpdate(
          TaskArtifactUpdateEvent.fromJSON({ ...ids, append: i > 1, lastChunk: i === chunks, artifact }),
        ),
      );
    }
    status(bus, ids, c.fail ? 'TASK_STATE_FAILED' : 'TASK_STATE_COMPLETED');
    bus.finished();
  },
  async cancelTask(taskId: string, bus: ExecutionEventBus) {
    cancelled.add(taskId);
    status(bus, { taskId, contextId: '' }, 'TASK_STATE_CANCELED');
    bus.finished();
  },
};
// -------------------------------------------------------------------------------------------------

const portArg = process.argv.indexOf('--port');
const port = portArg > 0 ? Number(process.argv[portArg + 1]) : 0;
const app = express();
const server = app.listen(port, '127.0.0.1', () => {
  const address = server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : port}`;
  const card = AgentCard.fromJSON({
    name: 'sdk contract agent',
    description: 'The conformance test contract on the official SDK with its in-memory store',
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false },
    supportedInterfaces: [{ url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'contract', name: 'contract', description: 'test contract', tags: ['test'] }],
  });
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use(
    '/.well-known/agent-card.json',
    agentCardHandler({ agentCardProvider: () => Promise.resolve(card) }),
  );
  app.use(
    '/a2a/jsonrpc',
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }),
  );
  app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  console.log(`sdk agent ready ${base}`);
});
