import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { SystemClock, VirtualClock } from '../../src/core/clock.ts';
import { SeededRandom } from '../../src/core/random.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import {
  KeyRing,
  hashKey,
  keyIdFor,
  newApiKey,
  parseApiKeys,
  seedApiKeys,
} from '../../src/server/api-keys.ts';
import { StreamTickets } from '../../src/server/stream-tickets.ts';
import { metricsAccessFor, startServer, type RunningServer } from '../../src/server/start-server.ts';
import { planeConfig, type PlaneOptions } from '../../src/plane/options.ts';
import { FakeRemote } from '../plane/fake-remote.ts';

/**
 * API keys as data: scopes, revocation while work runs (the key's next request fails, its streams end,
 * its open jobs get the configured decision), what the stream routes and the webhook route accept, and
 * the /metrics token. Waits are on stream frames and stream ends; cache and ticket expiry run on a
 * virtual clock.
 */
const WRITER = 'writer-key-0123456789';
const OTHER = 'other-key-0123456789';
const READER = 'reader-key-0123456789';

interface Harness {
  server: RunningServer;
  store: MemoryStore;
  remote: FakeRemote;
}

async function start(plane: PlaneOptions = {}, extra: { metricsToken?: string } = {}): Promise<Harness> {
  const store = new MemoryStore();
  const remote = new FakeRemote(new SystemClock());
  const server = await startServer({
    port: 0,
    db: store,
    connectors: { fake: remote.connector('fake') },
    apiKeys: `acme:${WRITER},acme:${OTHER},acme:${READER}:read-only`,
    publicUrl: 'self',
    dashboard: false,
    lab: false,
    defaultMetrics: false,
    logger: pino({ level: 'silent' }),
    // Every request asks the store, so "refused from the next request on" is exact here; the cached
    // case is KeyRing's own test below, on a virtual clock.
    keys: { cacheMs: 0 },
    plane,
    ...extra,
  });
  return { server, store, remote };
}

