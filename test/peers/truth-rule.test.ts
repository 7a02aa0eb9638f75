import { afterEach, describe, expect, it, vi } from 'vitest';
import { isTerminal } from '../../src/core/states.ts';
import { peerPlane, type PeerPlane } from './peer-plane.ts';
import { startSdkPeer, type Binding, type Garble, type SdkPeer } from './sdk-peer.ts';

/**
 * The truth rule against agents built on the official @a2a-js/sdk server: the plane records a terminal
 * state only from the agent's own word, our own confirmed cancel, or a policy the user configured.
 */
const open: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const o of open.reverse()) await o.close().catch(() => {});
  open.length = 0;
});

async function setup(
  peerOptions: Parameters<typeof startSdkPeer>[0],
  planeOptions: Parameters<typeof peerPlane>[1] = {},
): Promise<{ peer: SdkPeer; p: PeerPlane }> {
  const peer = await startSdkPeer(peerOptions);
  open.push(peer);
  const p = await peerPlane(peer.base, planeOptions);
  open.push(p);
  return { peer, p };
}

describe('an agent whose card says streaming: false', () => {
  it('runs the first task after a plane start (started the way the card allows, not refused)', async () => {
    const { peer, p } = await setup({ streaming: false });
    const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'go' });
    const bound = await p.until(envelope.id, (e) => e.remoteId !== null || isTerminal(e.state), 'bound');
    expect(bound.state).not.toBe('failed');
    expect(peer.started).toContain(bound.remoteId);
    peer.finish();
    await p.plane.reconcileNow('peer');
    const done = await p.until(envelope.id, (e) => isTerminal(e.state), 'terminal');
    expect(done.state).toBe('succeeded');
  });
});

describe('a cancel while a streaming start is in flight', () => {
  it('is delivered once the remote id is known, and the job ends cancelled', async () => {
    const { peer, p } = await setup({ streaming: true, startDelayMs: 300 });
    const created = p.plane.create({ tenant: 't', target: 'peer', input: 'go' });
    await p.untilTrue(() => peer.received.length === 1, 'start reached the agent');
    const [env] = (await p.store.listEnvelopes({ tenant: 't' })).items;
    const first = await p.plane.cancel('t', env!.id);
    expect(first.state).toBe('cancel_requested');
    // A repeated cancel is idempotent and says what is still pending.
    const second = await p.plane.cancel('t', env!.id);
    expect(second.state).toBe('cancel_requested');
    expect(second.cancel?.pending).toBe('remote_id');
    await created;
    const done = await p.until(env!.id, (e) => isTerminal(e.state), 'terminal');
    expect(peer.cancels).toEqual([peer.received[0]]);
    expect(done.state).toBe('cancelled');
    expect(done.cancel?.acknowledgedAt).not.toBeNull();
  });

  it('the same holds when the task timeout fires during a slow start', async () => {
    const { peer, p } = await setup({ streaming: true, startDelayMs: 300 });
    const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'go', timeoutMs: 50 });
    const done = await p.until(envelope.id, (e) => isTerminal(e.state), 'terminal');
    expect(peer.cancels).toHaveLength(1);
    expect(done.state).toBe('cancelled');
    expect(done.cancel?.requestedBy).toBe('timeout');
  });
});

for (const oldRoute of ['html404', 'gateway404'] as const) {
  describe(`an agent redeployed while a task runs (old route answers ${oldRoute})`, () => {
    it('moves to the interface the new card offers and records the true outcome', async () => {
      const { peer, p } = await setup(
        { streaming: false, binding: 'JSONRPC' },
        {
          delivery: { stream: false, push: false, poll: true },
          poll: { intervalMs: 600_000, maximumIntervalMs: 600_000 },
        },
      );
      const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'go' });
      await p.until(envelope.id, (e) => e.remoteId !== null, 'bound');
      peer.redeploy({ binding: 'HTTP+JSON', path: '/v2/a2a', oldRoute });
      // While the agent cannot be reached at the old route the task stays open.
      await p.plane.reconcileNow('peer');
      let env = await p.plane.get('t', envelope.id);
      expect(isTerminal(env.state)).toBe(false);
      peer.finish();
      await p.plane.reconcileNow('peer');
      env = await p.until(envelope.id, (e) => isTerminal(e.state), 'terminal');
      expect(env.state).toBe('succeeded');
      const types = (await p.events(envelope.id)).map((e) => e.type);
      expect(types).toContain('card_changed');
      expect(types).not.toContain('lost');
      expect(p.connector.transport.binding).toBe('HTTP+JSON');
    });
  });
}

