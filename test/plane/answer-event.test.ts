import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './harness.ts';

/**
 * The input_answered event says which request was answered and keeps the answer given (the dashboard's
 * timeline shows it): the value itself up to 4 KiB of JSON, past that only its size.
 */
const T = 'tenant-answers';
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function waitingOnTwo(h: Harness) {
  const { envelope } = await h.plane.create({ tenant: T, target: 'fake', input: 'ask' }, { wait: 'started' });
  const first = { requestId: 'tool-1', prompt: 'Allow ls?' };
  const second = { requestId: 'tool-2', prompt: 'Allow cat?' };
  // The remote waits; the plane hears of both requests at once (as from a Claude session).
  h.remote.set(envelope.remoteId!, 'waiting_for_input', { inputRequest: first });
  const job = h.remote.jobs.get(envelope.remoteId!)!;
  await h.plane.observe(
    envelope.id,
    {
      ...h.remote.snapshot(job),
      state: 'waiting_for_input',
      remoteVersion: job.ts + 1,
      stateTimestamp: job.ts + 1,
      inputRequest: first,
      inputRequests: [first, second],
    },
    'poll',
  );
  return envelope.id;
}

const answered = async (h: Harness, id: string) =>
  (await h.plane.events(T, { afterSeq: 0, envelopeId: id, limit: 100 })).filter(
    (e) => e.type === 'input_answered',
  );

describe('input_answered', () => {
  it('names the request answered, not the first one open, and keeps the value', async () => {
    h = await harness();
    const id = await waitingOnTwo(h);
    await h.plane.answer(T, id, { requestId: 'tool-2', value: { result: 'deny' }, actor: 'ana' });
    expect((await answered(h, id)).map((e) => e.data)).toEqual([
      expect.objectContaining({ requestId: 'tool-2', value: { result: 'deny' }, actor: 'ana' }),
    ]);
  });

  it('keeps only the size of an answer over 4 KiB', async () => {
    h = await harness();
    const id = await waitingOnTwo(h);
    const big = 'x'.repeat(5000);
    await h.plane.answer(T, id, { requestId: 'tool-1', value: big });
    const [event] = await answered(h, id);
    expect(event!.data).not.toHaveProperty('value');
    expect(event!.data.valueChars).toBe(JSON.stringify(big).length);
  });
});