function call(h: Harness, key: string | null, path: string, init: RequestInit = {}) {
  return fetch(h.server.url + path, {
    ...init,
    headers: {
      'content-type': 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
  });
}

/** Reads SSE events until one satisfies `until` (or the stream ends); waits on frames, not on time. */
async function readUntil(
  res: Response,
  until: (e: EventSourceMessage) => boolean,
): Promise<{ events: EventSourceMessage[]; ended: boolean }> {
  const events: EventSourceMessage[] = [];
  let hit = false;
  const parser = createParser({
    onEvent: (e) => {
      events.push(e);
      if (until(e)) hit = true;
    },
  });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  while (!hit) {
    const { value, done } = await reader.read();
    if (done) return { events, ended: true };
    parser.feed(dec.decode(value, { stream: true }));
  }
  await reader.cancel();
  return { events, ended: false };
}

const idOf = (secret: string) => keyIdFor(hashKey(secret));

describe('seed keys', () => {
  it('need 16 characters, may be read-only, and a repeat is named by position, never by its secret', () => {
    expect(parseApiKeys(`a:${WRITER}, b:${READER}:read-only`, 'TASKPLANE_API_KEYS')).toEqual([
      { tenant: 'a', secret: WRITER, readOnly: false },
      { tenant: 'b', secret: READER, readOnly: true },
    ]);
    expect(() => parseApiKeys(`a:${WRITER},b:${OTHER},c:${WRITER}`, 'TASKPLANE_API_KEYS')).toThrow(
      'TASKPLANE_API_KEYS: entry 3 repeats the key of entry 1',
    );
    expect(() => parseApiKeys('a:fifteen-chars!', 'keys file')).toThrow(
      'keys file: entry 1 has a key shorter than 16 characters',
    );
    for (const bad of [`a:${WRITER},a:${WRITER}`, 'a:tiny-secret', `:${WRITER}`, `a b:${WRITER}`]) {
      let message = '';
      try {
        parseApiKeys(bad, 'TASKPLANE_API_KEYS');
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/^TASKPLANE_API_KEYS: entry \d/);
      expect(message).not.toContain(WRITER);
      expect(message).not.toContain('tiny-secret');
    }
  });

  it('a seed key revoked in the store stays revoked when the list is loaded again', async () => {
    const store = new MemoryStore();
    const clock = new VirtualClock(1000);
    const random = new SeededRandom(1);
    await seedApiKeys({ env: `acme:${WRITER}`, store, clock, random });
    await store.revokeApiKey(idOf(WRITER), 2000);
    const again = await seedApiKeys({ env: `acme:${WRITER}`, store, clock, random });
    expect(again.revokedSeeds).toEqual([idOf(WRITER)]);
    const ring = new KeyRing({ store, clock });
    expect(await ring.authenticate(WRITER)).toBeUndefined();
  });
});

describe('KeyRing on a virtual clock', () => {
  it('trusts a looked-up key for at most cacheMs, and its sweep ends the key’s streams', async () => {
    const store = new MemoryStore();
    const clock = new VirtualClock(0);
    const { secret, record } = newApiKey(clock, new SeededRandom(2), { tenant: 'acme' });
    await store.putApiKeyIfAbsent(record);
    const revoked: string[] = [];
    const ring = new KeyRing({ store, clock, cacheMs: 500, onRevoked: (k) => revoked.push(k.id) });
    await ring.start(() => {});
    expect((await ring.authenticate(secret))?.id).toBe(record.id);
    const stream = ring.streamSignal(record.id);

    await store.revokeApiKey(record.id, clock.now()); // as `taskplane keys revoke` in another process
    await clock.advance(100);
    expect((await ring.authenticate(secret))?.id).toBe(record.id); // still inside the cache bound
    expect(stream.aborted).toBe(false);
    await clock.advance(400); // the sweep at 500 ms sees the revocation
    expect(stream.aborted).toBe(true);
    expect(revoked).toEqual([record.id]);
    expect(await ring.authenticate(secret)).toBeUndefined();
    ring.stop();
  });
});

describe('stream tickets', () => {
  it('name the key without carrying it, expire, and cannot be forged', async () => {
    const store = new MemoryStore();
    const clock = new VirtualClock(0);
    const random = new SeededRandom(3);
    const tickets = await StreamTickets.open({ store, clock, random, ttlMs: 60_000 });
    const { secret, record } = newApiKey(clock, random, { tenant: 'acme' });
    const { ticket, expiresAt } = tickets.issue(record);
    expect(expiresAt).toBe(60_000);
    expect(ticket).not.toContain(secret);
    expect(tickets.verify(ticket)).toBe(record.hash);
    // Another process on the same store accepts it (the MAC secret is shared through the store).
    const peer = await StreamTickets.open({ store, clock, random: new SeededRandom(4) });
    expect(peer.verify(ticket)).toBe(record.hash);
    const [payload, mac] = ticket.split('.');
    const forged = Buffer.from(JSON.stringify({ h: 'sha256:other', e: 1e15 })).toString('base64url');
    expect(tickets.verify(`${forged}.${mac}`)).toBeUndefined();
    expect(tickets.verify(`${payload}.${mac!.slice(1)}x`)).toBeUndefined();
    expect(tickets.verify('garbage')).toBeUndefined();
    await clock.advance(60_000);
    expect(tickets.verify(ticket)).toBeUndefined();
  });
});

describe('keys on a running plane', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await start();
  });
  afterAll(async () => {
    await h?.server.close();
  });

  it('a read-only key reads and streams but every write is 403', async () => {
    const created = await call(h, WRITER, '/v1/tasks', {
      method: 'POST',
      body: JSON.stringify({ target: 'fake', input: 'ro' }),
    });
    const task = (await created.json()) as { id: string };
    expect((await call(h, READER, `/v1/tasks/${task.id}`)).status).toBe(200);
    for (const [path, body] of [
      ['/v1/tasks', { target: 'fake', input: 'x' }],
      [`/v1/tasks/${task.id}/cancel`, {}],
      [`/v1/tasks/${task.id}/input`, { requestId: 'q', value: 1 }],
    ] as const) {
      const res = await call(h, READER, path, { method: 'POST', body: JSON.stringify(body) });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('permission_denied');
    }
    expect((await h.server.plane.get('acme', task.id)).state).not.toBe('cancel_requested');
    expect((await call(h, READER, '/v1/stream-tickets', { method: 'POST' })).status).toBe(201);
  });

  it('each envelope records the id of the key that created it, never the key', async () => {
    const res = await call(h, OTHER, '/v1/tasks', {
      method: 'POST',
      body: JSON.stringify({ target: 'fake', input: 'who' }),
    });
    const task = (await res.json()) as { id: string; keyId: string };
    expect(task.keyId).toBe(idOf(OTHER));
    expect(JSON.stringify(await h.server.plane.get('acme', task.id))).not.toContain(OTHER);
  });

  it('?key= and ?ticket= are taken on the stream routes only', async () => {
    const q = (path: string) => fetch(h.server.url + path);
    expect((await q(`/v1/tasks?key=${WRITER}`)).status).toBe(401);
    const byKey = await q(`/v1/events?from=now&key=${WRITER}`);
    expect(byKey.status).toBe(200);
    await byKey.body!.cancel();
    const { ticket } = (await (await call(h, WRITER, '/v1/stream-tickets', { method: 'POST' })).json()) as {
      ticket: string;
    };
    expect((await q(`/v1/tasks?ticket=${encodeURIComponent(ticket)}`)).status).toBe(401);
    const byTicket = await q(`/v1/events?from=now&ticket=${encodeURIComponent(ticket)}`);
    expect(byTicket.status).toBe(200);
    await byTicket.body!.cancel();
    expect((await q(`/v1/events?ticket=${encodeURIComponent(ticket)}x`)).status).toBe(401);
  });

  it('the webhook route answers an unknown target, a malformed body and a bad token alike', async () => {
    const t = (await (
      await call(h, WRITER, '/v1/tasks?wait=started', {
        method: 'POST',
        body: JSON.stringify({ target: 'fake', input: 'w' }),
      })
    ).json()) as { id: string; remoteId: string };
    const before = h.remote.pushes.length;
    h.remote.set(t.remoteId, 'running');
    const push = h.remote.pushes[before]!;
    const path = push.url.slice(push.url.indexOf('/v1/'));
    const send = (p: string, body: string, token: string) =>
      fetch(h.server.url + p, { method: 'POST', body, headers: { authorization: `Bearer ${token}` } });
    const answers = [
      await send(path, push.body, 'forged-token'),
      await send(path.replace(/\/fake(\?|$)/, '/no-such-target$1'), push.body, push.token),
      await send('/v1/webhooks/a2a/no-such-target', '{}', 'x'),
      await send(path, 'not json', 'forged-token'),
    ];
    const seen = await Promise.all(answers.map(async (r) => `${r.status} ${await r.text()}`));
    expect(new Set(seen).size, seen.join('\n')).toBe(1);
    expect(seen[0]).toMatch(/^401 /);
  });

  it('a revoked key fails its next request and its open stream ends', async () => {
    const secret = 'revoke-me-0123456789';
    await h.store.putApiKeyIfAbsent({
      id: 'key_revoke_me',
      tenant: 'acme',
      hash: hashKey(secret),
      readOnly: false,
      name: null,
      createdAt: 0,
      revokedAt: null,
    });
    expect((await call(h, secret, '/v1/tasks')).status).toBe(200);
    const stream = await call(h, secret, '/v1/events?from=now');
    const reading = readUntil(stream, () => false);
    await h.store.revokeApiKey('key_revoke_me', Date.now());
    expect((await call(h, secret, '/v1/tasks')).status).toBe(401);
    expect((await reading).ended).toBe(true);
    expect((await call(h, WRITER, '/v1/tasks')).status).toBe(200);
  });
});