describe('what the agent says it is doing', () => {
  it('a status message without a new state is a status_message event; the task keeps running', async () => {
    const { peer, p } = await setup({ streaming: true });
    const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'go' });
    const bound = await p.until(envelope.id, (e) => e.remoteId !== null, 'bound');
    await p.until(envelope.id, (e) => e.state === 'running', 'running');
    peer.say(bound.remoteId!, 'step 2 of 3');
    const said = await p.until(envelope.id, (e) => e.statusMessage === 'step 2 of 3', 'status message');
    expect(said.state).toBe('running');
    const events = await p.plane.events('t', { afterSeq: 0, envelopeId: envelope.id });
    expect(events.filter((e) => e.type === 'status_message').map((e) => e.data.message)).toEqual([
      'step 2 of 3',
    ]);
    peer.finish();
    expect((await p.until(envelope.id, (e) => isTerminal(e.state), 'terminal')).state).toBe('succeeded');
  });
});

/**
 * A start whose answer cannot be read is no refusal: the agent may have created the task (here it did).
 * The job stays open, is found by its contextId (or started again with the same messageId) and is bound
 * to that one task; only the protocol's own error answer is a refusal.
 */
describe('a start answered with something that is not an A2A answer', () => {
  const cases: Array<{ garble: Garble; binding: Binding; streaming: boolean }> = [
    { garble: 'frame-not-json', binding: 'JSONRPC', streaming: true },
    { garble: 'frame-not-json', binding: 'HTTP+JSON', streaming: true },
    { garble: 'frame-not-jsonrpc', binding: 'JSONRPC', streaming: true },
    { garble: 'no-stream', binding: 'JSONRPC', streaming: true },
    { garble: 'no-stream', binding: 'HTTP+JSON', streaming: true },
    { garble: 'result-not-task', binding: 'JSONRPC', streaming: false },
    { garble: 'result-not-task', binding: 'HTTP+JSON', streaming: false },
    // A task with an empty id: the connector reads it, the engine will not bind a job to it.
    { garble: 'nameless-task', binding: 'JSONRPC', streaming: true },
    { garble: 'nameless-task', binding: 'HTTP+JSON', streaming: false },
  ];
  for (const { garble, binding, streaming } of cases)
    it(`${garble} over ${binding}: the job is bound to the task the agent made and ends as it does`, async () => {
      const { peer, p } = await setup({ streaming, binding, garbleFirstStart: garble });
      const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'go' });
      const bound = await p.until(envelope.id, (e) => e.remoteId !== null || isTerminal(e.state), 'bound');
      expect(bound.state).not.toBe('failed');
      // One task on the agent, the one the garbled start made: not refused, not started twice.
      expect(peer.received).toEqual([bound.remoteId]);
      peer.finish();
      // Without a stream the outcome is read by a poll or a reconciliation pass: asked for here.
      if (!streaming) await p.plane.reconcileNow('peer');
      const done = await p.until(envelope.id, (e) => isTerminal(e.state), 'terminal');
      expect(done.state).toBe('succeeded');
      expect(done.startAttempts).toBe(1);
      const changes = (await p.events(envelope.id)).filter((e) => e.type === 'state_changed');
      expect(changes.map((e) => e.data.to)).not.toContain('failed');
    });

  for (const binding of ['JSONRPC', 'HTTP+JSON'] as const)
    it(`a JSON-RPC or REST error answer over ${binding} is a refusal: failed, the agent's reason kept`, async () => {
      const { peer, p } = await setup({ streaming: true, binding, garbleFirstStart: 'refused' });
      const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'go' });
      const done = await p.until(envelope.id, (e) => isTerminal(e.state), 'terminal');
      expect(done.state).toBe('failed');
      expect(done.nativeState).toBe('start_refused');
      expect(done.error?.message).toContain('message.parts: empty');
      expect(peer.received).toEqual([]);
    });
});

