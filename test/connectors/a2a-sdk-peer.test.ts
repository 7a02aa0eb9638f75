import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor } from '@a2a-js/sdk/server';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import { connectionsInUse } from '../support/http-pool.ts';
import {
  publishStatus,
  publishSubmitted,
  startSdkA2APeer,
  type SdkA2APeer,
} from '../support/sdk-a2a-peer.ts';
import type { RemoteSnapshot } from '../../src/connectors/connector.ts';

/**
 * Interop: the connector against the official @a2a-js/sdk 1.3 server, an independent implementation
 * of A2A 1.0, on all three bindings (gRPC through the SDK's own gRPC server). The peer's executor works in two beats then completes with an artifact.
 */
let peer: SdkA2APeer;
let base = '';
/** The connections event-stream requests arrived on. */
const streamSockets = new Set<object>();

const executor: AgentExecutor = {
  async execute(ctx, bus) {
    const ids = { taskId: ctx.taskId, contextId: ctx.contextId };
    publishSubmitted(ctx, bus);
    await new Promise((r) => setTimeout(r, 30));
    publishStatus(ctx, bus, 'TASK_STATE_WORKING');
    await new Promise((r) => setTimeout(r, 30));
    bus.publish(
      AgentEvent.artifactUpdate(
        TaskArtifactUpdateEvent.fromJSON({
          ...ids,
          artifact: { artifactId: 'out', parts: [{ data: { answer: 42 } }] },
          lastChunk: true,
        }),
      ),
    );
    publishStatus(ctx, bus, 'TASK_STATE_COMPLETED');
    bus.finished();
  },
  async cancelTask(taskId, bus) {
    bus.publish(
      AgentEvent.statusUpdate(
        TaskStatusUpdateEvent.fromJSON({
          taskId,
          contextId: '',
          status: { state: 'TASK_STATE_CANCELED', timestamp: new Date().toISOString() },
        }),
      ),
    );
    bus.finished();
  },
};

beforeAll(async () => {
  peer = await startSdkA2APeer({
    name: 'sdk peer',
    executor,
    before: (req, _res, next) => {
      if (req.headers.accept?.includes('text/event-stream')) streamSockets.add(req.socket);
      next();
    },
  });
  base = peer.base;
});

afterAll(async () => {
  await peer?.close();
});

const never = new AbortController().signal;

for (const binding of ['JSONRPC', 'HTTP+JSON', 'GRPC'] as const) {
  describe(`official SDK peer over ${binding}`, () => {
    it('start, get until done, list, and not_found', async () => {
      const c = await A2AConnector.connect({ target: 'peer', baseUrl: base, preferBinding: binding });
      expect(c.transport.binding).toBe(binding);
      const s = await c.start(
        { envelopeId: 'e', messageId: `m-${binding}`, contextId: null, input: 'go' },
        never,
      );
      expect(s.remoteId).toBeTruthy();
      // Subscribe; the SDK closes the stream at the terminal state. Fall back to get (it may already be done).
      let last: RemoteSnapshot = s;
      try {
        for await (const snap of c.observe(s.remoteId, null, never)) last = snap;
      } catch (err) {
        expect((err as { code?: string }).code).toBe('failed_precondition');
      }
      if (last.state !== 'succeeded') last = await c.get(s.remoteId, never);
      expect(last.state).toBe('succeeded');
      const got = await c.get(s.remoteId, never);
      expect(got.artifacts?.[0]?.content).toEqual({ answer: 42 });
      const page = await c.listChanged({ since: Date.now() - 60_000 }, never);
      expect(page.items.map((i) => i.remoteId)).toContain(s.remoteId);
      // One conversation alone, by its contextId (start recovery's lookup): the SDK filters as our host does.
      const contextId = `ctx-${binding}-${Date.now()}`;
      const mine = await c.start(
        { envelopeId: 'e2', messageId: `m2-${binding}`, contextId, input: 'go' },
        never,
      );
      const conversation = await c.listChanged({ since: Date.now() - 60_000, contextId }, never);
      expect(conversation.items.map((i) => i.remoteId)).toEqual([mine.remoteId]);
      await expect(c.get('missing', never)).rejects.toMatchObject({ code: 'not_found' });
    });

    if (binding !== 'GRPC')
      it('streaming starts read to the terminal event, as the plane reads them, reuse one connection', async () => {
        const c = await A2AConnector.connect({ target: 'peer', baseUrl: base, preferBinding: binding });
        streamSockets.clear();
        for (let i = 0; i < 3; i++) {
          const states: string[] = [];
          for await (const snap of c.startStream!(
            {
              envelopeId: `e${i}`,
              messageId: `ms-${binding}-${i}-${Date.now()}`,
              contextId: null,
              input: 'go',
            },
            never,
          )) {
            states.push(snap.state);
            // The plane stops reading at the terminal state, before the server's end arrives.
            if (snap.state === 'succeeded') break;
          }
          expect(states.at(-1)).toBe('succeeded');
          // The SDK ends the stream right after the terminal event; its end puts the connection back.
          await vi.waitFor(() => expect(connectionsInUse(base)).toBe(0));
        }
        expect(streamSockets.size).toBe(1);
      });
  });
}
