import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterEach, describe, expect, it } from 'vitest';
import { collect, nextCreated, startHarness, type Harness } from './support.ts';

const INPUT = 'tell me a short story about a lighthouse keeper and the sea';

let h: Harness | undefined;
afterEach(async () => {
  await h?.emu.close();
  h = undefined;
});

const textOf = (r: OpenAI.Responses.Response) =>
  r.output
    .flatMap((item) => (item.type === 'message' ? item.content : []))
    .map((c) => (c.type === 'output_text' ? c.text : ''))
    .join('');

const seqs = (events: ResponseStreamEvent[]) => events.map((e) => e.sequence_number);

describe('OpenAI emulator through the official SDK: create, retrieve, stream', () => {
  it('a background response is queued at once, then runs and completes with output and usage', async () => {
    h = await startHarness();
    const { client, clock } = h;
    const { data: created, response } = await client.responses
      .create({
        model: 'gpt-test',
        input: INPUT,
        background: true,
        store: true,
        metadata: { taskplane: 'env_1' },
      })
      .withResponse();
    expect(created.status).toBe('queued');
    expect(created.id).toMatch(/^resp_/);
    expect(created.metadata).toEqual({ taskplane: 'env_1' });
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);

    await clock.advance(60);
    expect((await client.responses.retrieve(created.id)).status).toBe('in_progress');

    await clock.advance(10_000);
    const done = await client.responses.retrieve(created.id);
    expect(done.status).toBe('completed');
    expect(done.output_text).toBe(`You said: ${INPUT}`);
    expect(done.usage?.output_tokens).toBeGreaterThan(0);
    expect(done.usage?.total_tokens).toBe((done.usage?.input_tokens ?? 0) + (done.usage?.output_tokens ?? 0));
    expect(done.completed_at).toBeGreaterThanOrEqual(done.created_at);
  });

  it('a background stream numbers every event from 0 with no gap and ends on response.completed', async () => {
    h = await startHarness();
    const stream = await h.client.responses.create({
      model: 'gpt-test',
      input: INPUT,
      background: true,
      stream: true,
    });
    await h.clock.advance(10_000);
    const { events, error } = await collect(stream);
    expect(error).toBeUndefined();
    expect(seqs(events)).toEqual(events.map((_, i) => i));
    const types = events.map((e) => e.type);
    expect(types.slice(0, 3)).toEqual(['response.created', 'response.queued', 'response.in_progress']);
    expect(types.at(-1)).toBe('response.completed');
    const text = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    expect(text).toBe(`You said: ${INPUT}`);
    const last = events.at(-1)!;
    expect(last.type === 'response.completed' && last.response.usage?.output_tokens).toBeGreaterThan(0);
  });

  it('a synchronous create answers when the response is done; without store it cannot be retrieved', async () => {
    h = await startHarness();
    const created = nextCreated(h.emu);
    const pending = h.client.responses.create({ model: 'gpt-test', input: 'hi there', store: false });
    await created;
    await h.clock.advance(10_000);
    const done = await pending;
    expect(done.status).toBe('completed');
    expect(done.background).toBe(false);
    expect(done.output_text).toBe('You said: hi there');
    await expect(h.client.responses.retrieve(done.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('a dropped stream resumes with starting_after: nothing missed, nothing repeated, live events followed', async () => {
    h = await startHarness();
    h.emu.faultNext({ dropStreamAfterEvents: 5 });
    const stream = await h.client.responses.create({
      model: 'gpt-test',
      input: INPUT,
      background: true,
      stream: true,
    });
    await h.clock.advance(120);
    const first = await collect(stream);
    expect(first.error).toBeInstanceOf(Error);
    expect(seqs(first.events)).toEqual([0, 1, 2, 3, 4]);
    const id = (first.events[0] as { response: { id: string } }).response.id;
    expect(h.emu.run(id)?.terminal).toBe(false);

    const resumed = await h.client.responses.retrieve(id, { stream: true, starting_after: 4 });
    const reading = collect(resumed);
    await h.clock.advance(10_000);
    const second = await reading;
    expect(second.error).toBeUndefined();
    const all = [...seqs(first.events), ...seqs(second.events)];
    expect(all).toEqual(h.emu.run(id)!.events.map((e) => e.sequence_number));
    expect(second.events.at(-1)?.type).toBe('response.completed');
  });

  it(
    "reports every request it receives, so a test sees the SDK's resume query",
    { timeout: 5000 },
    async () => {
      h = await startHarness();
      const seen: Array<{ method: string; url: string }> = [];
      h.emu.on('request', (r) => seen.push(r));
      const stream = await h.client.responses.create({
        model: 'gpt-test',
        input: INPUT,
        background: true,
        stream: true,
      });
      let created = { id: '' };
      for await (const event of stream) {
        if (event.type === 'response.created') created = event.response;
        break;
      }
      // The response finishes first; the resume then replays what follows the cursor and ends.
      await h.clock.advance(10_000);
      const read = await collect(
        await h.client.responses.retrieve(created.id, { stream: true, starting_after: 1 }),
      );
      expect(read.events[0]?.sequence_number).toBe(2);
      expect(read.events.at(-1)?.type).toBe('response.completed');
      expect(seen.map((r) => r.method)).toEqual(['POST', 'GET']);
      expect(seen[0]!.url).toBe('/v1/responses');
      const url = new URL(seen[1]!.url, 'http://x');
      expect(url.pathname).toBe(`/v1/responses/${created.id}`);
      expect(url.searchParams.get('stream')).toBe('true');
      expect(url.searchParams.get('starting_after')).toBe('1');
    },
  );

  it('a stream closed with no terminal event ends the loop quietly; retrieve shows the outcome', async () => {
    h = await startHarness();
    h.emu.faultNext({ endStreamWithoutTerminal: true });
    const stream = await h.client.responses.create({
      model: 'gpt-test',
      input: INPUT,
      background: true,
      stream: true,
    });
    await h.clock.advance(10_000);
    const { events, error } = await collect(stream);
    expect(error).toBeUndefined();
    expect(events.some((e) => e.type === 'response.completed')).toBe(false);
    const id = (events[0] as { response: { id: string } }).response.id;
    expect((await h.client.responses.retrieve(id)).status).toBe('completed');
  });

  it('resuming a finished response replays only what follows the cursor and ends', async () => {
    h = await startHarness();
    const created = await h.client.responses.create({
      model: 'gpt-test',
      input: INPUT,
      background: true,
      stream: true,
    });
    await h.clock.advance(10_000);
    const full = await collect(created);
    const id = (full.events[0] as { response: { id: string } }).response.id;
    const n = full.events.length;
    const tail = await collect(
      await h.client.responses.retrieve(id, { stream: true, starting_after: n - 3 }),
    );
    expect(seqs(tail.events)).toEqual([n - 2, n - 1]);
  });
});

describe('OpenAI emulator through the official SDK: cancel', () => {
  it('cancels a running response, twice idempotently, and retrieve agrees', async () => {
    h = await startHarness();
    const created = await h.client.responses.create({ model: 'gpt-test', input: INPUT, background: true });
    await h.clock.advance(80);
    expect((await h.client.responses.cancel(created.id)).status).toBe('cancelled');
    expect((await h.client.responses.cancel(created.id)).status).toBe('cancelled');
    await h.clock.advance(10_000);
    expect((await h.client.responses.retrieve(created.id)).status).toBe('cancelled');
  });

  it('cancel after completion returns the completed response unchanged', async () => {
    h = await startHarness();
    const created = await h.client.responses.create({ model: 'gpt-test', input: INPUT, background: true });
    await h.clock.advance(10_000);
    const after = await h.client.responses.cancel(created.id);
    expect(after.status).toBe('completed');
    // The SDK adds output_text on create and retrieve only, so read the output items.
    expect(textOf(after)).toBe(`You said: ${INPUT}`);
  });

  it('a cancel that loses the race returns the response completed, and it stays completed', async () => {
    h = await startHarness();
    h.emu.faultNext({ cancelLosesRace: true });
    const created = await h.client.responses.create({ model: 'gpt-test', input: INPUT, background: true });
    await h.clock.advance(80);
    const answer = await h.client.responses.cancel(created.id);
    expect(answer.status).toBe('completed');
    expect(textOf(answer)).toBe(`You said: ${INPUT}`);
    expect((await h.client.responses.retrieve(created.id)).status).toBe('completed');
  });

  it('a stream of a cancelled response ends on response.cancelled', async () => {
    h = await startHarness();
    const created = nextCreated(h.emu);
    const stream = await h.client.responses.create({
      model: 'gpt-test',
      input: INPUT,
      background: true,
      stream: true,
    });
    const { id } = await created;
    await h.clock.advance(80);
    await h.client.responses.cancel(id);
    const { events } = await collect(stream);
    expect((events.at(-1) as { type: string }).type).toBe('response.cancelled');
  });

  it('only background responses can be cancelled', async () => {
    h = await startHarness();
    const created = nextCreated(h.emu);
    const pending = h.client.responses.create({ model: 'gpt-test', input: 'x' });
    await created;
    await h.clock.advance(10_000);
    const done = await pending;
    const err = await h.client.responses.cancel(done.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
  });
});

describe('OpenAI emulator determinism and synchronous cancellation', () => {
  it('the same seed on the same virtual clock replays the same ids, jitter and events', async () => {
    const logs: unknown[] = [];
    for (let i = 0; i < 2; i++) {
      h = await startHarness({ jitter: 1 });
      const harness = h;
      let finishedAt = 0;
      harness.emu.once('terminal', () => (finishedAt = harness.clock.now()));
      const created = await h.client.responses.create({ model: 'm', input: INPUT, background: true });
      await h.clock.advance(10_000);
      const run = h.emu.run(created.id)!;
      expect(finishedAt).toBeGreaterThan(0);
      logs.push({ id: created.id, finishedAt, events: run.events });
      await h.emu.close();
      h = undefined;
    }
    expect(logs[1]).toEqual(logs[0]);
  });

  it('dropping the stream of a synchronous response cancels it', async () => {
    h = await startHarness();
    const created = nextCreated(h.emu);
    const stream = await h.client.responses.create({ model: 'm', input: INPUT, stream: true });
    const run = await created;
    const cancelled = new Promise<void>((resolve) => h!.emu.once('terminal', () => resolve()));
    stream.controller.abort();
    await cancelled;
    expect(run.status).toBe('cancelled');
  });
});
