import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SystemClock } from '../../src/core/clock.ts';
import { CryptoRandom } from '../../src/core/random.ts';
import { isTerminal } from '../../src/core/states.ts';
import type { Envelope } from '../../src/core/envelope.ts';
import { ClaudeConnector } from '../../src/connectors/claude/claude-connector.ts';
import { Plane } from '../../src/plane/plane.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { signatureHeaders, signingKey } from '../../src/protocols/standard-webhooks.ts';
import { startClaudeEmulator, type ClaudeEmulator } from '../emulators/claude/server.ts';
import { agentAndEnvironment, clientFor } from '../emulators/claude/sdk-support.ts';
import { untilStored } from '../support/until-stored.ts';
import { connectorBehaviour } from './suite/connector-suite.ts';

/**
 * The Claude connector through the official `@anthropic-ai/sdk` against the emulator
 * (test/emulators/claude/): the shared connector suite, then the real engine driving every scripted
 * turn, a dropped stream with a tool call pending, a budget pause answered by a raise, a lost create
 * response, and signed webhooks with duplicates.
 */

const SECRET = 'whsec_' + Buffer.from('claude-connector-test-secret-32b').toString('base64');
const never = new AbortController().signal;

const LOOKUP_SCHEMA = { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] };

async function connectorOn(
  emu: ClaudeEmulator,
  extra: Partial<ConstructorParameters<typeof ClaudeConnector>[0]> = {},
) {
  const client = clientFor(emu);
  const { environmentId } = await agentAndEnvironment(client);
  const agent = await client.beta.agents.create({
    name: 'with-tools',
    model: 'claude-sonnet-4-6',
    tools: [{ type: 'custom', name: 'lookup', description: 'looks things up', input_schema: LOOKUP_SCHEMA }],
  } as never);
  const agentId = agent.id;
  return new ClaudeConnector({
    target: 'claude',
    apiKey: 'sk-ant-emulator',
    baseUrl: emu.url,
    agentId,
    environmentId,
    webhookSigningKey: SECRET,
    maxRetries: 0,
    ...extra,
  });
}

let suiteEmu: ClaudeEmulator;
beforeAll(async () => {
  suiteEmu = await startClaudeEmulator();
});
afterAll(async () => {
  await suiteEmu?.close();
});

connectorBehaviour('claude', () => connectorOn(suiteEmu), { input: () => 'hold until released' });