describe('onActorRevoked', () => {
  it('is keep by default; anything but keep or cancel is refused naming the option', () => {
    expect(planeConfig().onActorRevoked).toBe('keep');
    expect(() => planeConfig({ onActorRevoked: 'pause' as never })).toThrow(/onActorRevoked/);
  });

  for (const policy of ['keep', 'cancel'] as const) {
    it(`${policy}: each open job of the revoked key gets an actor_revoked event${policy === 'cancel' ? ' and is cancelled' : ' and runs on'}`, async () => {
      const h = await start({ onActorRevoked: policy });
      try {
        const create = async (key: string, input: string) =>
          (await (
            await call(h, key, '/v1/tasks?wait=started', {
              method: 'POST',
              body: JSON.stringify({ target: 'fake', input }),
            })
          ).json()) as { id: string; remoteId: string };
        const mine = await create(WRITER, 'mine');
        const done = await create(WRITER, 'done');
        const theirs = await create(OTHER, 'theirs');
        h.remote.set(done.remoteId, 'succeeded');
        const before = (await h.server.plane.get('acme', mine.id)).state;
        const theirsBefore = (await h.server.plane.get('acme', theirs.id)).state;
        // Watched with the tenant's other key: that stream must outlive the revocation.
        const watch = await call(h, OTHER, '/v1/events?from=now');
        const seen = readUntil(
          watch,
          (e) =>
            e.event === (policy === 'cancel' ? 'cancel_requested' : 'actor_revoked') &&
            (JSON.parse(e.data) as { envelopeId: string }).envelopeId === mine.id,
        );
        await h.store.revokeApiKey(idOf(WRITER), Date.now());
        const { events, ended } = await seen;
        expect(ended).toBe(false);
        const revokedEvents = events
          .filter((e) => e.event === 'actor_revoked')
          .map((e) => JSON.parse(e.data) as { envelopeId: string; data: Record<string, unknown> });
        expect(revokedEvents).toEqual([
          expect.objectContaining({ envelopeId: mine.id, data: { keyId: idOf(WRITER), policy } }),
        ]);
        const state = (await h.server.plane.get('acme', mine.id)).state;
        if (policy === 'cancel') expect(['cancel_requested', 'cancelled']).toContain(state);
        else expect(state).toBe(before);
        expect((await h.server.plane.get('acme', done.id)).state).toBe('succeeded');
        expect((await h.server.plane.get('acme', theirs.id)).state).toBe(theirsBefore);
      } finally {
        await h.server.close();
      }
    });
  }
});

