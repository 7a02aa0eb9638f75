import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T = 'tenant-a';
const opts = {
  delivery: { stream: false, push: true, poll: false },
  reconcile: { enabled: false },
  publicUrl: 'http://127.0.0.1:9/',
};

/** The latest push the remote sent for `envelopeId`, as the ingress receives it. */
function lastPush(envelopeId: string) {
  const push = h!.remote.pushes.filter((p) => p.url.includes(envelopeId)).at(-1)!;
  return { headers: { authorization: `Bearer ${push.token}` }, rawBody: push.body, envelopeId };
}

describe('a webhook delivery is recorded only once processed', () => {
  it('a job whose stored acceptance schema no longer compiles still finishes from its push (rejected, with the reason)', async () => {
    h = await harness(opts);
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 1 }, { wait: 'started' });
    const other = await h.plane.create({ tenant: 'tenant-b', target: 'fake', input: 2 }, { wait: 'started' });
    // A schema stored under older rules, which the compiler refuses now.
    const stored = (await h.store.getEnvelope(envelope.id))!;
    await h.store.updateEnvelope(
      {
        ...stored,
        acceptance: { status: 'pending', reasons: [], schema: { $ref: 'https://example.com/gone' } },
      },
      stored.version,
      [],
    );
    h.remote.set(envelope.remoteId!, 'succeeded');
    h.remote.set(other.envelope.remoteId!, 'succeeded');
    const delivery = lastPush(envelope.id);
    expect((await h.plane.handleWebhook('fake', delivery)).status).toBe('observed');
    const after = await h.plane.get(T, envelope.id);
    expect([after.state, after.acceptance?.status]).toEqual(['succeeded', 'rejected']);
    expect(after.acceptance?.reasons.join(' ')).toContain('could not be checked');
    expect((await h.plane.handleWebhook('fake', delivery)).status).toBe('duplicate');
    expect((await h.plane.handleWebhook('fake', lastPush(other.envelope.id))).status).toBe('observed');
    expect((await h.plane.get('tenant-b', other.envelope.id)).state).toBe('succeeded');
  });

  it("a delivery whose processing failed is processed on the sender's retry, not absorbed as a duplicate", async () => {
    h = await harness(opts);
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 1 }, { wait: 'started' });
    h.remote.set(envelope.remoteId!, 'succeeded');
    const delivery = lastPush(envelope.id);
    const store = h.store as { updateEnvelope: typeof h.store.updateEnvelope };
    const real = store.updateEnvelope;
    let failures = 1;
    store.updateEnvelope = (...args) => {
      if (failures-- > 0) return Promise.reject(new Error('disk full'));
      return real(...args);
    };
    await expect(h.plane.handleWebhook('fake', delivery)).rejects.toThrow('disk full');
    expect((await h.plane.get(T, envelope.id)).state).toBe('accepted');
    expect((await h.plane.handleWebhook('fake', delivery)).status).toBe('observed');
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
    expect((await h.plane.handleWebhook('fake', delivery)).status).toBe('duplicate');
    expect((await h.plane.signals()).duplicatesAbsorbed.webhook).toBe(1);
  });

  it('a delivery whose state fetch failed is fetched again on retry', async () => {
    h = await harness(opts);
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 1 }, { wait: 'started' });
    h.remote.set(envelope.remoteId!, 'succeeded');
    // A payload without a version cannot stand in for the state the fetch would have returned.
    const push = lastPush(envelope.id);
    const body = JSON.parse(push.rawBody) as { snapshot: { remoteVersion: number | null } };
    body.snapshot.remoteVersion = null;
    const delivery = { ...push, rawBody: JSON.stringify(body) };
    h.remote.failNext('get');
    // Answered (the agent's own get is down, reconciliation covers it), but the id is not taken as seen.
    await h.plane.handleWebhook('fake', delivery);
    expect((await h.plane.get(T, envelope.id)).state).toBe('accepted');
    await h.plane.handleWebhook('fake', delivery);
    expect((await h.plane.get(T, envelope.id)).state).toBe('succeeded');
  });
});

describe('a job whose acceptance cannot be checked does not hold up its target', () => {
  it('reconciliation of the target still finishes every job, that one included', async () => {
    h = await harness({ delivery: { stream: false, push: false, poll: false } });
    const broken = await h.plane.create({ tenant: T, target: 'fake', input: 1 }, { wait: 'started' });
    const others = [
      await h.plane.create({ tenant: 'tenant-b', target: 'fake', input: 2 }, { wait: 'started' }),
      await h.plane.create({ tenant: 'tenant-b', target: 'fake', input: 3 }, { wait: 'started' }),
    ];
    const stored = (await h.store.getEnvelope(broken.envelope.id))!;
    await h.store.updateEnvelope(
      {
        ...stored,
        acceptance: { status: 'pending', reasons: [], schema: { $ref: 'https://example.com/gone' } },
      },
      stored.version,
      [],
    );
    for (const { envelope } of [broken, ...others]) h.remote.set(envelope.remoteId!, 'succeeded');
    await h.plane.reconcileNow('fake');
    const after = await h.plane.get(T, broken.envelope.id);
    expect([after.state, after.acceptance?.status]).toEqual(['succeeded', 'rejected']);
    for (const { envelope } of others)
      expect((await h.plane.get('tenant-b', envelope.id)).state).toBe('succeeded');
  });
});

describe('webhook credentials come before the body', () => {
  it("a delivery without the job's token is refused before anything parses its body", async () => {
    h = await harness(opts);
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 1 }, { wait: 'started' });
    const parses = () => h!.remote.calls.filter((c) => c.method === 'parseWebhook').length;
    const before = parses();
    const forged = {
      headers: { authorization: 'Bearer forged' },
      rawBody: '{"not": ',
      envelopeId: envelope.id,
    };
    await expect(h.plane.handleWebhook('fake', forged)).rejects.toMatchObject({ code: 'unauthenticated' });
    expect(parses()).toBe(before);
    // The job's own token still gets its body parsed and processed.
    h.remote.set(envelope.remoteId!, 'succeeded');
    expect((await h.plane.handleWebhook('fake', lastPush(envelope.id))).status).toBe('observed');
    expect(parses()).toBe(before + 1);
  });
});
