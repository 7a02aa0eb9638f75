import { afterEach, describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/core/envelope.ts';
import { createVerifierTransport } from '../../src/server/verifier-transport.ts';
import { startVerifier } from '../server/verifier-server.ts';
import { harness, type Harness } from './harness.ts';

let h: Harness | undefined;
let closeVerifier: (() => Promise<void>) | undefined;
afterEach(async () => {
  await h?.close();
  await closeVerifier?.();
  h = undefined;
  closeVerifier = undefined;
});

const T = 'tenant-a';

/** Reads the envelope until `done` holds: the verifier answers over a real socket, outside virtual time. */
async function until(id: string, done: (e: Envelope) => boolean): Promise<Envelope> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const env = (await h!.store.getEnvelope(id))!;
    if (done(env)) return env;
    if (Date.now() > deadline) throw new Error(`never: ${JSON.stringify(env.acceptance)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('acceptance verifier: durable across a plane restart', () => {
  it('a verification waiting for its retry when the plane stops is resumed by the next plane', async () => {
    const verifier = await startVerifier([{ status: 503 }, { status: 200, body: { accepted: true } }]);
    closeVerifier = () => verifier.close();
    h = await harness(
      { acceptance: { verifierRetryMs: 60_000 } },
      {},
      1,
      {},
      { verifier: createVerifierTransport({ allowPrivate: true }) },
    );
    const { envelope } = await h.plane.create(
      { tenant: T, target: 'fake', input: 'charge', acceptance: { verifier: { url: verifier.url } } },
      { wait: 'started' },
    );
    h.remote.set(envelope.remoteId!, 'succeeded', { artifacts: [{ artifactId: 'out', content: { ok: 1 } }] });
    await verifier.requests(1);
    const waiting = await until(envelope.id, (e) => e.acceptance?.verification?.attempts === 1);
    expect(waiting.acceptance).toMatchObject({ status: 'pending', verification: { lastError: 'HTTP 503' } });
    const dueAt = waiting.acceptance!.verification!.dueAt!;
    expect(dueAt).toBeGreaterThanOrEqual(h.clock.now());

    await h.restart();
    expect(verifier.received).toHaveLength(1);
    await h.advance(dueAt - h.clock.now() + 1);
    await verifier.requests(2);
    const done = await until(envelope.id, (e) => e.acceptance?.status !== 'pending');
    expect(done.acceptance).toMatchObject({
      status: 'accepted',
      verification: { dueAt: null, attempts: 2, outcome: 'answered' },
    });
    expect(verifier.received).toHaveLength(2);
  });

  it("a target's verifier checks every task of that target, even one that asked for no acceptance", async () => {
    const verifier = await startVerifier([
      { status: 200, body: { accepted: false, reasons: ['not in the ledger'] } },
    ]);
    closeVerifier = () => verifier.close();
    h = await harness(
      { acceptance: { verifiers: { fake: { url: verifier.url, maxAttempts: 2 } } } },
      {},
      1,
      {},
      { verifier: createVerifierTransport({ allowPrivate: true }) },
    );
    const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'x' }, { wait: 'started' });
    expect(envelope.acceptance).toMatchObject({
      status: 'pending',
      verifier: { url: verifier.url, from: 'target', maxAttempts: 2 },
    });
    h.remote.set(envelope.remoteId!, 'succeeded');
    const done = await until(envelope.id, (e) => e.acceptance?.status !== 'pending');
    expect(done.acceptance).toMatchObject({ status: 'rejected', reasons: ['not in the ledger'] });
  });

  it('a plane without a verifier transport refuses a task that names one', async () => {
    h = await harness();
    await expect(
      h.plane.create({
        tenant: T,
        target: 'fake',
        input: 'x',
        acceptance: { verifier: { url: 'https://v.example/' } },
      }),
    ).rejects.toMatchObject({ code: 'invalid_argument', field: 'acceptance.verifier.url' });
  });
});
