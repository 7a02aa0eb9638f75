import { afterEach, describe, expect, it, vi } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import { KEY_A, KEY_B, planeApp } from './plane-app-fixture.ts';

/**
 * GET /v1/costs sums every task of the tenant: a read that grows with the tasks stored. It is kept per
 * tenant and refreshed in the background once older than costsMaxAgeMs (30 s by default), so requests
 * cost the store one read per tenant per 30 s however many arrive, and each says how old its figures are.
 */
let fx: Awaited<ReturnType<typeof planeApp>> | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

type Costs = { targets: Array<{ target: string; tasks: number }>; ageSeconds: number };
const AUTH_A = { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' };

/** A plane on a virtual clock with tenant alpha's task created from `body`, and alpha's accepted counts. */
async function withTask(body: Record<string, unknown>) {
  fx = await planeApp({ limitsClock: new VirtualClock(1_700_000_000_000) });
  const f = fx;
  const created = await f.fetch('/v1/tasks?wait=started', {
    method: 'POST',
    headers: AUTH_A,
    body: JSON.stringify({ target: 'fake', input: 'x', ...body }),
  });
  expect(created.status).toBe(201);
  const task = (await created.json()) as { id: string; remoteId: string };
  const accepted = async () => {
    const res = await f.fetch('/v1/costs', { headers: AUTH_A });
    return ((await res.json()) as { targets: Array<{ target: string; accepted: number }> }).targets;
  };
  return { f, task, accepted };
}

describe('GET /v1/costs', () => {
  it('reads each tenant’s tasks at most once per 30 s, in the background, and says how old the figures are', async () => {
    const clock = new VirtualClock(1_700_000_000_000);
    fx = await planeApp({ limitsClock: clock });
    const f = fx;
    const reads = vi.spyOn(f.store, 'summarizeUsage');
    const costs = async (key: string): Promise<Costs> => {
      const res = await f.fetch('/v1/costs', { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
      return (await res.json()) as Costs;
    };
    // The tenant's first request waits for the read.
    expect(await costs(KEY_A)).toEqual({ targets: [], ageSeconds: 0 });
    expect(reads).toHaveBeenCalledTimes(1);
    const res = await f.fetch('/v1/tasks?wait=started', {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
      body: JSON.stringify({ target: 'fake', input: 'x' }),
    });
    expect(res.status).toBe(201);
    // Any number of requests within the age: the kept figures, no read.
    await clock.advance(10_000);
    const burst = await Promise.all(Array.from({ length: 20 }, () => costs(KEY_A)));
    for (const b of burst) expect(b).toEqual({ targets: [], ageSeconds: 10 });
    expect(reads).toHaveBeenCalledTimes(1);
    // Another tenant has figures of its own (never alpha's).
    expect(await costs(KEY_B)).toEqual({ targets: [], ageSeconds: 0 });
    expect(reads).toHaveBeenCalledTimes(2);
    expect(reads.mock.calls.map(([q]) => q.tenant)).toEqual(['alpha', 'beta']);
    // Past the age: this request answers with what it has and starts one read, which the next one gets.
    await clock.advance(21_000);
    expect(await costs(KEY_A)).toEqual({ targets: [], ageSeconds: 31 });
    expect(reads).toHaveBeenCalledTimes(3);
    const fresh = await costs(KEY_A);
    expect(fresh.ageSeconds).toBe(0);
    expect(fresh.targets).toMatchObject([{ target: 'fake', tasks: 1 }]);
    expect(reads).toHaveBeenCalledTimes(3);
  });

  it('counts a person’s acceptance decision at once, not after the figures age', async () => {
    const { f, task, accepted } = await withTask({});
    f.remote.set(task.remoteId, 'succeeded');
    await f.plane.reconcileNow();
    expect((await f.plane.get('alpha', task.id)).state).toBe('succeeded');
    expect(await accepted()).toMatchObject([{ target: 'fake', accepted: 0 }]);
    const decided = await f.fetch(`/v1/tasks/${task.id}/acceptance`, {
      method: 'POST',
      headers: AUTH_A,
      body: JSON.stringify({ decision: 'accepted', reason: 'checked by hand' }),
    });
    expect(decided.status).toBe(200);
    expect(await accepted()).toMatchObject([{ target: 'fake', accepted: 1 }]);
  });

  it('counts the plane’s own acceptance decision (the schema check at completion) at once', async () => {
    const { f, task, accepted } = await withTask({
      acceptance: { schema: { type: 'object', required: ['total'] } },
    });
    expect(await accepted()).toMatchObject([{ target: 'fake', accepted: 0 }]);
    f.remote.set(task.remoteId, 'succeeded', { artifacts: [{ artifactId: 'a', content: { total: 3 } }] });
    await f.plane.reconcileNow();
    expect((await f.plane.get('alpha', task.id)).acceptance?.status).toBe('accepted');
    // No time has passed: the kept figures were dropped by the decision, not aged out.
    expect(await accepted()).toMatchObject([{ target: 'fake', accepted: 1 }]);
  });
});
