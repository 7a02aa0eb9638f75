import Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../src/core/clock.ts';
import { BETA, startClaudeEmulator, type ClaudeEmulator } from './server.ts';
import {
  agentAndEnvironment,
  clientFor,
  openStream,
  stopType,
  text,
  type StreamEvent,
} from './sdk-support.ts';

let emu: ClaudeEmulator;
let client: Anthropic;
let clock: VirtualClock;
let ids: { agentId: string; environmentId: string };

beforeEach(async () => {
  clock = new VirtualClock(Date.UTC(2026, 10, 1));
  emu = await startClaudeEmulator({ clock });
  client = clientFor(emu);
  ids = await agentAndEnvironment(client);
});
afterEach(async () => {
  await emu.close();
});

const budget = (cents: number) => ({
  type: 'limit' as const,
  max_list_cost: { amount: String(cents), currency: 'USD' as const },
});

async function session(extra: Record<string, unknown> = {}) {
  return client.beta.sessions.create({ agent: ids.agentId, environment_id: ids.environmentId, ...extra });
}

const types = (events: StreamEvent[]) => events.map((e) => e.type);

describe('Claude emulator: scripted turns through the official SDK', () => {
  it('end_turn: the user message is echoed queued, then processed, with preview deltas only on the opted-in stream', async () => {
    const s = await session();
    const stream = await openStream(client, s.id, { event_deltas: ['agent.message'] });
    const sent = await client.beta.sessions.events.send(s.id, { events: [text('hello')] });
    expect(sent.data?.[0]).toMatchObject({ type: 'user.message', processed_at: null });
    const frames = await stream.until((e) => e.type === 'session.status_idle');
    const kinds = types(frames);
    expect(kinds.slice(0, 4)).toEqual([
      'user.message',
      'session.status_running',
      'user.message',
      'span.model_request_start',
    ]);
    expect(frames[2]!.processed_at).toEqual(expect.any(String));
    expect(kinds.indexOf('event_start')).toBeLessThan(kinds.indexOf('agent.message'));
    expect(kinds).toContain('event_delta');
    expect(kinds.slice(-2)).toEqual(['session.usage', 'session.status_idle']);
    expect(stopType(frames.at(-1)!)).toBe('end_turn');

    const history = [];
    for await (const e of client.beta.sessions.events.list(s.id)) history.push(e);
    expect(history.map((e) => e.type)).not.toContain('event_delta');
    expect(history.filter((e) => e.id === sent.data?.[0]!.id)).toHaveLength(1);
    expect((await client.beta.sessions.retrieve(s.id)).status).toBe('idle');
  });

  it('requires_action with a custom tool: idles on the tool use and continues on user.custom_tool_result', async () => {
    const s = await session();
    const stream = await openStream(client, s.id);
    await client.beta.sessions.events.send(s.id, { events: [text('custom_tool now')] });
    const frames = await stream.until((e) => e.type === 'session.status_idle');
    const use = frames.find((e) => e.type === 'agent.custom_tool_use')!;
    expect(frames.at(-1)!['stop_reason']).toEqual({ type: 'requires_action', event_ids: [use.id] });

    const wrong = await client.beta.sessions.events
      .send(s.id, {
        events: [{ type: 'user.custom_tool_result', custom_tool_use_id: 'sevt_nope', content: [] }],
      })
      .catch((e: unknown) => e);
    expect((wrong as Error).message).toContain('events[0].custom_tool_use_id');

    const echo = await client.beta.sessions.events.send(s.id, {
      events: [
        {
          type: 'user.custom_tool_result',
          custom_tool_use_id: use.id!,
          content: [{ type: 'text', text: 'sunny' }],
        },
      ],
    });
    expect(echo.data?.[0]!.processed_at).toEqual(expect.any(String));
    expect(stopType(await stream.idle())).toBe('end_turn');
  });

  it('requires_action with a tool confirmation: a deny settles it and the turn ends', async () => {
    const s = await session();
    const stream = await openStream(client, s.id);
    await client.beta.sessions.events.send(s.id, { events: [text('tool_confirmation please')] });
    const frames = await stream.until((e) => e.type === 'session.status_idle');
    const use = frames.find((e) => e.type === 'agent.tool_use')!;
    expect(use['evaluated_permission']).toBe('ask');
    await client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.tool_confirmation', tool_use_id: use.id!, result: 'deny', deny_message: 'no' }],
    });
    expect(stopType(await stream.idle())).toBe('end_turn');
  });

  it('answering one of two blocking events re-idles with the other still listed', async () => {
    const s = await session();
    const stream = await openStream(client, s.id);
    await client.beta.sessions.events.send(s.id, { events: [text('two_tools')] });
    const first = (await stream.idle())['stop_reason'] as { event_ids: string[] };
    expect(first.event_ids).toHaveLength(2);
    const [custom, confirm] = first.event_ids as [string, string];
    await client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.custom_tool_result', custom_tool_use_id: custom, content: [] }],
    });
    expect((await stream.idle())['stop_reason']).toEqual({ type: 'requires_action', event_ids: [confirm] });
    await client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.tool_confirmation', tool_use_id: confirm, result: 'allow' }],
    });
    expect(stopType(await stream.idle())).toBe('end_turn');
  });

  it('retries_exhausted: session.error retrying, then exhausted, then usage and idle; the session stays usable', async () => {
    const s = await session();
    const stream = await openStream(client, s.id);
    await client.beta.sessions.events.send(s.id, { events: [text('retries_exhausted')] });
    const frames = await stream.until((e) => e.type === 'session.status_idle');
    const errors = frames.filter((e) => e.type === 'session.error');
    expect(errors.map((e) => (e['error'] as { retry_status: { type: string } }).retry_status.type)).toEqual([
      'retrying',
      'exhausted',
    ]);
    expect(types(frames).slice(-2)).toEqual(['session.usage', 'session.status_idle']);
    expect(stopType(frames.at(-1)!)).toBe('retries_exhausted');
    await client.beta.sessions.events.send(s.id, { events: [text('again')] });
    expect(stopType(await stream.idle())).toBe('end_turn');
  });

  it('budget_reached: pauses before the next model request (the one in flight overshoots), refuses messages, resumes on a raise', async () => {
    const s = await session({ budget: budget(250) });
    const stream = await openStream(client, s.id);
    await client.beta.sessions.events.send(s.id, { events: [text('budget run')] });
    expect(stopType(await stream.idle())).toBe('budget_reached');
    const paused = await client.beta.sessions.retrieve(s.id);
    expect(paused.status).toBe('idle');
    expect(paused.usage.list_cost).toEqual({ amount: '300', currency: 'USD' });

    const refused = await client.beta.sessions.events
      .send(s.id, { events: [text('more')] })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    const notRaised = await client.beta.sessions
      .update(s.id, { budget: budget(300) })
      .catch((e: unknown) => e);
    expect((notRaised as Error).message).toContain('budget_not_raised');

    await client.beta.sessions.update(s.id, { budget: budget(1000) });
    expect(stopType(await stream.idle())).toBe('end_turn');
    expect((await client.beta.sessions.retrieve(s.id)).usage.list_cost).toEqual({
      amount: '500',
      currency: 'USD',
    });
  });

  it('a budget cannot be added after create', async () => {
    const s = await session();
    const err = await client.beta.sessions.update(s.id, { budget: budget(100) }).catch((e: unknown) => e);
    expect((err as Error).message).toContain('budget_create_only');
  });

  it('refusal: idles with stop_details', async () => {
    const s = await session();
    const stream = await openStream(client, s.id);
    await client.beta.sessions.events.send(s.id, { events: [text('refusal')] });
    const idle = await stream.idle();
    expect(stopType(idle)).toBe('refusal');
    expect(idle['stop_details']).toMatchObject({ type: 'refusal' });
  });

  it('a terminal session.error terminates the session', async () => {
    const s = await session();
    const stream = await openStream(client, s.id);
    await client.beta.sessions.events.send(s.id, { events: [text('terminal')] });
    const frames = await stream.until((e) => e.type === 'session.status_terminated');
    const error = frames.find((e) => e.type === 'session.error')!;
    expect(error['error']).toMatchObject({ retry_status: { type: 'terminal' } });
    expect((await client.beta.sessions.retrieve(s.id)).status).toBe('terminated');
  });

  it('user.interrupt ends a running turn with end_turn', async () => {
    const s = await session();
    const stream = await openStream(client, s.id);
    await client.beta.sessions.events.send(s.id, { events: [text('hold')] });
    await stream.until((e) => e.type === 'span.model_request_end');
    await client.beta.sessions.events.send(s.id, { events: [{ type: 'user.interrupt' }] });
    const frames = await stream.until((e) => e.type === 'session.status_idle');
    expect(types(frames)).toContain('user.interrupt');
    expect(stopType(frames.at(-1)!)).toBe('end_turn');
    expect(types(frames)).not.toContain('agent.message');
  });

  it('reschedule: status rescheduling (listed by statuses[]) until released, then running again to end_turn', async () => {
    const s = await session();
    const stream = await openStream(client, s.id);
    await client.beta.sessions.events.send(s.id, { events: [text('reschedule')] });
    await stream.until((e) => e.type === 'session.status_rescheduled');
    expect((await client.beta.sessions.retrieve(s.id)).status).toBe('rescheduling');
    const listed = [];
    for await (const x of client.beta.sessions.list({ agent_id: ids.agentId, statuses: ['rescheduling'] }))
      listed.push(x.id);
    expect(listed).toEqual([s.id]);
    // Rescheduling is still busy: it cannot be archived.
    expect(
      await client.beta.sessions.archive(s.id).catch((e: unknown) => (e as { status: number }).status),
    ).toBe(400);
    emu.control.release(s.id);
    const frames = await stream.until((e) => e.type === 'session.status_idle');
    expect(types(frames)[0]).toBe('session.status_running');
    expect(stopType(frames.at(-1)!)).toBe('end_turn');
    const idle = [];
    for await (const x of client.beta.sessions.list({ agent_id: ids.agentId, statuses: ['rescheduling'] }))
      idle.push(x.id);
    expect(idle).toEqual([]);
  });

  it('an abrupt stream drop with a tool call pending: the client reconnects, lists history and answers', async () => {
    const s = await session();
    const stream = await openStream(client, s.id);
    await client.beta.sessions.events.send(s.id, { events: [text('drop')] });
    const dropped = await stream.until(() => false).catch((e: unknown) => e);
    // A cut connection, not a clean end of stream.
    expect(String(dropped)).not.toContain('stream ended');
    expect(stream.seen.map((e) => e.type)).toContain('agent.custom_tool_use');
    expect(stream.seen.map((e) => e.type)).not.toContain('session.status_idle');

    // Open first, then list, then follow skipping what the list already held.
    const again = await openStream(client, s.id);
    const history = [];
    for await (const e of client.beta.sessions.events.list(s.id)) history.push(e);
    const idle = history.filter((e) => e.type === 'session.status_idle').at(-1)!;
    const pending = (idle as unknown as StreamEvent)['stop_reason'] as { type: string; event_ids: string[] };
    expect(pending.type).toBe('requires_action');
    await client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.custom_tool_result', custom_tool_use_id: pending.event_ids[0]!, content: [] }],
    });
    const seen = new Set(history.map((e) => e.id));
    const fresh = (await again.until((e) => e.type === 'session.status_idle')).filter(
      (e) => !seen.has(e.id!),
    );
    expect(stopType(fresh.at(-1)!)).toBe('end_turn');
  });

  it('streams only live events with event: on every frame, and ping heartbeats on the virtual clock', async () => {
    const s = await session();
    const before = await client.beta.sessions.events.send(s.id, { events: [text('hello')] });
    const reader = await openStream(client, s.id);
    await reader.close();
    const res = await fetch(`${emu.url}/v1/sessions/${s.id}/events/stream`, {
      headers: { 'x-api-key': 'sk-ant-emulator', 'anthropic-beta': BETA },
    });
    const body = res.body!.getReader();
    await clock.advance(15_000);
    await client.beta.sessions.events.send(s.id, { events: [text('second')] });
    let raw = '';
    while (!raw.includes('session.status_idle')) {
      const chunk = await body.read();
      raw += new TextDecoder().decode(chunk.value);
    }
    await body.cancel();
    const frames = raw.split('\n\n').filter((f) => f.trim() !== '');
    expect(frames.every((f) => f.startsWith('event: '))).toBe(true);
    expect(frames[0]).toBe('event: ping\ndata: {"type":"ping"}');
    expect(raw).not.toContain(before.data?.[0]!.id);
  });
});