describe('an agent moved behind a redirect', () => {
  for (const oldRoute of ['redirect308', 'redirect302'] as const)
    for (const binding of ['JSONRPC', 'HTTP+JSON'] as const)
      it(`${oldRoute} over ${binding}: a streaming start at the old route is no refusal; the task runs`, async () => {
        const { peer, p } = await setup({ streaming: true, binding });
        const first = await p.plane.create({ tenant: 't', target: 'peer', input: 'go' });
        await p.until(first.envelope.id, (e) => e.remoteId !== null, 'first bound');
        // Moved while the plane holds the card (max-age an hour): the next start goes to the old route.
        peer.redeploy({ path: '/v2/a2a', oldRoute });
        const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'go' });
        const bound = await p.until(envelope.id, (e) => e.remoteId !== null || isTerminal(e.state), 'bound');
        expect(bound.state).not.toBe('failed');
        expect(peer.received).toEqual([expect.any(String), bound.remoteId]);
        peer.finish();
        const done = await p.until(envelope.id, (e) => isTerminal(e.state), 'terminal');
        expect(done.state).toBe('succeeded');
        // A 308 keeps the request and is followed as fetch follows it; a 302 would turn it into a GET,
        // so it is a route that does not answer as A2A: the card is read again and names the new one.
        if (oldRoute === 'redirect302') expect(p.connector.revision).toContain(peer.url);
      });
});

describe("updates about another task in a task's stream", () => {
  it("are not this task's: it stays running without the other's artifact, and ends as itself", async () => {
    const { peer, p } = await setup({ streaming: true });
    const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'go' });
    const bound = await p.until(envelope.id, (e) => e.state === 'running', 'running');
    peer.stray(bound.remoteId!, 'sub-task-1');
    // The SDK server ends a stream at a final status, whichever task it names: the plane's next
    // subscription shows it read the stray frames. A status message then comes on that subscription.
    await vi.waitFor(async () => expect((await p.plane.signals()).requests.byKind.subscribe).toBe(1));
    peer.say(bound.remoteId!, 'still on it');
    const after = await p.until(envelope.id, (e) => e.statusMessage === 'still on it', 'said');
    expect(after.state).toBe('running');
    expect(after.artifacts).toEqual([]);
    peer.finish();
    const done = await p.until(envelope.id, (e) => isTerminal(e.state), 'terminal');
    expect(done.state).toBe('succeeded');
    expect(done.artifacts).toEqual([]);
  });
});

describe('an agent whose replicas disagree about the time', () => {
  it('a task ended "before" it last said WORKING (by a clock 5 s behind) is read as ended, not as stale', async () => {
    const { peer, p } = await setup(
      { streaming: false, endsClockBehindMs: 5_000 },
      {
        delivery: { stream: false, push: false, poll: true },
        poll: { intervalMs: 50, maximumIntervalMs: 50 },
      },
    );
    const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'go' });
    const running = await p.until(envelope.id, (e) => e.state === 'running', 'running');
    peer.finish();
    const done = await p.until(envelope.id, (e) => isTerminal(e.state), 'terminal');
    expect(done.state).toBe('succeeded');
    // Stamped 5 s before the WORKING the plane had read: the record keeps the later version.
    expect(done.stateTimestamp).toBeLessThan(running.stateTimestamp!);
    expect(done.remoteVersion).toBe(running.remoteVersion);
  });
});
