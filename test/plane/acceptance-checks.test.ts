import { afterEach, describe, expect, it } from 'vitest';
import { inputHash } from '../../src/core/canonical-json.ts';
import { harness, type Harness } from './harness.ts';

/**
 * Acceptance beyond a schema (docs/plane.md "Acceptance"): artifact hash pins and a required receipt run
 * in order after the schema, each recorded with its verdict and reasons; a person's decision is recorded
 * with who made it; none of it changes the task's state.
 */
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T = 'tenant-a';
const receipt = { receiptId: 'rcpt_42', amountCents: 1250 };

async function run(acceptance: Record<string, unknown>, content: unknown = receipt) {
  const { envelope } = await h!.plane.create(
    { tenant: T, target: 'fake', input: 1, acceptance },
    { wait: 'started' },
  );
  await h!.settle();
  h!.remote.set(envelope.remoteId!, 'succeeded', { artifacts: [{ artifactId: 'receipt', content }] });
  await h!.settle();
  return h!.plane.get(T, envelope.id);
}

describe('acceptance checks', () => {
  it('schema, hash pin and receipt all pass: accepted, each check listed, the receipt id kept', async () => {
    h = await harness({ delivery: { stream: true, push: false } });
    const env = await run({
      schema: { type: 'object', required: ['receiptId'] },
      artifactHashes: { receipt: inputHash(receipt) },
      receipt: { pointer: '/receiptId' },
    });
    expect(env.state).toBe('succeeded');
    expect(env.acceptance).toMatchObject({
      status: 'accepted',
      reasons: [],
      receiptId: 'rcpt_42',
      checks: [
        { check: 'schema', verdict: 'passed', reasons: [] },
        { check: 'artifact_hash', verdict: 'passed', reasons: [] },
        { check: 'receipt', verdict: 'passed', reasons: [] },
      ],
    });
  });

  it('a pinned hash that differs rejects with both hashes named, and the later checks do not run', async () => {
    h = await harness({ delivery: { stream: true, push: false } });
    const pinned = inputHash({ receiptId: 'rcpt_other' });
    const env = await run({ artifactHashes: { receipt: pinned }, receipt: { pointer: '/receiptId' } });
    expect(env.state).toBe('succeeded'); // completion is not acceptance
    expect(env.acceptance?.status).toBe('rejected');
    expect(env.acceptance?.checks).toEqual([
      {
        check: 'artifact_hash',
        verdict: 'failed',
        reasons: [`artifact receipt hashes to ${inputHash(receipt)}, not the pinned ${pinned}`],
      },
    ]);
    expect(env.acceptance?.reasons).toEqual(env.acceptance?.checks?.[0]?.reasons);
  });

  it('a pinned artifact that never came and a missing receipt each reject with the reason', async () => {
    h = await harness({ delivery: { stream: true, push: false } });
    const noArtifact = await run({ artifactHashes: { invoice: inputHash('x') } });
    expect(noArtifact.acceptance?.reasons).toEqual(['artifact invoice was not produced']);
    const noReceipt = await run({ receipt: { pointer: '/charge/id' } }, { amountCents: 5 });
    expect(noReceipt.acceptance).toMatchObject({
      status: 'rejected',
      reasons: ['no receipt id at /charge/id in the output'],
    });
  });

  it('bad pins and receipts are refused at create, naming the field', async () => {
    h = await harness({ delivery: { stream: true, push: false } });
    const create = (acceptance: unknown) =>
      h!.plane.create({ tenant: T, target: 'fake', input: 1, acceptance: acceptance as never });
    await expect(create({ artifactHashes: { report: 'md5:abc' } })).rejects.toMatchObject({
      code: 'invalid_argument',
      field: 'acceptance.artifactHashes.report',
    });
    await expect(create({ artifactHashes: [] })).rejects.toMatchObject({
      field: 'acceptance.artifactHashes',
    });
    await expect(create({ receipt: { pointer: 'receiptId' } })).rejects.toMatchObject({
      field: 'acceptance.receipt.pointer',
    });
  });

  it('a person overrules the checks; the record and the acceptance event say who and why', async () => {
    h = await harness({ delivery: { stream: true, push: false } });
    const env = await run({ receipt: { pointer: '/missing' } });
    expect(env.acceptance?.status).toBe('rejected');
    const decided = await h.plane.decideAcceptance(T, env.id, {
      decision: 'accepted',
      reason: 'receipt confirmed by phone with the bank',
      keyId: 'key_ops',
      actor: 'ana@example.com',
    });
    expect(decided.state).toBe('succeeded');
    expect(decided.acceptance).toMatchObject({
      status: 'accepted',
      reasons: ['receipt confirmed by phone with the bank'],
      decidedBy: { keyId: 'key_ops', actor: 'ana@example.com' },
      checks: [
        { check: 'receipt', verdict: 'failed' },
        { check: 'person', verdict: 'passed', reasons: ['receipt confirmed by phone with the bank'] },
      ],
    });
    const events = await h.plane.events(T, { afterSeq: 0, envelopeId: env.id });
    expect(events.filter((e) => e.type === 'acceptance').map((e) => e.data)).toEqual([
      expect.objectContaining({ status: 'rejected' }),
      expect.objectContaining({
        source: 'person',
        status: 'accepted',
        by: { keyId: 'key_ops', actor: 'ana@example.com' },
      }),
    ]);
    // Another tenant cannot decide it; a bad decision names its field.
    await expect(
      h.plane.decideAcceptance('tenant-b', env.id, {
        decision: 'rejected',
        reason: 'x',
        keyId: null,
        actor: null,
      }),
    ).rejects.toMatchObject({ code: 'not_found' });
    await expect(
      h.plane.decideAcceptance(T, env.id, {
        decision: 'maybe' as never,
        reason: 'x',
        keyId: null,
        actor: null,
      }),
    ).rejects.toMatchObject({ field: 'decision' });
    await expect(
      h.plane.decideAcceptance(T, env.id, { decision: 'rejected', reason: ' ', keyId: null, actor: null }),
    ).rejects.toMatchObject({ field: 'reason' });
  });

  it('a task still running cannot be accepted or rejected', async () => {
    h = await harness({ delivery: { stream: true, push: false } });
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 1 }, { wait: 'started' });
    await expect(
      h.plane.decideAcceptance(T, envelope.id, {
        decision: 'accepted',
        reason: 'early',
        keyId: null,
        actor: null,
      }),
    ).rejects.toMatchObject({ code: 'conflict' });
  });
});
