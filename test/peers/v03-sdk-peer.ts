import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { AgentCard, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
  type AgentExecutor,
} from '@a2a-js/sdk/server';
import { jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { createLegacyAwarePushNotificationSender } from '@a2a-js/sdk/compat/v0_3/server';

/**
 * An A2A 0.3 agent on the official `@a2a-js/sdk` server: its JSON-RPC (`/a2a`) and HTTP+JSON (`/rest`,
 * routes under `/v1`) handlers with the 0.3 compatibility layer on (`legacyCompat`), so every 0.3 call
 * (`message/send`, `tasks/resubscribe`, `POST /v1/message:send`…) is decoded, answered and encoded by
 * the SDK's own 0.3 code, and
 * 0.3-registered webhooks get 0.3 push bodies (its legacy-aware push sender). The card is the 0.3 card
 * such an agent publishes (`url`, `preferredTransport`, `protocolVersion: "0.3.0"`, no
 * `supportedInterfaces`), served whatever `A2A-Version` the reader sends, as a 0.3-only agent does.
 *
 * The executor works (`working`), publishes an artifact, then completes; a message whose text is
 * `ask` stops at `input-required` until a follow-up message on the task; `hold` works until
 * `finish()` or a cancel.
 */
export interface V03Peer {
  readonly base: string;
  readonly url: string;
  /** The 0.3 card as served (tests may change it before the connector reads it). */
  card: Record<string, unknown>;
  finish(): void;
  close(): Promise<void>;
}

/** The binding the 0.3 card names as its `url` (`preferredTransport`); both are served. */
export async function startV03Peer(binding: 'JSONRPC' | 'HTTP+JSON' = 'JSONRPC'): Promise<V03Peer> {
  const app = express();
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const url = binding === 'JSONRPC' ? `${base}/a2a` : `${base}/rest`;
  const held = new Set<() => void>();
  const cancelled = new Set<string>();
  const at = () => new Date().toISOString();

  const executor: AgentExecutor = {
    async execute(ctx, bus) {
      const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
      const part = ctx.userMessage.parts[0]?.content;
      const text = part?.$case === 'text' ? part.value : '';
      if (!ctx.task) {
        bus.publish(
          AgentEvent.task(
            Task.fromJSON({
              id: ctx.taskId,
              contextId: ctx.contextId,
              status: { state: 'TASK_STATE_SUBMITTED', timestamp: at() },
            }),
          ),
        );
      }
      bus.publish(
        AgentEvent.statusUpdate(
          TaskStatusUpdateEvent.fromJSON({
            ...ids,
            status: { state: 'TASK_STATE_WORKING', timestamp: at() },
          }),
        ),
      );
      if (text === 'ask') {
        bus.publish(
          AgentEvent.statusUpdate(
            TaskStatusUpdateEvent.fromJSON({
              ...ids,
              status: {
                state: 'TASK_STATE_INPUT_REQUIRED',
                timestamp: at(),
                message: {
                  messageId: `q-${ctx.taskId}`,
                  role: 'ROLE_AGENT',
                  parts: [{ text: 'Which edition?' }],
                },
              },
            }),
          ),
        );
        bus.finished();
        return;
      }
      if (text === 'hold') {
        await new Promise<void>((resolve) => held.add(resolve));
        if (cancelled.has(ctx.taskId)) return;
      }
      await new Promise((r) => setTimeout(r, 20));
      bus.publish(
        AgentEvent.artifactUpdate(
          TaskArtifactUpdateEvent.fromJSON({
            ...ids,
            artifact: { artifactId: 'out', parts: [{ data: { answer: 42, said: text } }] },
            lastChunk: true,
          }),
        ),
      );
      bus.publish(
        AgentEvent.statusUpdate(
          TaskStatusUpdateEvent.fromJSON({
            ...ids,
            status: { state: 'TASK_STATE_COMPLETED', timestamp: at() },
          }),
        ),
      );
      bus.finished();
    },
    async cancelTask(taskId, bus) {
      cancelled.add(taskId);
      bus.publish(
        AgentEvent.statusUpdate(
          TaskStatusUpdateEvent.fromJSON({
            taskId,
            contextId: '',
            status: { state: 'TASK_STATE_CANCELED', timestamp: at() },
          }),
        ),
      );
      bus.finished();
      for (const release of held) release();
      held.clear();
    },
  };

  const sdkCard = AgentCard.fromJSON({
    name: 'v0.3 peer',
    description: 'an A2A 0.3 agent on the official SDK',
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: true },
    supportedInterfaces: [
      { url: `${base}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      { url: `${base}/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '0.3' },
    ],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['application/json'],
    skills: [{ id: 's', name: 's', description: 's', tags: ['t'] }],
  });
  const store = new InMemoryTaskStore();
  const pushStore = new InMemoryPushNotificationStore();
  const handler = new DefaultRequestHandler(
    sdkCard,
    store,
    executor,
    undefined,
    pushStore,
    createLegacyAwarePushNotificationSender(pushStore),
  );
  const peer: V03Peer = {
    base,
    url,
    card: {
      name: 'v0.3 peer',
      description: 'an A2A 0.3 agent on the official SDK',
      version: '1.0.0',
      protocolVersion: '0.3.0',
      url,
      preferredTransport: binding,
      capabilities: { streaming: true, pushNotifications: true },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['application/json'],
      skills: [{ id: 's', name: 's', description: 's', tags: ['t'] }],
    },
    finish() {
      for (const release of held) release();
      held.clear();
    },
    async close() {
      peer.finish();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  app.get('/.well-known/agent-card.json', (_req, res) => {
    res.json(peer.card);
  });
  app.use(
    '/rest',
    restHandler({
      requestHandler: handler,
      userBuilder: UserBuilder.noAuthentication,
      legacyCompat: { enabled: true },
    }),
  );
  app.use(
    '/a2a',
    jsonRpcHandler({
      requestHandler: handler,
      userBuilder: UserBuilder.noAuthentication,
      legacyCompat: { enabled: true },
    }),
  );
  return peer;
}
