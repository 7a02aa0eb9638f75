import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../../src/host/agent-api.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { sdkClient, type Binding } from './helpers.ts';
import { call, startTestHost, type Wire } from './in-process.ts';

/**
 * GetExtendedAgentCard (A2A 1.0 §3.3.4): declared in the public card when the agent has one, served to
 * authenticated callers on every binding, refused without a credential.
 */
const hosts: RunningHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

const digest = (key: string) => createHash('sha256').update(key).digest('hex');
const keys = new Map([[digest('alice-key-0123456789'), 'alice']]);
const KEY = 'alice-key-0123456789';

const publicSkill = { id: 'summarize', name: 'Summarize', description: 'summaries', tags: ['text'] };
const agent = defineAgent({
  card: { name: 'Summarizer', description: 'Summarizes text', version: '1.0.0', skills: [publicSkill] },
  extendedCard: (caller) => ({
    description: `Summarizes text; for ${caller.owner}`,
    skills: [
      publicSkill,
      { id: 'translate', name: 'Translate', description: 'for customers only', tags: ['text'] },
    ],
  }),
  async execute() {
    return 'done';
  },
});

async function host(options: Parameters<typeof startTestHost>[1] = {}): Promise<RunningHost> {
  const h = await startTestHost(new MemoryStore(), { agent, auth: 'keys', keys, ...options });
  hosts.push(h);
  return h;
}

describe('extended agent card', () => {
  it('a 0.3 client (no A2A-Version) gets it from agent/getAuthenticatedExtendedCard, with the 0.3 fields', async () => {
    const h = await host();
    const res = await fetch(h.jsonRpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'agent/getAuthenticatedExtendedCard' }),
    });
    const card = ((await res.json()) as Wire).result;
    expect(card.description).toBe('Summarizes text; for alice');
    expect(card.protocolVersion).toBe('0.3.0');
    expect(card.url).toBe(h.jsonRpcUrl);
    expect(card.supportsAuthenticatedExtendedCard).toBe(true);
  });

  it('the public card declares it and keeps the public skills only', async () => {
    const h = await host();
    const card = (await (await fetch(h.cardUrl)).json()) as Wire;
    expect(card.capabilities.extendedAgentCard).toBe(true);
    expect(card.skills.map((s: Wire) => s.id)).toEqual(['summarize']);
  });

  it.each<Binding>(['JSONRPC', 'HTTP+JSON', 'GRPC'])(
    'the official SDK client with a key gets the extended card over %s',
    async (binding) => {
      const h = await host(binding === 'GRPC' ? { grpcPort: 0 } : {});
      const client = await sdkClient(h.url, binding, false, KEY);
      const card = await client.getAgentCard();
      expect(card.skills.map((s) => s.id)).toEqual(['summarize', 'translate']);
      expect(card.description).toBe('Summarizes text; for alice');
      expect(card.name).toBe('Summarizer');
      expect(card.capabilities?.extendedAgentCard).toBe(true);
      // The same interfaces as the public card: gRPC too when it is on, then both HTTP bindings at 0.3.
      expect(card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion}`)).toEqual([
        'JSONRPC 1.0',
        'HTTP+JSON 1.0',
        ...(binding === 'GRPC' ? ['GRPC 1.0'] : []),
        'JSONRPC 0.3',
        'HTTP+JSON 0.3',
      ]);
    },
  );

  it('without a credential both bindings answer 401, never the extended card', async () => {
    const h = await host();
    const rpc = await call(h.url, 'GetExtendedAgentCard', {});
    expect(rpc.status).toBe(401);
    expect(JSON.stringify(rpc.body)).not.toContain('translate');
    const rest = await fetch(`${h.restUrl}/extendedAgentCard`, { headers: { 'A2A-Version': '1.0' } });
    expect(rest.status).toBe(401);
    expect(await rest.text()).not.toContain('translate');
    const authed = await fetch(`${h.restUrl}/extendedAgentCard`, {
      headers: { 'A2A-Version': '1.0', authorization: `Bearer ${KEY}` },
    });
    expect(authed.status).toBe(200);
    expect(((await authed.json()) as Wire).skills).toHaveLength(2);
  });

  it('an agent without one declares false and GetExtendedAgentCard is UnsupportedOperationError', async () => {
    const plain = defineAgent({
      card: { name: 'plain', description: 'no extended card', version: '1' },
      async execute() {
        return 'done';
      },
    });
    const h = await startTestHost(new MemoryStore(), { agent: plain });
    hosts.push(h);
    const card = (await (await fetch(h.cardUrl)).json()) as Wire;
    expect(card.capabilities.extendedAgentCard).toBe(false);
    const rpc = await call(h.url, 'GetExtendedAgentCard', {});
    expect(rpc.body.error!.code).toBe(-32004);
  });
});