describe('Claude connector under the engine', () => {
  let emu: ClaudeEmulator;
  let store: MemoryStore;
  let plane: Plane;
  let connector: ClaudeConnector;

  beforeEach(async () => {
    emu = await startClaudeEmulator();
    store = new MemoryStore();
    connector = await connectorOn(emu);
    plane = new Plane({
      clock: new SystemClock(),
      random: new CryptoRandom(),
      store,
      connectors: (t) => (t === 'claude' ? connector : undefined),
      options: { reconcile: { enabled: false } },
    });
    await plane.start();
  });
  afterEach(async () => {
    await plane.stop();
    connector.close();
    await emu.close();
  });

  const until = async (id: string, holds: (e: Envelope) => boolean, what: string) => {
    await untilStored(store, id, async () => holds((await store.getEnvelope(id))!), what);
    return (await store.getEnvelope(id))!;
  };
  const create = async (input: string, extra: { budget?: { limit: number; unit: string } } = {}) =>
    (await plane.create({ tenant: 't', target: 'claude', input, ...extra })).envelope;
  const terminal = (id: string) => until(id, (e) => isTerminal(e.state), 'terminal');
  const waiting = (id: string, n = 1) =>
    until(
      id,
      (e) => e.state === 'waiting_for_input' && (e.pendingInput?.requests?.length ?? 0) === n,
      `waiting on ${n}`,
    );

  it('end_turn: succeeded with the agent message, usage in cents and tokens, the last event id as cursor', async () => {
    const env = await create('hello there');
    const done = await terminal(env.id);
    expect(done.state).toBe('succeeded');
    expect(done.nativeState).toBe('idle/end_turn');
    expect(done.result).toBe('Done.');
    expect(done.usage).toEqual({ cents: 100, input_tokens: 100, output_tokens: 50 });
    expect(done.streamCursor).toMatch(/^sevt_/);
    const session = emu.control.session(done.remoteId!)!;
    expect(session.metadata).toMatchObject({ taskplane_envelope: env.id, taskplane_context: env.contextId });
    // The create went out once, without SDK retries.
    expect(emu.control.requests.filter((r) => r.method === 'POST' && r.path === '/v1/sessions')).toHaveLength(
      1,
    );
  });

  it('custom tool: one keyed request with the schema; the answer is a user.custom_tool_result', async () => {
    const env = await create('custom_tool please');
    const w = await waiting(env.id);
    const request = w.pendingInput!.requests![0]!;
    expect(request.method).toBe('custom_tool_result');
    expect(request.schema).toMatchObject({
      'x-tool-input': { query: 'weather' },
      'x-tool-input-schema': LOOKUP_SCHEMA,
    });
    await plane.answer('t', env.id, { requestId: request.requestId, value: 'sunny' });
    const done = await terminal(env.id);
    expect(done.state).toBe('succeeded');
    const sent = emu.control
      .session(env.remoteId ?? done.remoteId!)!
      .events.find((e) => e.type === 'user.custom_tool_result');
    expect(sent).toMatchObject({
      custom_tool_use_id: request.requestId,
      content: [{ type: 'text', text: 'sunny' }],
    });
  });

  it('tool confirmation denied; a repeated answer is refused, not sent twice', async () => {
    const env = await create('tool_confirmation now');
    const w = await waiting(env.id);
    const r = w.pendingInput!.requests![0]!;
    expect(r.method).toBe('tool_confirmation');
    await plane.answer('t', env.id, {
      requestId: r.requestId,
      value: { result: 'deny', deny_message: 'no' },
    });
    await expect(plane.answer('t', env.id, { requestId: r.requestId, value: 'allow' })).rejects.toMatchObject(
      {
        code: 'conflict',
      },
    );
    const done = await terminal(env.id);
    expect(done.state).toBe('succeeded');
    const confirmations = emu.control
      .session(done.remoteId!)!
      .events.filter((e) => e.type === 'user.tool_confirmation');
    expect(confirmations).toEqual([
      expect.objectContaining({ tool_use_id: r.requestId, result: 'deny', deny_message: 'no' }),
    ]);
  });

  it('two blocking events: two keyed requests; answering one leaves the other pending', async () => {
    const env = await create('two_tools at once');
    const w = await waiting(env.id, 2);
    const [custom, confirm] = w.pendingInput!.requests!;
    expect([custom!.method, confirm!.method]).toEqual(['custom_tool_result', 'tool_confirmation']);
    await plane.answer('t', env.id, { requestId: confirm!.requestId, value: 'allow' });
    const one = await until(
      env.id,
      (e) => e.state === 'waiting_for_input' && e.pendingInput?.requests?.length === 1,
      'one left',
    );
    expect(one.pendingInput!.requestId).toBe(custom!.requestId);
    expect(one.pendingInput!.answeredAt).toBeNull();
    await plane.answer('t', env.id, {
      requestId: custom!.requestId,
      value: { content: [{ type: 'text', text: 'a' }] },
    });
    expect((await terminal(env.id)).state).toBe('succeeded');
  });

  it('retries_exhausted, refusal and terminated are failed with the session.error or stop details', async () => {
    const [a, b, c] = [await create('retries_exhausted'), await create('refusal'), await create('terminal')];
    const [ra, rb, rc] = [await terminal(a.id), await terminal(b.id), await terminal(c.id)];
    expect([ra.state, ra.nativeState, ra.error?.code]).toEqual([
      'failed',
      'idle/retries_exhausted',
      'model_overloaded_error',
    ]);
    expect([rb.state, rb.nativeState, rb.error]).toEqual([
      'failed',
      'idle/refusal',
      { code: 'refusal:cyber', message: 'Refused.' },
    ]);
    expect([rc.state, rc.nativeState, rc.error?.code]).toEqual(['failed', 'terminated', 'billing_error']);
  });

  it('budget: the task budget becomes the session budget; the pause waits with reason budget and a raise resumes it', async () => {
    const env = await create('budget heavy', { budget: { limit: 250, unit: 'cents' } });
    const paused = await until(env.id, (e) => e.nativeState === 'idle/budget_reached', 'paused');
    expect(paused.state).toBe('waiting_for_input');
    expect(paused.statusMessage).toBe('budget');
    // The request in flight finishes: the cost lands past the cap.
    expect(paused.usage?.cents).toBe(300);
    const session = emu.control.session(paused.remoteId!)!;
    expect(session.budget?.max_list_cost.amount).toBe('250');
    await plane.answer('t', env.id, { requestId: paused.pendingInput!.requestId, value: { limit: 1000 } });
    const done = await terminal(env.id);
    expect(done.state).toBe('succeeded');
    expect(done.budget).toEqual({ limit: 1000, unit: 'cents' });
    expect(session.budget?.max_list_cost.amount).toBe('1000');
    expect(done.usage?.cents).toBe(500);
  });

  it('cancel: user.interrupt, then the end_turn that follows is cancelled', async () => {
    const env = await create('hold on');
    await until(env.id, (e) => e.state === 'running', 'running');
    await plane.cancel('t', env.id);
    const done = await terminal(env.id);
    expect([done.state, done.nativeState, done.cancel?.outcome]).toEqual([
      'cancelled',
      'idle/end_turn/interrupted',
      'cancelled',
    ]);
    expect(emu.control.session(done.remoteId!)!.events.some((e) => e.type === 'user.interrupt')).toBe(true);
  });

  it('cancel while paused at the budget archives the session (interrupts are ignored there): cancelled', async () => {
    const env = await create('budget again', { budget: { limit: 100, unit: 'cents' } });
    await until(env.id, (e) => e.nativeState === 'idle/budget_reached', 'paused');
    await plane.cancel('t', env.id);
    const done = await terminal(env.id);
    expect([done.state, done.nativeState]).toEqual(['cancelled', 'terminated/archived']);
    expect(emu.control.session(done.remoteId!)!.archived_at).not.toBeNull();
  });

  it('a stream dropped with a tool call pending is reattached: history then stream, the request appears once', async () => {
    emu.control.holdTurns(true);
    const env = await create('drop it');
    const bound = await until(env.id, (e) => e.remoteId !== null, 'bound');
    // Attached: the stream is open and the history has been read, so the turn runs under our stream.
    const historyRead = () =>
      emu.control.requests.some((r) => r.path.startsWith(`/v1/sessions/${bound.remoteId}/events?`));
    for (let i = 0; i < 10_000 && !(emu.control.openStreams(bound.remoteId!) === 1 && historyRead()); i++)
      await new Promise((r) => setImmediate(r));
    expect(emu.control.openStreams(bound.remoteId!)).toBe(1);
    emu.control.holdTurns(false);
    const w = await waiting(env.id);
    const requested = (await plane.events('t', { afterSeq: 0, envelopeId: env.id })).filter(
      (e) => e.type === 'input_requested',
    );
    expect(requested).toHaveLength(1);
    // The idle that asks for the tool result reached only the history: a second stream read it there.
    expect(
      emu.control.requests.filter((r) => r.path.endsWith('/events/stream')).length,
    ).toBeGreaterThanOrEqual(2);
    await plane.answer('t', env.id, { requestId: w.pendingInput!.requestId, value: 'ok' });
    expect((await terminal(env.id)).state).toBe('succeeded');
  });

  it('a lost create response is found by listing the agent sessions and matching the metadata: one session', async () => {
    emu.control.loseNextResponses(1);
    const env = await create('hello again');
    await plane.reconcileNow('claude').catch(() => undefined);
    const done = await terminal(env.id);
    expect(done.state).toBe('succeeded');
    expect(emu.control.requests.filter((r) => r.method === 'POST' && r.path === '/v1/sessions')).toHaveLength(
      1,
    );
  });

  it('a create answered with something that is not a session is no refusal: found by listing, one session', async () => {
    emu.control.garbleNextResponses({ type: 'message', content: [] });
    const env = await create('hello again');
    const bound = await until(env.id, (e) => e.remoteId !== null || isTerminal(e.state), 'bound');
    expect(bound.state).not.toBe('failed');
    const done = await terminal(env.id);
    expect(done.state).toBe('succeeded');
    expect(done.remoteId).toMatch(/^sesn_/);
    // The create's answer was unreadable: the attempt is on record, and the session was found, not made again.
    const changes = (await store.listEvents({ afterSeq: 0, envelopeId: env.id, tenant: 't', limit: 100 }))
      .filter((e) => e.type === 'state_changed')
      .map((e) => e.data.to);
    expect(changes).not.toContain('failed');
    expect(emu.control.requests.filter((r) => r.method === 'POST' && r.path === '/v1/sessions')).toHaveLength(
      1,
    );
  });

  it('a session deleted by someone else is unknown, never resubmitted', async () => {
    const open = await create('custom_tool waiting');
    const w = await waiting(open.id);
    await clientFor(emu).beta.sessions.delete(w.remoteId!);
    const gone = await until(open.id, (e) => e.state === 'unknown', 'unknown');
    expect(gone.reconciliation?.note).toMatch(/deleted/);
    await plane.reconcileNow('claude');
    expect((await store.getEnvelope(open.id))!.state).toBe('unknown');
    expect(emu.control.requests.filter((r) => r.method === 'POST' && r.path === '/v1/sessions')).toHaveLength(
      1,
    );
  });
});

