import { afterEach, expect, it } from 'vitest';
import { harness, type Harness } from './harness.ts';

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
