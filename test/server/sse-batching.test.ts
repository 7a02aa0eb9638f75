import { afterEach, describe, expect, it } from 'vitest';
import { createParser } from 'eventsource-parser';
import { VirtualClock } from '../../src/core/clock.ts';
import { KEY_A, planeApp } from './plane-app-fixture.ts';

/**
 * A busy SSE stream sends at most once per 250 ms (event-stream.ts BATCH_MS): a quiet stream sends a
 * change at once, and what happens within 250 ms of a send goes out together in one write when the
 * interval is over. Time is a virtual clock, so the interval is exact.
 */
type App = Awaited<ReturnType<typeof planeApp>>;
let app: App | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

const headers = { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' };
const turns = async (n = 30) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

/** The created events' task ids in one chunk of the stream. */
function createdIn(chunk: Uint8Array): string[] {
  const ids: string[] = [];
  const parser = createParser({
    onEvent: (ev) => {
      const e = JSON.parse(ev.data) as { type: string; envelopeId: string };
      if (e.type === 'created') ids.push(e.envelopeId);
    },
  });
  parser.feed(new TextDecoder().decode(chunk));
  return ids;
}

describe('SSE batching', () => {
  it('a quiet stream sends at once; changes within 250 ms of a send go out together when it is over', async () => {
    const clock = new VirtualClock(Date.parse('2026-12-01T00:00:00Z'));
    app = await planeApp({ clock, limitsClock: clock });
    const create = async (input: string) => {
      const res = await app!.fetch('/v1/tasks', {
        method: 'POST',
        headers,
        body: JSON.stringify({ target: 'fake', input }),
      });
      return ((await res.json()) as { id: string }).id;
    };
    const stream = await app.fetch('/v1/events?from=now', { headers });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    let next: Uint8Array | null = null;
    const read = () => {
      next = null;
      void reader.read().then((r) => (next = r.value ?? null));
    };

    read();
    const first = await create('first');
    await turns();
    // Quiet until now: sent without waiting.
    expect(next).not.toBeNull();
    expect(createdIn(next!)).toEqual([first]);

    read();
    const second = await create('second');
    const third = await create('third');
    await turns();
    expect(next).toBeNull();
    await clock.advance(249);
    await turns();
    expect(next).toBeNull();
    await clock.advance(1);
    await turns();
    // Both creates (and whatever else happened meanwhile) in one write.
    expect(next).not.toBeNull();
    expect(createdIn(next!)).toEqual([second, third]);
    await reader.cancel();
  });
});