describe('Claude webhooks', () => {
  let emu: ClaudeEmulator;
  it('thin payloads are verified with the target secret, deduplicated by webhook-id, and fetch the session', async () => {
    emu = await startClaudeEmulator();
    const connector = await connectorOn(emu);
    const store = new MemoryStore();
    const plane = new Plane({
      clock: new SystemClock(),
      random: new CryptoRandom(),
      store,
      connectors: () => connector,
      // No stream: the webhook is the only fast path.
      options: { reconcile: { enabled: false }, delivery: { stream: false, poll: false, push: true } },
    });
    await plane.start();
    try {
      const env = (await plane.create({ tenant: 't', target: 'claude', input: 'hello' }, { wait: 'started' }))
        .envelope;
      const remoteId = env.remoteId!;
      // The emulator's turn runs one I/O turn per step: wait for its idle without any clock.
      for (let i = 0; i < 1000 && emu.control.session(remoteId)!.status !== 'idle'; i++)
        await new Promise((r) => setImmediate(r));
      const body = JSON.stringify({
        type: 'event',
        id: 'wevt_1',
        created_at: new Date().toISOString(),
        data: { type: 'session.status_idled', id: remoteId, organization_id: 'org', workspace_id: 'w' },
      });
      const headers = signatureHeaders(signingKey(SECRET, 's'), 'msg_1', Date.now(), body);
      const first = await plane.handleWebhook('claude', { headers, rawBody: body });
      const second = await plane.handleWebhook('claude', { headers, rawBody: body });
      // Recorded and answered at once; the session is fetched behind the answer.
      expect([first.status, second.status]).toEqual(['recorded', 'duplicate']);
      await untilStored(
        store,
        env.id,
        async () => (await store.getEnvelope(env.id))!.state === 'succeeded',
        'the webhook-driven outcome',
      );
      const tampered = { ...headers, 'webhook-signature': 'v1,AAAA' };
      await expect(plane.handleWebhook('claude', { headers: tampered, rawBody: body })).rejects.toMatchObject(
        {
          code: 'unauthenticated',
        },
      );
      const stranger = body.replace(remoteId, 'sesn_not_ours');
      const h2 = signatureHeaders(signingKey(SECRET, 's'), 'msg_2', Date.now(), stranger);
      expect((await plane.handleWebhook('claude', { headers: h2, rawBody: stranger })).status).toBe(
        'ignored',
      );
    } finally {
      await plane.stop();
      connector.close();
      await emu.close();
    }
  });

  it('the connector alone: start, get and a keyed answer are the SDK calls with the right field names', async () => {
    emu = await startClaudeEmulator();
    const c = await connectorOn(emu);
    try {
      const s = await c.start(
        { envelopeId: 'e1', messageId: 'm1', contextId: 'ctx1', input: { text: 'custom_tool x' } },
        never,
      );
      expect(s.state).toBe('running');
      let snap = await c.get(s.remoteId, never);
      for (let i = 0; i < 50 && snap.state !== 'waiting_for_input'; i++) {
        await new Promise((r) => setImmediate(r));
        snap = await c.get(s.remoteId, never);
      }
      expect(snap.inputRequests).toHaveLength(1);
      const requestId = snap.inputRequests![0]!.requestId;
      await c.answer(s.remoteId, { requestId, messageId: 'a1', value: 'r' }, never);
      // A retry of the same answer sends nothing: the history already holds it.
      await c.answer(s.remoteId, { requestId, messageId: 'a1', value: 'r' }, never);
      const results = emu.control
        .session(s.remoteId)!
        .events.filter((e) => e.type === 'user.custom_tool_result');
      expect(results).toHaveLength(1);
    } finally {
      c.close();
      await emu.close();
    }
  });
});

