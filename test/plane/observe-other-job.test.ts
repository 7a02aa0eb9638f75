import { afterEach, expect, it } from 'vitest';
import { harness, type Harness } from './harness.ts';
import { observe } from '../../src/plane/observe.ts';
import type { PlaneContext } from '../../src/plane/context.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

it('a snapshot of another remote job than the one bound never moves the envelope (a replaced job reporting late)', async () => {
  h = await harness();
  const { envelope } = await h.plane.create({ tenant: 't', target: 'fake', input: 'x' }, { wait: 'started' });
  const result = await h.plane.observe(envelope.id, {
    remoteId: 'some-older-job',
    contextId: envelope.contextId,
    state: 'succeeded',
    nativeState: 'completed',
    remoteVersion: null,
    stateTimestamp: null,
  });
  expect(result.written).toBe(false);
  const after = await h.plane.get('t', envelope.id);
  expect(after.state).not.toBe('succeeded');
  expect(after.remoteId).toBe(envelope.remoteId);
});

it('an observation decided against a stale record the caller held is decided again on the stored one', async () => {
  h = await harness();
  const { envelope } = await h.plane.create({ tenant: 't', target: 'fake', input: 'x' }, { wait: 'started' });
  const held = await h.store.getEnvelope(envelope.id);
  // Another writer moves the record on after the caller's copy was taken.
  await h.plane.cancel('t', envelope.id, 'bob');
  const ctx = (h.plane as unknown as { ctx: PlaneContext }).ctx;
  const job = h.remote.jobs.get(envelope.remoteId!)!;
  const result = await observe(
    ctx,
    envelope.id,
    { ...h.remote.snapshot(job), state: 'running', statusMessage: 'two', remoteVersion: job.ts + 1 },
    'stream',
    { known: held! },
  );
  expect(result.written).toBe(true);
  const after = await h.plane.get('t', envelope.id);
  expect(after.statusMessage).toBe('two');
  expect(after.state).toBe('cancel_requested');
  expect(after.cancel?.requestedBy).toBe('bob');
});
