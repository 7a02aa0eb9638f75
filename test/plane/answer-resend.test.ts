import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './harness.ts';

const T = 'tenant-a';
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/**
 * Regression (found by test/e2e/plane-under-faults): the plane recorded an input answer, was SIGKILLed
 * before the call reached the agent, and after its restart the task waited for input forever, while
 * the API refused a second answer ("already answered"). The answer is now kept with its messageId and
 * sent again, by recovery and by reconciliation, whenever the job still waits on the same request.
 */
async function answeredButNeverSent(h: Harness): Promise<{ id: string; rid: string }> {
  const { envelope } = await h.plane.create(
    { tenant: T, target: 'fake', input: 'work' },
    { wait: 'started' },
  );
  await h.settle();
  const rid = (await h.plane.get(T, envelope.id)).remoteId!;
  h.remote.set(rid, 'waiting_for_input', { inputRequest: { requestId: 'q1', prompt: 'Which edition?' } });
  await h.settle();
  // What a plane that dies right after recording the answer leaves in the store.
  const env = (await h.store.getEnvelope(envelope.id))!;
  expect(env.state).toBe('waiting_for_input');
  await h.store.updateEnvelope(
    {
      ...env,
      pendingInput: {
        ...env.pendingInput!,
        answeredAt: h.clock.now(),
        answer: { messageId: 'msg_fixed', value: 'second' },
      },
    },
    env.version,
    [{ envelopeId: env.id, tenant: T, type: 'input_answered', at: h.clock.now(), data: {} }],
  );
  return { id: envelope.id, rid };
}

describe('input answers whose delivery is in doubt', () => {
  it('are sent again when the plane restarts', async () => {
    h = await harness({ delivery: { stream: true, push: false }, reconcile: { enabled: false } });
    const { id } = await answeredButNeverSent(h);
    expect(h.remote.calls.filter((c) => c.method === 'answer')).toHaveLength(0);
    await h.restart();
    await h.settle();
    expect(h.remote.calls.filter((c) => c.method === 'answer')).toHaveLength(1);
    const after = await h.plane.get(T, id);
    expect(after.state).toBe('running');
    expect(after.nativeState).toBe('ANSWERED:"second"');
  });

  it('are sent again by reconciliation when the job still waits after the call could have ended', async () => {
    h = await harness({
      delivery: { stream: true, push: false },
      requestTimeoutMs: 1_000,
      reconcile: { intervalMs: 60_000 },
    });
    const { id } = await answeredButNeverSent(h);
    await h.advance(61_000);
    expect(h.remote.calls.filter((c) => c.method === 'answer')).toHaveLength(1);
    expect((await h.plane.get(T, id)).state).toBe('running');
  });

  it('a job that moved on is not answered twice', async () => {
    h = await harness({ delivery: { stream: true, push: false }, reconcile: { enabled: false } });
    const { id, rid } = await answeredButNeverSent(h);
    h.remote.set(rid, 'running');
    await h.settle();
    await h.restart();
    await h.settle();
    expect(h.remote.calls.filter((c) => c.method === 'answer')).toHaveLength(0);
    expect((await h.plane.get(T, id)).state).toBe('running');
  });
});
