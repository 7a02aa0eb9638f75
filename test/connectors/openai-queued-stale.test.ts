import { afterEach, describe, expect, it } from 'vitest';
import { decideTransition } from '../../src/core/states.ts';
import { SeededRandom } from '../../src/core/random.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { OpenAIConnector } from '../../src/connectors/openai/openai-connector.ts';
import { responseSnapshot, staleQueued } from '../../src/connectors/openai/response-snapshot.ts';
import { Plane } from '../../src/plane/plane.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { startHarness, type Harness } from '../emulators/openai/support.ts';

/**
 * A background response stuck in `queued` (provider digest: one whose stream was cut at its first event
 * can stay there indefinitely). Past the target's `queuedStaleMs` it is `unknown` with reason
 * `queued_stale`, never a guessed failure; a response that starts after all is followed again. All on a
 * virtual clock shared by the emulator, the connector and the plane.
 */
const STALE_MS = 600_000;
const o = { incomplete: 'failed' as const, prices: null };

describe('the queued staleness rule', () => {
  const createdAt = 1_767_225_600; // seconds, as the API gives it
  const queued = { id: 'resp_1', status: 'queued', created_at: createdAt };

  it('a retrieved response queued past the limit is unknown with the reason; sooner it is accepted', () => {
    const at = (ms: number) =>
      staleQueued(responseSnapshot(queued, o), queued, createdAt * 1000 + ms, STALE_MS);
    expect(at(STALE_MS - 1)).toMatchObject({ state: 'accepted', nativeState: 'queued', remoteVersion: 1 });
    expect(at(STALE_MS)).toMatchObject({
      state: 'unknown',
      nativeState: 'queued',
      reason: 'queued_stale',
      remoteVersion: 2,
    });
    // Only `queued` goes stale: a running response is running however old.
    const running = { ...queued, status: 'in_progress' };
    expect(
      staleQueued(responseSnapshot(running, o), running, createdAt * 1000 + 10 * STALE_MS, STALE_MS),
    ).toMatchObject({ state: 'running' });
  });

  it('orders against every other report: replaces queued, is not undone by a replayed queued, yields to in_progress', () => {
    const fresh = responseSnapshot(queued, o);
    const stale = staleQueued(fresh, queued, createdAt * 1000 + STALE_MS, STALE_MS);
    const record = (s: typeof fresh) => ({
      state: s.state,
      nativeState: s.nativeState,
      remoteVersion: s.remoteVersion,
    });
    const obs = (s: typeof fresh) => ({ ...record(s), reason: s.reason ?? null });
    expect(decideTransition(record(fresh), obs(stale))).toMatchObject({ apply: true });
    expect(decideTransition(record(stale), obs(fresh))).toMatchObject({ apply: false, reason: 'stale' });
    expect(decideTransition(record(stale), obs(stale))).toMatchObject({ apply: false, reason: 'duplicate' });
    const started = responseSnapshot({ ...queued, status: 'in_progress' }, o);
    expect(decideTransition(record(stale), obs(started))).toMatchObject({
      apply: true,
      next: { state: 'running' },
    });
    // An `unknown` without a reason (a status we do not know) still never replaces a known state.
    const strange = responseSnapshot({ ...queued, status: 'paused_by_new_feature' }, o);
    expect(decideTransition(record(fresh), obs(strange))).toMatchObject({ apply: false });
  });
});

describe('a plane following a response stuck in queued', () => {
  let h: Harness | undefined;
  let plane: Plane | undefined;
  afterEach(async () => {
    await plane?.stop();
    await h?.emu.close();
    plane = h = undefined;
  });

  it('records it unknown (queued_stale) once the limit has passed, once, and not terminal', async () => {
    h = await startHarness();
    const connector = new OpenAIConnector({
      target: 'gpt',
      baseUrl: h.baseURL,
      apiKey: 'sk',
      model: 'm',
      clock: h.clock,
      queuedStaleMs: STALE_MS,
    });
    const store = new MemoryStore();
    plane = new Plane({
      clock: h.clock,
      random: new SeededRandom(3),
      store,
      connectors: (t) => (t === 'gpt' ? connector : undefined),
      logger: silentLogger,
      options: { reconcile: { enabled: false } },
    });
    await plane.start();
    h.emu.faultNext({ stuckInQueued: true });
    const { envelope } = await plane.create({ tenant: 't', target: 'gpt', input: 'hi' }, { wait: 'started' });
    expect(envelope).toMatchObject({ state: 'accepted', nativeState: 'queued' });
    const events = async () => plane!.events('t', { afterSeq: 0, envelopeId: envelope.id });

    await h.clock.advance(STALE_MS - 1_000);
    await plane.reconcileNow('gpt');
    expect((await plane.get('t', envelope.id)).state).toBe('accepted');

    // Past the limit, the next read of the response judges it. The stream the watcher keeps open is
    // silent, and a reconciliation round reads only jobs nothing has been heard of for a whole interval
    // (the last word was the stream's queued, at STALE_MS - 1 s): the round after that interval reads it.
    await h.clock.advance(1_000 + STALE_MS);
    await plane.reconcileNow('gpt');
    const stale = await plane.get('t', envelope.id);
    expect(stale).toMatchObject({ state: 'unknown', nativeState: 'queued' });
    expect(stale.statusMessage).toMatch(/may never start/);
    const changed = (await events()).filter((e) => e.type === 'state_changed' && e.data.to === 'unknown');
    expect(changed).toHaveLength(1);
    expect(changed[0]!.data).toMatchObject({ from: 'accepted', reason: 'queued_stale' });

    // Later rounds ask again and record nothing new.
    await h.clock.advance(STALE_MS);
    await plane.reconcileNow('gpt');
    expect((await plane.get('t', envelope.id)).state).toBe('unknown');
    expect((await events()).filter((e) => e.type === 'state_changed')).toHaveLength(changed.length);
  });
});
