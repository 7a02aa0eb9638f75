import { afterEach, describe, expect, it } from 'vitest';
import { WEBHOOK_IDS_KEPT } from '../../src/plane/observe.ts';
import { harness, type Harness } from './harness.ts';

/** `webhookIds` and `lastEventId` are filled by the one observe path (they were never written before). */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T = 'tenant-a';

describe('envelope delivery fields', () => {
  it('keeps the last N webhook delivery ids, in order, without repeats', async () => {
    h = await harness({
      delivery: { stream: false, push: true, poll: false },
      publicUrl: 'http://127.0.0.1:9',
    });
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    const rid = envelope.remoteId!;
    const n = WEBHOOK_IDS_KEPT + 5;
    for (let i = 0; i < n; i++) {
      h.clock.setTimer(0, () => {});
      await h.advance(10);
      h.remote.set(
        rid,
        i % 2 ? 'running' : 'waiting_for_input',
        i % 2 ? {} : { inputRequest: { requestId: `q${i}`, prompt: 'p' } },
      );
    }
    const ids: string[] = [];
    for (const p of h.remote.pushes) {
      const req = {
        headers: { authorization: `Bearer ${p.token}` },
        rawBody: p.body,
        envelopeId: envelope.id,
      };
      await h.plane.handleWebhook('fake', req);
      await h.plane.handleWebhook('fake', req); // a duplicate delivery is not listed twice
      ids.push((JSON.parse(p.body) as { deliveryId: string }).deliveryId);
    }
    const env = await h.plane.get(T, envelope.id);
    expect(ids).toHaveLength(n);
    expect(env.webhookIds).toEqual(ids.slice(-WEBHOOK_IDS_KEPT));
    expect(env.lastEventId).toBeNull();
  });

  it('records the id of the last applied stream event, and a duplicate frame does not move it', async () => {
    h = await harness();
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' });
    await h.settle();
    const rid = envelope.remoteId!;
    // The subscribe's first frame repeats the start snapshot: a duplicate, so nothing is written for it.
    expect((await h.plane.get(T, envelope.id)).lastEventId).toBeNull();
    h.remote.set(rid, 'running');
    await h.settle();
    const running = await h.plane.get(T, envelope.id);
    expect(running.lastEventId).toMatch(/^ev\d+$/);
    h.remote.set(rid, 'succeeded');
    await h.settle();
    const done = await h.plane.get(T, envelope.id);
    expect(done.state).toBe('succeeded');
    expect(Number(done.lastEventId!.slice(2))).toBeGreaterThan(Number(running.lastEventId!.slice(2)));
    expect(done.webhookIds).toEqual([]);
  });
});
