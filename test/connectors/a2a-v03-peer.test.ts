import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import type { RemoteSnapshot } from '../../src/connectors/connector.ts';
import { startV03Peer, type V03Peer } from '../peers/v03-sdk-peer.ts';

/**
 * The connector against an A2A 0.3 agent built on the official `@a2a-js/sdk` server's 0.3
 * compatibility layer (test/peers/v03-sdk-peer.ts): it reads the 0.3 card, talks 0.3 JSON-RPC
 * (`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`,
 * `tasks/pushNotificationConfig/set`) or 0.3 HTTP+JSON (the same under `/v1`, in the 0.3 ProtoJSON)
 * and maps every answer to the same snapshots as for 1.0.
 */
const never = new AbortController().signal;
let seq = 0;
const mid = () => `m03-${process.pid}-${++seq}`;

interface Received {
  headers: http.IncomingHttpHeaders;
  raw: string;
}
const received: Received[] = [];
let receiver: http.Server;
let receiverUrl = '';

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, raw: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});

afterAll(async () => {
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
});

describe.each(['JSONRPC', 'HTTP+JSON'] as const)(
  'connector → A2A 0.3 agent on the SDK over %s',
  (binding) => {
    let peer: V03Peer;
    beforeAll(async () => {
      peer = await startV03Peer(binding);
    });
    afterAll(async () => {
      await peer?.close();
    });

    it('detects 0.3 from the card: the binding at the card url, no ListTasks', async () => {
      const c = await A2AConnector.connect({ target: 'old', baseUrl: peer.base });
      expect(c.revision).toBe(`${binding} ${peer.url} A2A/0.3`);
      expect(c.capabilities.list).toBe(false);
      expect(c.capabilities.stream).toBe(true);
      expect(c.capabilities.push).toBe(true);
    });

    it('message/send (blocking false), tasks/resubscribe to the end, tasks/get with the artifact', async () => {
      const c = await A2AConnector.connect({ target: 'old', baseUrl: peer.base });
      const s = await c.start({ envelopeId: 'e1', messageId: mid(), contextId: null, input: 'hold' }, never);
      expect(s.remoteId).toBeTruthy();
      expect(['accepted', 'running']).toContain(s.state);
      const seen: RemoteSnapshot[] = [];
      for await (const snap of c.observe(s.remoteId, null, never)) {
        // The first frame of tasks/resubscribe is the current Task; then the agent goes on.
        if (seen.length === 0) peer.finish();
        seen.push(snap);
      }
      expect(seen[0]?.state).toBe('running');
      expect(seen.at(-1)?.state).toBe('succeeded');
      expect(seen.at(-1)?.artifacts?.[0]?.content).toEqual({ answer: 42, said: 'hold' });
      const got = await c.get(s.remoteId, never);
      expect(got.nativeState).toBe('TASK_STATE_COMPLETED');
      expect(got.artifacts?.[0]?.content).toEqual({ answer: 42, said: 'hold' });
    });

    it('message/stream: the Task, then 0.3 status and artifact events, to succeeded', async () => {
      const c = await A2AConnector.connect({ target: 'old', baseUrl: peer.base });
      const snaps: RemoteSnapshot[] = [];
      for await (const snap of c.startStream(
        { envelopeId: 'e2', messageId: mid(), contextId: null, input: 'stream me' },
        never,
      ))
        snaps.push(snap);
      expect(snaps.at(-1)?.state).toBe('succeeded');
      expect(snaps.at(-1)?.artifacts?.[0]?.content).toEqual({ answer: 42, said: 'stream me' });
    });

    it('input-required with its prompt, answered by a follow-up message on the task', async () => {
      const c = await A2AConnector.connect({ target: 'old', baseUrl: peer.base });
      const s = await c.start({ envelopeId: 'e3', messageId: mid(), contextId: null, input: 'ask' }, never);
      let waiting = await c.get(s.remoteId, never);
      for (let i = 0; i < 50 && waiting.state !== 'waiting_for_input'; i++) {
        await new Promise((r) => setTimeout(r, 20));
        waiting = await c.get(s.remoteId, never);
      }
      expect(waiting.state).toBe('waiting_for_input');
      expect(waiting.inputRequest?.prompt).toBe('Which edition?');
      await c.answer(s.remoteId, { messageId: mid(), requestId: 'q', value: 'second' }, never);
      let done = await c.get(s.remoteId, never);
      for (let i = 0; i < 50 && done.state !== 'succeeded'; i++) {
        await new Promise((r) => setTimeout(r, 20));
        done = await c.get(s.remoteId, never);
      }
      expect(done.state).toBe('succeeded');
    });

    it('tasks/cancel: cancelled from the agent word', async () => {
      const c = await A2AConnector.connect({ target: 'old', baseUrl: peer.base });
      const s = await c.start({ envelopeId: 'e4', messageId: mid(), contextId: null, input: 'hold' }, never);
      const cancelled = await c.cancel(s.remoteId, never);
      expect(cancelled.state).toBe('cancelled');
      expect(cancelled.nativeState).toBe('TASK_STATE_CANCELED');
    });

    it('an unknown task is not_found', async () => {
      const c = await A2AConnector.connect({ target: 'old', baseUrl: peer.base });
      await expect(c.get('missing-task', never)).rejects.toMatchObject({ code: 'not_found' });
    });

    it('push: config registered in the 0.3 shape; the 0.3 push body (bare Task, kind) is parsed', async () => {
      const c = await A2AConnector.connect({ target: 'old', baseUrl: peer.base });
      const push = { url: receiverUrl, token: 'secret-push-token', notificationToken: 'nt-1' };
      const s = await c.start(
        { envelopeId: 'e5', messageId: mid(), contextId: null, input: 'hold', push },
        never,
      );
      const reg = await c.registerPush(s.remoteId, push, never);
      expect(reg.configId).toBeTruthy();
      peer.finish();
      const deadline = Date.now() + 10_000;
      const mine = () => received.filter((r) => r.raw.includes(s.remoteId) && r.raw.includes('"completed"'));
      while (mine().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const delivery = mine()[0]!;
      const body = JSON.parse(delivery.raw) as { kind?: string };
      expect(body.kind).toBeDefined();
      const headers = Object.fromEntries(Object.entries(delivery.headers).map(([k, v]) => [k, String(v)]));
      const signal = await c.parseWebhook({ headers, rawBody: delivery.raw });
      expect(signal.remoteId).toBe(s.remoteId);
      expect(signal.token).toBe('secret-push-token');
    });
  },
);
