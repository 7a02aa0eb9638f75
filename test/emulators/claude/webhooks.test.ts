import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { VirtualClock } from '../../../src/core/clock.ts';
import { signingKey, verifySignature } from '../../../src/protocols/standard-webhooks.ts';
import { startClaudeEmulator, type ClaudeEmulator } from './server.ts';
import { agentAndEnvironment, clientFor, text } from './sdk-support.ts';

const SECRET = 'whsec_' + Buffer.from('0123456789abcdef0123456789abcdef').toString('base64');

interface Received {
  headers: Record<string, string>;
  body: string;
}

let emu: ClaudeEmulator;
let receiver: Server;
let received: Received[];
let clock: VirtualClock;

beforeEach(async () => {
  received = [];
  let answered = 0;
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        headers: req.headers as Record<string, string>,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      // The very first attempt fails, so one delivery is retried.
      res.writeHead(answered++ === 0 ? 500 : 204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const port = (receiver.address() as AddressInfo).port;
  // Signatures are checked against the official SDK's wall-clock tolerance, so virtual time starts at now.
  clock = new VirtualClock(Date.now());
  emu = await startClaudeEmulator({
    clock,
    webhook: { url: `http://127.0.0.1:${port}/hook`, secret: SECRET, duplicates: 1, retryDelaysMs: [1000] },
  });
});
afterEach(async () => {
  await emu.close();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

describe('Claude emulator: Standard Webhooks deliveries', () => {
  it('sends thin signed payloads, retries a failed attempt under the same webhook-id, and sends duplicates', async () => {
    const client = clientFor(emu);
    const { agentId, environmentId } = await agentAndEnvironment(client);
    const s = await client.beta.sessions.create({
      agent: agentId,
      environment_id: environmentId,
      initial_events: [text('hello')],
    });

    // run_started fails once and is retried, then it and idled are each delivered twice.
    await vi.waitFor(
      async () => {
        await clock.advance(1000);
        expect(received.length).toBe(5);
      },
      { timeout: 10_000, interval: 20 },
    );
    await emu.control.webhooksSettled();

    const sdk = new Anthropic({ apiKey: 'unused', baseURL: emu.url, webhookKey: SECRET });
    const key = signingKey(SECRET, 'secret');
    const byId = new Map<string, Received[]>();
    for (const r of received) {
      expect(verifySignature(key, r.headers, r.body, clock.now())).toBeNull();
      const event = sdk.beta.webhooks.unwrap(r.body, { headers: r.headers });
      expect(event).toMatchObject({ type: 'event', data: { id: s.id } });
      expect(Object.keys(event.data).sort()).toEqual(['id', 'organization_id', 'type', 'workspace_id']);
      byId.set(r.headers['webhook-id']!, [...(byId.get(r.headers['webhook-id']!) ?? []), r]);
    }
    const types = [...byId.values()].map((copies) => JSON.parse(copies[0]!.body).data.type as string);
    expect(types.sort()).toEqual(['session.status_idled', 'session.status_run_started']);
    expect([...byId.values()].map((c) => c.length).sort()).toEqual([2, 3]);
    expect(emu.control.deliveries.filter((d) => d.status === 500)).toHaveLength(1);

    const tampered = { ...received[1]!.headers, 'webhook-signature': 'v1,AAAA' };
    expect(() => sdk.beta.webhooks.unwrap(received[1]!.body, { headers: tampered })).toThrow();
  });
});