describe('Claude usage against budgets, and cleanup', () => {
  let emu: ClaudeEmulator;
  let plane: Plane;
  let connector: ClaudeConnector;
  let store: MemoryStore;
  afterEach(async () => {
    await plane?.stop();
    connector?.close();
    await emu?.close();
  });
  const setup = async (
    options: ConstructorParameters<typeof Plane>[0]['options'],
    extra: Partial<ConstructorParameters<typeof ClaudeConnector>[0]> = {},
  ) => {
    emu = await startClaudeEmulator();
    connector = await connectorOn(emu, extra);
    store = new MemoryStore();
    plane = new Plane({
      clock: new SystemClock(),
      random: new CryptoRandom(),
      store,
      connectors: () => connector,
      options: { reconcile: { enabled: false }, ...options },
    });
    await plane.start();
  };
  const settled = async (id: string) => {
    await untilStored(store, id, async () => isTerminal((await store.getEnvelope(id))!.state), 'terminal');
    return (await store.getEnvelope(id))!;
  };

  it('a tenant budget in cents counts parallel sessions; the work in flight finishes past it, then new work is refused', async () => {
    await setup({ budgets: { tenants: { t: { limit: 150, unit: 'cents' } } } });
    // Both start while nothing is spent yet; each session then spends 100 cents.
    const [a, b] = await Promise.all([
      plane.create({ tenant: 't', target: 'claude', input: 'one' }),
      plane.create({ tenant: 't', target: 'claude', input: 'two' }),
    ]);
    const done = [await settled(a.envelope.id), await settled(b.envelope.id)];
    expect(done.map((e) => e.state)).toEqual(['succeeded', 'succeeded']);
    // The overshoot the provider documents: 200 cents spent against a cap of 150.
    expect(done.reduce((sum, e) => sum + (e.usage?.cents ?? 0), 0)).toBe(200);
    await expect(plane.create({ tenant: 't', target: 'claude', input: 'three' })).rejects.toMatchObject({
      code: 'failed_precondition',
      message: 'tenant budget exhausted: used 200 of 150 cents',
    });
  });

  it('archiveAfterTerminal archives the session once the task is terminal; the outcome stays', async () => {
    await setup({}, { archiveAfterTerminal: true });
    const { envelope } = await plane.create({ tenant: 't', target: 'claude', input: 'hello' });
    const done = await settled(envelope.id);
    expect(done.state).toBe('succeeded');
    const session = () => emu.control.session(done.remoteId!)!;
    for (let i = 0; i < 10_000 && session().archived_at === null; i++)
      await new Promise((r) => setImmediate(r));
    expect(session().archived_at).not.toBeNull();
    expect((await store.getEnvelope(envelope.id))!.state).toBe('succeeded');
  });
});
