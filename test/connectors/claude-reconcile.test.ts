import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { SystemClock, VirtualClock, type Clock } from '../../src/core/clock.ts';
import { CryptoRandom } from '../../src/core/random.ts';
import { isTerminal } from '../../src/core/states.ts';
import type { Envelope } from '../../src/core/envelope.ts';
import {
  ClaudeConnector,
  type ClaudeConnectorOptions,
} from '../../src/connectors/claude/claude-connector.ts';
import { Plane } from '../../src/plane/plane.ts';
import type { PlaneOptions } from '../../src/plane/options.ts';
import { connectTarget } from '../../src/server/targets.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { startClaudeEmulator, type ClaudeEmulator } from '../emulators/claude/server.ts';
import { agentAndEnvironment, clientFor } from '../emulators/claude/sdk-support.ts';
import { untilStored } from '../support/until-stored.ts';

/**
 * The Claude connector's slow paths against the emulator through the official SDK: reconciliation
 * finds sessions that changed since the last round whatever their creation time, and reads a bounded
 * number per round; the archive-after-terminal intent survives a crash of the plane; and
 * `rescheduling` is running, flagged `retrying`.
 */

const never = new AbortController().signal;
let emu: ClaudeEmulator;
const connectors: ClaudeConnector[] = [];
let plane: Plane | null = null;
let store: MemoryStore;
afterEach(async () => {
  await plane?.stop();
  plane = null;
  for (const c of connectors.splice(0)) c.close();
  await emu?.close();
});

/** Lets the emulator's turns, which step one I/O turn at a time, run until `done` holds. */
async function settle(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 100_000 && !done(); i++) await new Promise((r) => setImmediate(r));
  if (!done()) throw new Error(`${what}: not reached`);
}

async function setup(clock: Clock): Promise<(extra?: Partial<ClaudeConnectorOptions>) => ClaudeConnector> {
  emu = await startClaudeEmulator({ clock });
  const { agentId, environmentId } = await agentAndEnvironment(clientFor(emu));
  return (extra = {}) => {
    const c = new ClaudeConnector({
      target: 'claude',
      apiKey: 'sk-ant-emulator',
      baseUrl: emu.url,
      agentId,
      environmentId,
      maxRetries: 0,
      clock,
      ...extra,
    });
    connectors.push(c);
    return c;
  };
}

const start = (c: ClaudeConnector, input: string, n: number) =>
  c.start({ envelopeId: `env_${n}`, messageId: `m${n}`, contextId: `ctx_${n}`, input }, never);

async function planeOn(clock: Clock, connector: ClaudeConnector, options: PlaneOptions): Promise<Plane> {
  store = new MemoryStore();
  plane = new Plane({
    clock,
    random: new CryptoRandom(),
    store,
    connectors: () => connector,
    options: { reconcile: { enabled: false }, ...options },
  });
  await plane.start();
  return plane;
}

async function until(id: string, holds: (e: Envelope) => boolean, what: string) {
  await untilStored(store, id, async () => holds((await store.getEnvelope(id))!), what);
  return (await store.getEnvelope(id))!;
}

describe('Claude reconciliation', () => {
  it('a session created before the last round that changed since is found by the next round', async () => {
    const clock = new VirtualClock(Date.UTC(2026, 11, 1));
    const connector = (await setup(clock))();
    // Only reconciliation sees the session: no stream, no push, no polling.
    const p = await planeOn(clock, connector, {
      delivery: { stream: false, push: false, poll: false },
      reconcile: { enabled: false, sinceSkewMs: 0 },
    });
    const { envelope } = await p.create(
      { tenant: 't', target: 'claude', input: 'hold' },
      { wait: 'started' },
    );
    await clock.advance(1_000);
    await p.reconcileNow('claude');
    expect((await p.get('t', envelope.id)).state).toBe('running');

    // After that round (and long before the job is overdue) the held turn ends.
    await clock.advance(1_000);
    emu.control.release(envelope.remoteId!);
    await settle(() => emu.control.session(envelope.remoteId!)!.status === 'idle', 'idle');
    await clock.advance(1_000);
    const [report] = await p.reconcileNow('claude');
    expect(report).toMatchObject({ listed: 1, fetched: 0, changed: 1 });
    expect((await p.get('t', envelope.id)).state).toBe('succeeded');
  });

  it('reads the newest sessions first, folds only those updated since, and at most reconcileMaxSessions per listing', async () => {
    const clock = new VirtualClock(Date.UTC(2026, 11, 1));
    const connector = (await setup(clock))({ reconcileMaxSessions: 3 });
    // Held turns: a session's update time stays its creation time.
    emu.control.holdTurns(true);
    const ids: string[] = [];
    for (let n = 0; n < 5; n++) {
      ids.push((await start(connector, 'hello', n)).remoteId);
      await clock.advance(1_000);
    }
    const listing = () => emu.control.requests.filter((r) => r.path.startsWith('/v1/sessions?')).length;
    const before = listing();
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await connector.listChanged(
        { since: 0, pageSize: 2, ...(cursor ? { cursor } : {}) },
        never,
      );
      seen.push(...page.items.map((s) => s.remoteId));
      cursor = page.nextCursor;
    } while (cursor);
    // Two pages of two: the bound stops the listing after the first read past it.
    expect(seen).toEqual([...ids].reverse().slice(0, 4));
    expect(listing() - before).toBe(2);

    // Changed since a time: only the sessions updated at or after it, though all are in the window.
    const since = Date.parse(emu.control.session(ids[3]!)!.updated_at);
    const changed = await connector.listChanged({ since }, never);
    expect(changed.items.map((s) => s.remoteId)).toEqual([ids[4], ids[3]]);
    emu.control.holdTurns(false);
  });
});