describe('two planes on one store', () => {
  it('both refuse the revoked key, and its open jobs get one actor_revoked event each, not one per plane', async () => {
    const a = await start();
    const b = await startServer({
      port: 0,
      db: a.store,
      connectors: { fake: a.remote.connector('fake') },
      apiKeys: `acme:${WRITER}`,
      dashboard: false,
      lab: false,
      defaultMetrics: false,
      logger: pino({ level: 'silent' }),
      keys: { cacheMs: 0 },
    });
    const hb: Harness = { server: b, store: a.store, remote: a.remote };
    try {
      const created = await call(a, WRITER, '/v1/tasks', {
        method: 'POST',
        body: JSON.stringify({ target: 'fake', input: 'shared' }),
      });
      const task = (await created.json()) as { id: string };
      const streamA = await call(a, WRITER, '/v1/events?from=now');
      const streamB = await call(hb, WRITER, '/v1/events?from=now');
      const watch = await call(hb, OTHER, `/v1/tasks/${task.id}/events`);
      const seen = readUntil(watch, (e) => e.event === 'actor_revoked');
      await a.store.revokeApiKey(idOf(WRITER), Date.now());
      expect((await readUntil(streamA, () => false)).ended).toBe(true);
      expect((await readUntil(streamB, () => false)).ended).toBe(true);
      expect((await call(a, WRITER, '/v1/tasks')).status).toBe(401);
      expect((await call(hb, WRITER, '/v1/tasks')).status).toBe(401);
      expect((await seen).ended).toBe(false);
    } finally {
      await b.close();
      await a.server.close();
    }
    const events = await a.store.listEvents({ afterSeq: 0, limit: 500 });
    expect(events.filter((e) => e.type === 'actor_revoked')).toHaveLength(1);
  });
});

describe('/metrics', () => {
  it('needs its token when one is set; open on loopback without one, refused beyond loopback', async () => {
    const token = 'metrics-token-0123456789';
    const h = await start({}, { metricsToken: token });
    try {
      expect((await fetch(`${h.server.url}/metrics`)).status).toBe(401);
      const wrong = await fetch(`${h.server.url}/metrics`, { headers: { authorization: 'Bearer nope' } });
      expect(wrong.status).toBe(401);
      const ok = await fetch(`${h.server.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('taskplane_tasks');
    } finally {
      await h.server.close();
    }
    expect(metricsAccessFor('127.0.0.1', undefined)).toEqual({ kind: 'open' });
    expect(metricsAccessFor('::1', undefined)).toEqual({ kind: 'open' });
    expect(metricsAccessFor('0.0.0.0', undefined)).toEqual({ kind: 'closed' });
    expect(metricsAccessFor('10.0.0.5', token)).toEqual({ kind: 'token', token });
  });
});
