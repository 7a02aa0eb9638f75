import { afterEach, describe, expect, it } from 'vitest';
import { isTerminal } from '../../src/core/states.ts';
import { peerPlane, type PeerPlane } from './peer-plane.ts';
import { startV03Peer, type V03Peer } from './v03-sdk-peer.ts';

/**
 * The plane's engine, wired as `taskplane serve` wires it, against an A2A 0.3 agent on the official
 * SDK's 0.3 compatibility layer, over JSON-RPC and over HTTP+JSON: jobs run to the agent's own
 * outcome over the 0.3 wire, input is answered, cancel is confirmed, and with no stream and no
 * ListTasks (0.3 has none) reconciliation finds the outcome by asking per task.
 */
const open: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const o of open.reverse()) await o.close().catch(() => {});
  open.length = 0;
});

async function setup(
  binding: 'JSONRPC' | 'HTTP+JSON',
  planeOptions: Parameters<typeof peerPlane>[1] = {},
): Promise<{ peer: V03Peer; p: PeerPlane }> {
  const peer = await startV03Peer(binding);
  open.push(peer);
  const p = await peerPlane(peer.base, planeOptions);
  open.push(p);
  return { peer, p };
}

describe.each(['JSONRPC', 'HTTP+JSON'] as const)('plane → A2A 0.3 agent over %s', (binding) => {
  it('a job streams to succeeded with the artifact', async () => {
    const { p } = await setup(binding);
    const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'go' });
    const done = await p.until(envelope.id, (e) => isTerminal(e.state), 'terminal');
    expect(done.state).toBe('succeeded');
    expect(done.nativeState).toBe('TASK_STATE_COMPLETED');
    const [artifact] = await p.plane.artifacts('t', envelope.id);
    expect(artifact?.parts).toEqual([{ kind: 'data', data: { answer: 42, said: 'go' } }]);
    expect(p.connector.revision).toMatch(/ A2A\/0\.3$/);
  });

  it('input-required is answered and the job completes', async () => {
    const { p } = await setup(binding);
    const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'ask' });
    const waiting = await p.until(envelope.id, (e) => e.state === 'waiting_for_input', 'waiting');
    expect(waiting.pendingInput?.prompt).toBe('Which edition?');
    await p.plane.answer('t', envelope.id, { requestId: waiting.pendingInput!.requestId, value: 'second' });
    const done = await p.until(envelope.id, (e) => isTerminal(e.state), 'terminal');
    expect(done.state).toBe('succeeded');
  });

  it('a cancel is confirmed by the agent', async () => {
    const { p } = await setup(binding);
    const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'hold' });
    await p.until(envelope.id, (e) => e.remoteId !== null, 'bound');
    await p.plane.cancel('t', envelope.id);
    const done = await p.until(envelope.id, (e) => isTerminal(e.state), 'terminal');
    expect(done.state).toBe('cancelled');
    expect(done.cancel?.acknowledgedAt).not.toBeNull();
  });

  it('without stream or push, reconciliation asks per task (no ListTasks in 0.3)', async () => {
    const { peer, p } = await setup(binding, {
      delivery: { stream: false, push: false, poll: true },
      poll: { intervalMs: 600_000, maximumIntervalMs: 600_000 },
      // A job is read on its own once it has been quiet this long (the start answered just now).
      reconcile: { intervalMs: 100 },
    });
    const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'hold' });
    await p.until(envelope.id, (e) => e.remoteId !== null, 'bound');
    expect(p.connector.capabilities.list).toBe(false);
    peer.finish();
    const done = await p.until(envelope.id, (e) => isTerminal(e.state), 'terminal');
    expect(done.state).toBe('succeeded');
  });
});
