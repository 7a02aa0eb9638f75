import Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../src/core/clock.ts';
import { SeededRandom } from '../../../src/core/random.ts';
import { BETA, startClaudeEmulator, type ClaudeEmulator } from './server.ts';
import { agentAndEnvironment, clientFor, openStream, stopType, text } from './sdk-support.ts';

let emu: ClaudeEmulator;
let client: Anthropic;

beforeEach(async () => {
  emu = await startClaudeEmulator();
  client = clientFor(emu);
});
afterEach(async () => {
  await emu.close();
});

describe('Claude emulator: resources and the error envelope through the official SDK', () => {
  it('accepts both auth headers and sends the beta header the SDK adds', async () => {
    await client.beta.agents.create({ name: 'a', model: 'claude-sonnet-4-6' });
    const viaKey = clientFor(emu, 'x-api-key');
    await viaKey.beta.agents.create({ name: 'b', model: 'claude-sonnet-4-6' });
    const [bearer, key] = emu.control.requests;
    expect(bearer!.headers['authorization']).toBe('Bearer sk-ant-emulator');
    expect(key!.headers['x-api-key']).toBe('sk-ant-emulator');
    expect(key!.headers['authorization']).toBeUndefined();
    expect(String(bearer!.headers['anthropic-beta'])).toContain(BETA);
  });

  it('answers a wrong key with the error envelope as AuthenticationError', async () => {
    const wrong = new Anthropic({ apiKey: 'sk-ant-wrong', baseURL: emu.url, maxRetries: 0 });
    const err = await wrong.beta.agents
      .create({ name: 'a', model: 'claude-sonnet-4-6' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    const apiErr = err as InstanceType<typeof Anthropic.AuthenticationError>;
    expect(apiErr.error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    expect(apiErr.requestID).toMatch(/^req_/);
  });

  it('refuses a request without the managed-agents beta header, naming the header', async () => {
    const res = await fetch(`${emu.url}/v1/agents`, { headers: { 'x-api-key': 'sk-ant-emulator' } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error.message).toContain('anthropic-beta');
  });

  it('creates, reads, updates and lists agents and environments', async () => {
    const agent = await client.beta.agents.create({ name: 'worker', model: 'claude-sonnet-4-6' });
    expect(agent).toMatchObject({ type: 'agent', version: 1 });
    const updated = await client.beta.agents.update(agent.id, { version: agent.version, name: 'worker 2' });
    expect(updated.version).toBe(2);
    expect((await client.beta.agents.retrieve(agent.id)).name).toBe('worker 2');
    const env = await client.beta.environments.create({ name: 'sandbox', config: { type: 'cloud' } });
    expect(env.type).toBe('environment');
    const envs = [];
    for await (const e of client.beta.environments.list()) envs.push(e.id);
    expect(envs).toEqual([env.id]);
    const missing = await client.beta.agents.retrieve('agent_nope').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('creates a session idle without initial events and running with them', async () => {
    const { agentId, environmentId } = await agentAndEnvironment(client);
    const quiet = await client.beta.sessions.create({ agent: agentId, environment_id: environmentId });
    expect(quiet.status).toBe('idle');
    const busy = await client.beta.sessions.create({
      agent: agentId,
      environment_id: environmentId,
      initial_events: [text('hello')],
      metadata: { envelope: 'env-1' },
    });
    expect(busy.status).toBe('running');
    const listed = [];
    for await (const s of client.beta.sessions.list({ agent_id: agentId })) listed.push(s);
    expect(listed.map((s) => s.metadata)).toContainEqual({ envelope: 'env-1' });
  });

  it('names the wrong field when a create is malformed', async () => {
    const { agentId, environmentId } = await agentAndEnvironment(client);
    const err = await client.beta.sessions
      .create({
        agent: agentId,
        environment_id: environmentId,
        budget: { type: 'limit', max_list_cost: { amount: '025', currency: 'USD' } },
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as Error).message).toContain('budget.max_list_cost.amount');
  });

  it('refuses archive and delete while running (400), then archives, refuses sends (409) and deletes', async () => {
    const { agentId, environmentId } = await agentAndEnvironment(client);
    const s = await client.beta.sessions.create({ agent: agentId, environment_id: environmentId });
    const stream = await openStream(client, s.id);
    await client.beta.sessions.events.send(s.id, { events: [text('hold on')] });
    await stream.until((e) => e.type === 'session.status_running');
    expect(await client.beta.sessions.archive(s.id).catch((e: unknown) => e)).toBeInstanceOf(
      Anthropic.BadRequestError,
    );
    expect(await client.beta.sessions.delete(s.id).catch((e: unknown) => e)).toBeInstanceOf(
      Anthropic.BadRequestError,
    );
    emu.control.release(s.id);
    expect(stopType(await stream.idle())).toBe('end_turn');

    const archived = await client.beta.sessions.archive(s.id);
    expect(archived.status).toBe('terminated');
    expect(archived.archived_at).not.toBeNull();
    const conflict = await client.beta.sessions.events
      .send(s.id, { events: [text('more')] })
      .catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(Anthropic.ConflictError);
    expect((conflict as InstanceType<typeof Anthropic.ConflictError>).headers?.get('x-should-retry')).toBe(
      'false',
    );

    expect(await client.beta.sessions.delete(s.id)).toEqual({ id: s.id, type: 'session_deleted' });
    expect(await client.beta.sessions.retrieve(s.id).catch((e: unknown) => e)).toBeInstanceOf(
      Anthropic.NotFoundError,
    );
  });

  it('pages event history and filters it by types[]', async () => {
    const { agentId, environmentId } = await agentAndEnvironment(client);
    const s = await client.beta.sessions.create({ agent: agentId, environment_id: environmentId });
    const stream = await openStream(client, s.id);
    await client.beta.sessions.events.send(s.id, { events: [text('first')] });
    await stream.idle();
    await client.beta.sessions.events.send(s.id, { events: [text('second')] });
    await stream.idle();

    const all = [];
    for await (const e of client.beta.sessions.events.list(s.id, { limit: 3 })) all.push(e);
    expect(all.length).toBeGreaterThan(6);
    expect(new Set(all.map((e) => e.id)).size).toBe(all.length);
    const pages = emu.control.requests.filter((r) => r.path.startsWith(`/v1/sessions/${s.id}/events?`));
    expect(pages.length).toBe(Math.ceil(all.length / 3));
    expect(pages[1]!.path).toContain('page=');

    const idles = [];
    for await (const e of client.beta.sessions.events.list(s.id, { types: ['session.status_idle'] }))
      idles.push(e);
    expect(idles.map((e) => e.type)).toEqual(['session.status_idle', 'session.status_idle']);
    expect(emu.control.requests.at(-1)!.path).toContain('types%5B%5D=session.status_idle');
  });
  it('replays ids from its seed', async () => {
    const other = await startClaudeEmulator({ random: new SeededRandom(7) });
    const again = await startClaudeEmulator({ random: new SeededRandom(7) });
    try {
      const a = await clientFor(other).beta.agents.create({ name: 'a', model: 'claude-sonnet-4-6' });
      const b = await clientFor(again).beta.agents.create({ name: 'a', model: 'claude-sonnet-4-6' });
      expect(a.id).toBe(b.id);
      expect(a.id).toMatch(/^agent_/);
    } finally {
      await other.close();
      await again.close();
    }
  });

  it('injects failures the SDK retries on its own (a create answered 529 once, then created)', async () => {
    emu.control.failNext(529, 1, { 'retry-after-ms': '1' });
    const retrying = new Anthropic({ apiKey: 'sk-ant-emulator', baseURL: emu.url, maxRetries: 1 });
    const agent = await retrying.beta.agents.create({ name: 'a', model: 'claude-sonnet-4-6' });
    expect(agent.type).toBe('agent');
    const creates = emu.control.requests.filter((r) => r.path === '/v1/agents');
    expect(creates.map((r) => r.headers['x-stainless-retry-count'])).toEqual(['0', '1']);
    emu.control.failNext(429, 1);
    const limited = await client.beta.agents.list().catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
  });
  it('can lose a create response after the session exists, so it is found again by agent and creation time', async () => {
    const clock = new VirtualClock(Date.UTC(2026, 10, 1));
    const timed = await startClaudeEmulator({ clock });
    try {
      const c = clientFor(timed);
      const { agentId, environmentId } = await agentAndEnvironment(c);
      await c.beta.sessions.create({
        agent: agentId,
        environment_id: environmentId,
        metadata: { envelope: 'env-8' },
      });
      await clock.advance(1000);
      const since = new Date(clock.now()).toISOString();
      timed.control.loseNextResponses(1);
      const lost = await c.beta.sessions
        .create({ agent: agentId, environment_id: environmentId, metadata: { envelope: 'env-9' } })
        .catch((e: unknown) => e);
      expect(lost).toBeInstanceOf(Anthropic.APIConnectionError);
      const found = [];
      for await (const s of c.beta.sessions.list({ agent_id: agentId, 'created_at[gte]': since }))
        found.push(s);
      expect(found.map((s) => s.metadata)).toEqual([{ envelope: 'env-9' }]);
    } finally {
      await timed.close();
    }
  });
  it('ends an open stream with session.deleted when the session is deleted', async () => {
    const { agentId, environmentId } = await agentAndEnvironment(client);
    const s = await client.beta.sessions.create({ agent: agentId, environment_id: environmentId });
    const stream = await client.beta.sessions.events.stream(s.id);
    await client.beta.sessions.delete(s.id);
    const frames = [];
    for await (const e of stream) frames.push(e.type);
    expect(frames).toEqual(['session.deleted']);
  });
});