describe('Claude archive after terminal', () => {
  it("survives a crash: the next start's sweep archives ended sessions; one waiting, or created without the intent, stays", async () => {
    const clock = new SystemClock();
    const make = await setup(clock);
    const before = make({ archiveAfterTerminal: true });
    const ended = (await start(before, 'hello', 1)).remoteId;
    const waiting = (await start(before, 'custom_tool', 2)).remoteId;
    const unmarked = (await start(make(), 'hello', 3)).remoteId;
    const session = (id: string) => emu.control.session(id)!;
    await settle(() => [ended, waiting, unmarked].every((id) => session(id).status === 'idle'), 'all idle');
    // The plane went down before it read the outcome, so nothing was archived.
    before.close();
    expect([ended, waiting, unmarked].map((id) => session(id).archived_at)).toEqual([null, null, null]);

    // A restarted plane builds its target from the same settings.
    const target = {
      kind: 'claude',
      baseUrl: emu.url,
      agentId: session(ended).agent['id'],
      environmentId: session(ended).environment_id,
      apiKey: { env: 'K' },
      archiveAfterTerminal: true,
      maxRetries: 0,
    };
    const after = connectTarget('claude', target, {
      clock,
      random: new CryptoRandom(),
      logger: pino({ level: 'silent' }),
      env: { K: 'sk-ant-emulator' },
    }) as ClaudeConnector;
    connectors.push(after);
    await settle(() => session(ended).archived_at !== null, 'archived by the sweep');
    expect(session(ended).status).toBe('terminated');
    expect([session(waiting).archived_at, session(unmarked).archived_at]).toEqual([null, null]);
    // The outcome read afterwards is still the session's own.
    const read = await after.get(ended, never);
    expect([read.state, read.nativeState]).toEqual(['succeeded', 'idle/end_turn']);
  });

  it('reconciliation archives an ended session it meets that was left unarchived', async () => {
    const make = await setup(new SystemClock());
    const crashed = make({ archiveAfterTerminal: true });
    const ended = (await start(crashed, 'retries_exhausted', 1)).remoteId;
    await settle(() => emu.control.session(ended)!.status === 'idle', 'idle');
    crashed.close();
    const next = make({ archiveAfterTerminal: true });
    // Far in the future: nothing changed since, yet the listing still archives it on its way.
    const page = await next.listChanged({ since: Date.now() + 3_600_000 }, never);
    expect(page.items).toEqual([]);
    await settle(() => emu.control.session(ended)!.archived_at !== null, 'archived');
  });
});

describe('Claude rescheduling', () => {
  it('rescheduling is running with statusMessage retrying; the retried turn then succeeds', async () => {
    const clock = new SystemClock();
    const connector = (await setup(clock))();
    const p = await planeOn(clock, connector, {});
    const { envelope } = await p.create({ tenant: 't', target: 'claude', input: 'reschedule' });
    const bound = await until(envelope.id, (e) => e.remoteId !== null, 'bound');
    await settle(() => emu.control.session(bound.remoteId!)!.status === 'rescheduling', 'rescheduling');
    // A change of native state alone writes no event to wait on: a reconciliation round reads it now
    // (the stream may have written the same already).
    await p.reconcileNow('claude');
    const retrying = await p.get('t', envelope.id);
    expect([retrying.state, retrying.nativeState, retrying.statusMessage]).toEqual([
      'running',
      'rescheduling',
      'retrying',
    ]);
    emu.control.release(bound.remoteId!);
    const done = await until(envelope.id, (e) => isTerminal(e.state), 'terminal');
    expect([done.state, done.nativeState, done.result]).toEqual([
      'succeeded',
      'idle/end_turn',
      'Done after a reschedule.',
    ]);
    expect(done.statusMessage).toBeNull();
  });
});
