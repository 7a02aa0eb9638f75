/**
 * The comparison server for `npm run bench:host`: the official @a2a-js/sdk 1.3.0 (express,
 * InMemoryTaskStore, spec/a2a-1.0.md §2.6 wiring) with the same trivial agent as ours. A message with a
 * data part `{"fanout": N}` publishes the task, waits for POST /bench/go (subscribers attach
 * meanwhile), then N WORKING status updates and COMPLETED; anything else completes at once.
 * Prints `sdk server ready <url>`.
 */
import express from 'express';
import { AgentCard, Task, TaskStatusUpdateEvent, A2A_PROTOCOL_VERSION, AGENT_CARD_PATH } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';

let release: (() => void) | undefined;
let gate = new Promise<void>((r) => (release = r));

const now = () => new Date().toISOString();
const status = (ctx: RequestContext, state: string, text?: string) =>
  TaskStatusUpdateEvent.fromJSON({
    taskId: ctx.taskId,
    contextId: ctx.contextId,
    status: {
      state,
      timestamp: now(),
      ...(text
        ? { message: { messageId: `${ctx.taskId}-${text}`, role: 'ROLE_AGENT', parts: [{ text }] } }
        : {}),
    },
  });

const executor: AgentExecutor = {
  async execute(ctx: RequestContext, bus: ExecutionEventBus) {
    const part = ctx.userMessage.parts[0]?.content;
    const fanout = part?.$case === 'data' ? Number((part.value as Record<string, unknown>)?.fanout ?? 0) : 0;
    bus.publish(
      AgentEvent.task(
        Task.fromJSON({
          id: ctx.taskId,
          contextId: ctx.contextId,
          status: { state: 'TASK_STATE_WORKING', timestamp: now() },
          history: [],
        }),
      ),
    );
    if (fanout > 0) {
      await gate;
      for (let i = 1; i <= fanout; i++)
        bus.publish(AgentEvent.statusUpdate(status(ctx, 'TASK_STATE_WORKING', `s${i}`)));
    }
    bus.publish(AgentEvent.statusUpdate(status(ctx, 'TASK_STATE_COMPLETED', 'ok')));
    bus.finished();
  },
  async cancelTask() {},
};

const app = express();
const server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const BASE = `http://127.0.0.1:${port}`;
  const card = AgentCard.fromJSON({
    name: 'bench',
    description: 'bench agent',
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false },
    supportedInterfaces: [
      { url: `${BASE}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: A2A_PROTOCOL_VERSION },
      { url: `${BASE}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: A2A_PROTOCOL_VERSION },
    ],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
  });
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.post('/bench/go', (_req, res) => {
    release?.();
    gate = new Promise<void>((r) => (release = r));
    res.status(204).end();
  });
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use(
    '/a2a/jsonrpc',
    jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }),
  );
  app.use('/a2a/rest', restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  console.log(`sdk server ready ${BASE}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
