import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import { AgentCard, Task, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { A2AService, grpcService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';

/** The official @a2a-js/sdk server on all three A2A 1.0 bindings, as an independent peer for tests. */
export interface SdkA2APeer {
  /** Where its agent card is served (the connector's baseUrl). */
  base: string;
  close(): Promise<void>;
}

/**
 * Starts the SDK's own server (express for JSON-RPC and HTTP+JSON, its gRPC service on another port)
 * around `executor`, with a card listing the three interfaces. `before` runs ahead of its routes (a test
 * that records which connections its requests came on).
 */
export async function startSdkA2APeer(options: {
  name: string;
  executor: AgentExecutor;
  before?: RequestHandler;
}): Promise<SdkA2APeer> {
  const app = express();
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const grpcServer = new grpc.Server();
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  const card = AgentCard.fromJSON({
    name: options.name,
    description: 'official SDK server',
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false },
    supportedInterfaces: [
      { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
      { url: `127.0.0.1:${grpcPort}`, protocolBinding: 'GRPC', protocolVersion: '1.0' },
    ],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['application/json'],
    skills: [{ id: 's', name: 's', description: 's', tags: ['t'] }],
  });
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), options.executor);
  const users = { userBuilder: UserBuilder.noAuthentication };
  if (options.before) app.use(options.before);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, ...users }));
  app.use('/a2a/rest', restHandler({ requestHandler: handler, ...users }));
  grpcServer.addService(A2AService, grpcService({ requestHandler: handler, ...users }));
  return {
    base,
    async close() {
      grpcServer.forceShutdown();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** An executor's first event, the task as SUBMITTED, stamped now. */
export function publishSubmitted(ctx: RequestContext, bus: ExecutionEventBus): void {
  bus.publish(
    AgentEvent.task(
      Task.fromJSON({
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: { state: 'TASK_STATE_SUBMITTED', timestamp: new Date().toISOString() },
      }),
    ),
  );
}

/** A status update of the executor's task, stamped now. */
export function publishStatus(ctx: RequestContext, bus: ExecutionEventBus, state: string): void {
  bus.publish(
    AgentEvent.statusUpdate(
      TaskStatusUpdateEvent.fromJSON({
        taskId: ctx.taskId,
        contextId: ctx.contextId,
        status: { state, timestamp: new Date().toISOString() },
      }),
    ),
  );
}
