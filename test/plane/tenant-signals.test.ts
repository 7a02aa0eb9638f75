import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './harness.ts';

/** Regression: /v1/signals showed every tenant the process-wide counters, i.e. other tenants' jobs. */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('signals are scoped to the tenant', () => {
  it("tenant A's signals count only A's jobs; the process view counts all", async () => {
    h = await harness({
      delivery: { stream: true, push: true, poll: false },
      publicUrl: 'http://127.0.0.1:9',
    });
    const a = await h.plane.create({ tenant: 'A', target: 'fake', input: 'a1' }, { wait: 'started' });
    const b: string[] = [];
    for (let i = 0; i < 3; i++)
      b.push(
        (await h.plane.create({ tenant: 'B', target: 'fake', input: `b${i}` }, { wait: 'started' })).envelope
          .id,
      );
    await h.settle();
    // B's jobs do things A's do not: a drop and reattach each, a waiting input, a duplicate push.
    h.remote.dropStreams();
    await h.advance(120_000);
    for (const id of b)
      h.remote.set((await h.plane.get('B', id)).remoteId!, 'waiting_for_input', {
        inputRequest: { requestId: 'q', prompt: 'p' },
      });
    await h.settle();
    const push = h.remote.pushes.find((p) => p.url.includes(b[0]!))!;
    const req = { headers: { authorization: `Bearer ${push.token}` }, rawBody: push.body, envelopeId: b[0]! };
    await h.plane.handleWebhook('fake', req);
    await h.plane.handleWebhook('fake', req);
    await h.plane.reconcileNow();

    const sa = await h.plane.signals('A');
    const sb = await h.plane.signals('B');
    const all = await h.plane.signals();
    expect(sa.scope).toEqual({ kind: 'tenant', tenant: 'A' });
    expect(all.scope).toEqual({ kind: 'process' });
    expect(sa.requests.tasksTracked).toBe(1);
    expect(sb.requests.tasksTracked).toBe(3);
    expect(all.requests.tasksTracked).toBe(4);
    expect(sa.requests.total).toBe(h.plane.requestsFor(a.envelope.id));
    expect(sb.requests.total).toBe(b.reduce((n, id) => n + h!.plane.requestsFor(id), 0));
    expect(Object.values(sa.byState).reduce((x, y) => x + (y ?? 0), 0)).toBe(1);
    expect(sa.inputRequiredByAge.under1m).toBe(0);
    expect(sb.inputRequiredByAge.under1m).toBe(3);
    expect(sa.duplicatesAbsorbed.webhook).toBe(0);
    expect(sb.duplicatesAbsorbed.webhook).toBe(1);
    expect(sa.streamDrops).toBe(1);
    expect(sb.streamDrops).toBe(3);
    // Counts about no single job stay in the process view only.
    expect(all.reconcileRounds).toBeGreaterThan(0);
    expect(sa.reconcileRounds + sb.reconcileRounds).toBe(0);
    expect(sa.requests.targetLevel).toBe(0);
    // A tenant with no jobs sees zeros, not someone else's figures.
    const none = await h.plane.signals('C');
    expect(none.requests.total).toBe(0);
    expect(none.byState).toEqual({});
  });
});
