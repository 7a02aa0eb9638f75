import { expect } from 'vitest';
import { TaskplaneError, VersionConflictError } from '../../../src/core/errors.ts';
import type { EnvelopeEventType } from '../../../src/core/envelope.ts';
import type { NormalizedState } from '../../../src/core/states.ts';
import type { ChangeNotice, EnvelopeStore } from '../../../src/store/store.ts';
import type { SuiteContext } from '../store-suite.ts';
import { event, incrementUsage, makeEnvelope, nextChange } from './fixtures.ts';

export function envelopeCases({ store, peer, test }: SuiteContext<EnvelopeStore>): void {
  test('creates an envelope at version 1 and reads it back by id, key and remote id', async () => {
    const env = makeEnvelope({ idempotencyKey: 'k1', remoteId: 'r-1', version: 7 });
    const res = await store().createEnvelope(env, [event(env, 'created')]);
    expect(res.created).toBe(true);
    expect(res.envelope).toEqual({ ...env, version: 1 });
    expect(await store().getEnvelope(env.id)).toEqual({ ...env, version: 1 });
    expect((await store().findEnvelopeByIdempotencyKey('t1', 'k1'))?.id).toBe(env.id);
    expect((await store().findEnvelopeByRemoteId('agent-a', 'r-1'))?.id).toBe(env.id);
    expect(await store().getEnvelope('nope')).toBeUndefined();
    expect(await store().findEnvelopeByRemoteId('agent-b', 'r-1')).toBeUndefined();
  });

  test('idempotency key is unique per tenant; the same key in another tenant is a new envelope', async () => {
    const first = makeEnvelope({ idempotencyKey: 'same' });
    await store().createEnvelope(first, [event(first, 'created')]);
    const again = makeEnvelope({ idempotencyKey: 'same' });
    const dup = await store().createEnvelope(again, [event(again, 'created')]);
    expect(dup).toEqual({ created: false, envelope: { ...first, version: 1 } });
    expect(await store().getEnvelope(again.id)).toBeUndefined();
    expect(await store().listEvents({ afterSeq: 0, envelopeId: again.id })).toEqual([]);
    const other = makeEnvelope({ idempotencyKey: 'same', tenant: 't2' });
    expect((await store().createEnvelope(other, [])).created).toBe(true);
  });

  test('returned and stored records are copies: mutating them changes nothing stored', async () => {
    const env = makeEnvelope();
    const { envelope } = await store().createEnvelope(env, []);
    (env.input as { text: string }).text = 'mutated';
    envelope.webhookIds.push('x');
    const read = (await store().getEnvelope(env.id))!;
    expect(read.input).toEqual({ text: 'hello', nested: { n: 1 } });
    expect(read.webhookIds).toEqual([]);
  });

  test('a record mutated by the caller right after a write call is stored as it was at the call', async () => {
    const env = makeEnvelope();
    const events = [event(env, 'created')];
    const creating = store().createEnvelope(env, events);
    env.state = 'failed';
    events[0]!.type = 'mutated' as EnvelopeEventType;
    await creating;
    expect((await store().getEnvelope(env.id))!.state).toBe('accepted');
    expect((await store().listEvents({ afterSeq: 0 })).map((e) => e.type)).toEqual(['created']);
  });

  test('updateEnvelope bumps the version and appends events with increasing seq', async () => {
    const env = makeEnvelope();
    await store().createEnvelope(env, [event(env, 'created')]);
    const next = { ...env, state: 'running' as const, updatedAt: 2000 };
    const res = await store().updateEnvelope(next, 1, [event(next, 'state'), event(next, 'artifact')]);
    expect(res.envelope.version).toBe(2);
    expect(res.envelope.state).toBe('running');
    expect(res.events.map((e) => e.type)).toEqual(['state', 'artifact']);
    expect(res.events[1]!.seq).toBeGreaterThan(res.events[0]!.seq);
    const all = await store().listEvents({ afterSeq: 0, envelopeId: env.id });
    expect(all.map((e) => e.type)).toEqual(['created', 'state', 'artifact']);
    expect(all[1]).toEqual(res.events[0]);
  });

  test('a stale version throws VersionConflictError, writes nothing and appends no events', async () => {
    const env = makeEnvelope();
    await store().createEnvelope(env, [event(env, 'created')]);
    await store().updateEnvelope({ ...env, state: 'running' }, 1, [event(env, 'running')]);
    const stale = store().updateEnvelope({ ...env, state: 'failed' }, 1, [event(env, 'failed')]);
    await expect(stale).rejects.toBeInstanceOf(VersionConflictError);
    await expect(stale).rejects.toMatchObject({ code: 'version_conflict', retryable: true });
    expect((await store().getEnvelope(env.id))!.state).toBe('running');
    expect((await store().listEvents({ afterSeq: 0, envelopeId: env.id })).map((e) => e.type)).toEqual([
      'created',
      'running',
    ]);
    await expect(store().updateEnvelope(makeEnvelope(), 1, [])).rejects.toMatchObject({ code: 'not_found' });
  });

  test('two writers racing on one envelope with retry loops never lose an update (2 x 50 = 100)', async () => {
    const env = makeEnvelope({ usage: { count: 0 } });
    await store().createEnvelope(env, []);
    const other = await peer();
    await Promise.all([incrementUsage(store(), env.id, 50), incrementUsage(other, env.id, 50)]);
    const final = (await store().getEnvelope(env.id))!;
    expect(final.usage).toEqual({ count: 100 });
    expect(final.version).toBe(101);
    const events = await store().listEvents({ afterSeq: 0, envelopeId: env.id });
    expect(events).toHaveLength(100);
  });

  test('events have a global monotonic seq and listEvents filters by tenant, envelope and limit', async () => {
    const a = makeEnvelope({ tenant: 'ta' });
    const b = makeEnvelope({ tenant: 'tb' });
    await store().createEnvelope(a, [event(a, 'a1')]);
    await store().createEnvelope(b, [event(b, 'b1')]);
    await store().updateEnvelope(a, 1, [event(a, 'a2'), event(a, 'a3')]);
    await store().updateEnvelope(b, 1, [event(b, 'b2')]);
    const all = await store().listEvents({ afterSeq: 0 });
    expect(all.map((e) => e.type)).toEqual(['a1', 'b1', 'a2', 'a3', 'b2']);
    const seqs = all.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect((await store().listEvents({ afterSeq: 0, tenant: 'tb' })).map((e) => e.type)).toEqual([
      'b1',
      'b2',
    ]);
    expect((await store().listEvents({ afterSeq: seqs[1]!, envelopeId: a.id })).map((e) => e.type)).toEqual([
      'a2',
      'a3',
    ]);
    expect((await store().listEvents({ afterSeq: 0, limit: 2 })).map((e) => e.type)).toEqual(['a1', 'b1']);
    expect(await store().listEvents({ afterSeq: seqs[4]! })).toEqual([]);
    expect(all[0]).toMatchObject({ envelopeId: a.id, tenant: 'ta', at: 1000, data: { type: 'a1' } });
  });

  test('listEnvelopes filters, sorts newest first and pages with a cursor', async () => {
    for (let i = 0; i < 7; i++) {
      const env = makeEnvelope({
        id: `env-${i}`,
        updatedAt: 1000 + (i % 3),
        state: i % 2 === 0 ? 'running' : 'succeeded',
        target: i < 5 ? 'agent-a' : 'agent-b',
        tenant: i === 6 ? 't2' : 't1',
      });
      await store().createEnvelope(env, []);
    }
    const first = await store().listEnvelopes({ tenant: 't1', limit: 4 });
    expect(first.items.map((e) => e.id)).toEqual(['env-5', 'env-2', 'env-4', 'env-1']);
    expect(first.nextCursor).toBeDefined();
    const second = await store().listEnvelopes({ tenant: 't1', limit: 4, cursor: first.nextCursor! });
    expect(second.items.map((e) => e.id)).toEqual(['env-3', 'env-0']);
    expect(second.nextCursor).toBeUndefined();
    const asc = await store().listEnvelopes({ order: 'asc', states: ['running'], target: 'agent-a' });
    expect(asc.items.map((e) => e.id)).toEqual(['env-0', 'env-4', 'env-2']);
    const recent = await store().listEnvelopes({ updatedAfter: 1001, connector: 'a2a' });
    expect(recent.items.map((e) => e.id)).toEqual(['env-5', 'env-2']);
    await expect(store().listEnvelopes({ cursor: 'garbage' })).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    expect(await store().countEnvelopesByState('t1')).toEqual({ running: 3, succeeded: 3 });
    expect(await store().countEnvelopesByState()).toEqual({ running: 4, succeeded: 3 });
  });

  test('countEnvelopesByState stays exact through creates, state changes, same-state rewrites and refused writes', async () => {
    const s = store();
    const a = makeEnvelope({ state: 'accepted', idempotencyKey: 'ka' });
    const b = makeEnvelope({ state: 'running' });
    const c = makeEnvelope({ state: 'running', tenant: 't2' });
    for (const e of [a, b, c]) await s.createEnvelope(e, [event(e, 'created')]);
    expect(await s.countEnvelopesByState('t1')).toEqual({ accepted: 1, running: 1 });
    expect(await s.countEnvelopesByState()).toEqual({ accepted: 1, running: 2 });
    // A create answered with the existing envelope counts nothing.
    expect((await s.createEnvelope(makeEnvelope({ idempotencyKey: 'ka' }), [])).created).toBe(false);
    await s.updateEnvelope({ ...a, state: 'running' }, 1, [event(a, 'running')]);
    // A rewrite in the same state (an observation, a new artifact) moves no count.
    await s.updateEnvelope({ ...a, state: 'running', nativeState: 'WORKING' }, 2, []);
    // A refused write (stale version) moves no count either.
    await expect(s.updateEnvelope({ ...a, state: 'failed' }, 1, [])).rejects.toBeInstanceOf(
      VersionConflictError,
    );
    await s.updateEnvelope({ ...b, state: 'succeeded' }, 1, []);
    expect(await s.countEnvelopesByState('t1')).toEqual({ running: 1, succeeded: 1 });
    expect(await s.countEnvelopesByState('t2')).toEqual({ running: 1 });
    expect(await s.countEnvelopesByState('t3')).toEqual({});
    expect(await s.countEnvelopesByState()).toEqual({ running: 2, succeeded: 1 });
    // A listing by state follows the same writes (the memory store keeps an index by state for it).
    const byState = async (state: NormalizedState) =>
      (await s.listEnvelopes({ states: [state], order: 'asc' })).items.map((e) => e.id).sort();
    expect(await byState('running')).toEqual([a.id, c.id].sort());
    expect(await byState('succeeded')).toEqual([b.id]);
    expect(await byState('accepted')).toEqual([]);
    // Another process on the same database reads the same counts.
    expect(await (await peer()).countEnvelopesByState()).toEqual({ running: 2, succeeded: 1 });
  });

  test('recordDelivery is true once per (source, deliveryId), also under concurrency', async () => {
    const d = { source: 'a2a-push:agent-a', deliveryId: 'd-1', envelopeId: null, receivedAt: 5 };
    expect(await store().recordDelivery(d)).toBe(true);
    expect(await store().recordDelivery(d)).toBe(false);
    expect(await store().recordDelivery({ ...d, source: 'openai-webhook' })).toBe(true);
    const other = await peer();
    const racing = { ...d, deliveryId: 'd-race' };
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? other : store()).recordDelivery(racing)),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  test('leases are exclusive until expiry, renewable by the owner, released only by the owner', async () => {
    const other = await peer();
    expect(await store().acquireLease('reconcile:a', 'w1', 1000, 100)).toBe(true);
    expect(await other.acquireLease('reconcile:a', 'w2', 1050, 100)).toBe(false);
    expect(await store().acquireLease('reconcile:a', 'w1', 1090, 100)).toBe(true);
    expect(await other.acquireLease('reconcile:a', 'w2', 1150, 100)).toBe(false);
    expect(await other.acquireLease('reconcile:a', 'w2', 1190, 100)).toBe(true);
    await store().releaseLease('reconcile:a', 'w1');
    expect(await store().acquireLease('reconcile:a', 'w1', 1200, 100)).toBe(false);
    await other.releaseLease('reconcile:a', 'w2');
    expect(await store().acquireLease('reconcile:a', 'w1', 1200, 100)).toBe(true);
    const race = await Promise.all([
      store().acquireLease('x', 'w1', 0, 10),
      other.acquireLease('x', 'w2', 0, 10),
    ]);
    expect(race.filter(Boolean)).toHaveLength(1);
  });

  test('acquireLeases takes and renews many leases in one call and returns only those held', async () => {
    const other = await peer();
    expect(await other.acquireLease('watch:b', 'w2', 1000, 100)).toBe(true);
    const held = await store().acquireLeases(['watch:a', 'watch:b', 'watch:c', 'watch:a'], 'w1', 1000, 100);
    expect(held.sort()).toEqual(['watch:a', 'watch:c']);
    // Renewed by the owner: still its own after the first expiry, and refused to another owner.
    expect((await store().acquireLeases(['watch:a', 'watch:c'], 'w1', 1090, 100)).sort()).toEqual([
      'watch:a',
      'watch:c',
    ]);
    expect(await other.acquireLeases(['watch:a', 'watch:c'], 'w2', 1150, 100)).toEqual([]);
    // w2's lease expired at 1100: taken over in the same batch.
    expect((await store().acquireLeases(['watch:b'], 'w1', 1150, 100)).sort()).toEqual(['watch:b']);
    expect(await store().acquireLeases([], 'w1', 1150, 100)).toEqual([]);
  });

  test('envelopeVersions reads state, version and remote id of the envelopes that exist', async () => {
    const a = makeEnvelope();
    const b = makeEnvelope();
    await store().createEnvelope(a, [event(a, 'created')]);
    await store().createEnvelope(b, [event(b, 'created')]);
    await store().updateEnvelope({ ...b, state: 'succeeded', remoteId: 'r-b' }, 1, [
      event(b, 'state_changed'),
    ]);
    const found = await store().envelopeVersions([a.id, b.id, 'missing']);
    expect(found.sort((x, y) => x.id.localeCompare(y.id))).toEqual(
      [
        { id: a.id, state: a.state, version: 1, remoteId: null },
        { id: b.id, state: 'succeeded', version: 2, remoteId: 'r-b' },
      ].sort((x, y) => x.id.localeCompare(y.id)),
    );
    expect(await store().envelopeVersions([])).toEqual([]);
  });

  test('settings: putSettingIfAbsent keeps the first value and both writers agree', async () => {
    expect(await store().getSetting('instance')).toBeUndefined();
    const other = await peer();
    const [a, b] = await Promise.all([
      store().putSettingIfAbsent('instance', 'one'),
      other.putSettingIfAbsent('instance', 'two'),
    ]);
    expect(a).toBe(b);
    expect(await store().putSettingIfAbsent('instance', 'three')).toBe(a);
    expect(await other.getSetting('instance')).toBe(a);
  });

  test('onChange wakes listeners after envelope events commit (from another instance where supported)', async () => {
    const writer = store();
    const listener = writer.capabilities.crossProcessNotify ? await peer() : writer;
    const env = makeEnvelope();
    const seen = nextChange<ChangeNotice>(
      (l) => listener.onChange(l),
      (c) => c.id === env.id,
    );
    await writer.createEnvelope(env, [event(env, 'created')]);
    const change = await seen;
    expect(change.kind).toBe('envelope');
    const events = await listener.listEvents({ afterSeq: change.seq - 1, envelopeId: env.id });
    expect(events.map((e) => e.type)).toEqual(['created']);
    const off = writer.onChange(() => undefined);
    off();
  });

  test('errors are TaskplaneErrors with stable codes', async () => {
    await expect(store().listEvents({ afterSeq: 0, limit: 0 })).rejects.toBeInstanceOf(TaskplaneError);
  });

  test('keeps artifact content and the status message exactly, any character included', async () => {
    const text = 'line one\nédition 🚀 \u0000 tab\t "quoted" \\ end';
    const env = makeEnvelope({
      statusMessage: text,
      artifacts: [
        {
          artifactId: 'a1',
          hash: 'sha256:01',
          size: 12,
          parts: [
            { kind: 'text', text },
            { kind: 'data', data: { nested: [1, 'two', null, { text }] } },
            { kind: 'file', name: 'b.bin', mediaType: 'application/octet-stream', bytes: 'AAEC/w==' },
          ],
          provenance: { source: 'stream', remoteId: 'r-1', at: 1000 },
        },
      ],
    });
    await store().createEnvelope(env, [event(env, 'created')]);
    expect(await store().getEnvelope(env.id)).toEqual({ ...env, version: 1 });
    const next = { ...env, statusMessage: `${text}!`, updatedAt: 2000 };
    await store().updateEnvelope(next, 1, [event(next, 'artifact')]);
    expect(await store().getEnvelope(env.id)).toEqual({ ...next, version: 2 });
  });
}
