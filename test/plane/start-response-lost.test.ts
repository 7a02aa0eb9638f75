import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './harness.ts';

/**
 * A start whose answer was lost, on a remote that can neither find the job (no list) nor deduplicate a
 * resend (no idempotent start): MCP tools/call and OpenAI create. One rule for every such connector
 * (lost-policy.ts handleStartResponseLost): `unknown` with reason `start_response_lost`, then the lost
 * policy; never `lost`, because the remote may well hold the job.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T = 'tenant-a';
const unfindable = { idempotentStart: false, list: false };
const quiet = { delivery: { stream: false, push: false, poll: false } };

async function lostStart(options: Parameters<typeof harness>[0]) {
  h = await harness({ ...quiet, ...options }, unfindable);
  h.remote.dedupMessageIds = false;
  h.remote.failNext('start-after'); // the remote created the job; its answer never came back
  const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'x' }, { wait: 'started' });
  expect(envelope.remoteId).toBeNull();
  return envelope;
}

describe('a lost start answer on a remote that can neither find nor deduplicate the job', () => {
  it('escalate: unknown with the reason, never sent again, and reconciliation rounds add nothing', async () => {
    const envelope = await lostStart({ lostPolicy: 'escalate' });
    await h!.advance(70_000);
    const after = await h!.plane.get(T, envelope.id);
    expect(after.state).toBe('unknown');
    expect(after.reconciliation).toMatchObject({ result: 'escalated', attempts: 1 });
    expect(after.reconciliation?.note).toMatch(/can neither find the job nor deduplicate a resend/);
    const events = await h!.plane.events(T, { afterSeq: 0, envelopeId: envelope.id });
    const lost = events.filter((e) => e.data.reason === 'start_response_lost');
    expect(lost).toHaveLength(1);
    expect(lost[0]!.data).toMatchObject({ to: 'unknown', policy: 'escalate', attempt: 1 });
    expect(events.some((e) => e.type === 'lost')).toBe(false);

    // Many reconciliation rounds later: still one start, one decision, not terminal.
    await h!.advance(3 * 600_000);
    expect(h!.remote.calls.filter((c) => c.method === 'start')).toHaveLength(1);
    const later = await h!.plane.get(T, envelope.id);
    expect(later.state).toBe('unknown');
    const again = await h!.plane.events(T, { afterSeq: 0, envelopeId: envelope.id });
    expect(again.filter((e) => e.data.reason === 'start_response_lost')).toHaveLength(1);
    expect((await h!.plane.signals()).escalated).toBe(1);
  });

  it('resubmit: sent again once, the event says a second job may run, and the new job is followed', async () => {
    const envelope = await lostStart({ lostPolicy: 'resubmit' });
    await h!.advance(70_000);
    const after = await h!.plane.get(T, envelope.id);
    // Both jobs exist on the remote: the unseen first one and the resubmission, which the plane follows.
    expect(h!.remote.jobs.size).toBe(2);
    expect(after.remoteId).toBe('r2');
    expect(after.reconciliation?.result).toBe('resubmitted');
    const events = await h!.plane.events(T, { afterSeq: 0, envelopeId: envelope.id });
    const lost = events.find((e) => e.data.reason === 'start_response_lost');
    expect(lost?.data).toMatchObject({ to: 'unknown', policy: 'resubmit', attempt: 1 });
    expect(events.find((e) => e.type === 'resubmitted')?.data).toMatchObject({ remoteId: 'r2' });
    expect((await h!.plane.signals()).resubmitted).toBe(1);
    h!.remote.set('r2', 'succeeded');
    await h!.advance(600_000);
    expect((await h!.plane.get(T, envelope.id)).state).toBe('succeeded');
  });

  it('a start refused before anything was sent is simply tried again: no policy, one job', async () => {
    h = await harness(quiet, unfindable);
    h.remote.startFault = 'refused';
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'x' }, { wait: 'started' });
    h.remote.startFault = null;
    await h.advance(70_000);
    const after = await h.plane.get(T, envelope.id);
    expect(after.remoteId).toBe('r1');
    expect(after.state).toBe('accepted');
    const events = await h.plane.events(T, { afterSeq: 0, envelopeId: envelope.id });
    expect(events.some((e) => e.data.reason === 'start_response_lost')).toBe(false);
  });
});
