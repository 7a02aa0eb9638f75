import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { collect, nextCreated, startHarness, type Harness } from './support.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.emu.close();
  h = undefined;
});

async function caught(p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.APIError);
  return err as InstanceType<typeof OpenAI.APIError>;
}

describe('OpenAI emulator errors as the SDK sees them', () => {
  it('background with store: false is a 400 naming store, in OpenAI error shape, with a request id', async () => {
    h = await startHarness();
    const err = await caught(
      h.client.responses.create({ model: 'm', input: 'x', background: true, store: false }),
    );
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
    expect(err.param).toBe('store');
    expect(err.type).toBe('invalid_request_error');
    expect(err.requestID).toMatch(/^req_/);
  });

  it('an unknown id is a NotFoundError with a message', async () => {
    h = await startHarness();
    const err = await caught(h.client.responses.retrieve('resp_nope'));
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.message).toContain('resp_nope');
  });

  it('bad input names the field: model, metadata value, starting_after, a resume of a non-stream response', async () => {
    h = await startHarness();
    const noModel = await caught(
      h.client.responses.create({
        input: 'x',
      } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming),
    );
    expect(noModel.param).toBe('model');
    const badMeta = await caught(
      h.client.responses.create({
        model: 'm',
        input: 'x',
        background: true,
        metadata: { k: 1 } as unknown as Record<string, string>,
      }),
    );
    expect(badMeta.param).toBe('metadata.k');
    const createdRun = nextCreated(h.emu);
    const streamed = await h.client.responses.create({
      model: 'm',
      input: 'x',
      background: true,
      stream: true,
    });
    const { id: streamedId } = await createdRun;
    streamed.controller.abort();
    const res = await fetch(`${h.baseURL}/responses/${streamedId}?stream=true&starting_after=-2`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe('starting_after');
    const created = await h.client.responses.create({ model: 'm', input: 'x', background: true });
    const noStream = await caught(h.client.responses.retrieve(created.id, { stream: true }));
    expect(noStream.param).toBe('stream');
  });

  it('an API key, when configured, is checked: AuthenticationError otherwise', async () => {
    h = await startHarness({ apiKey: 'sk-right' });
    const err = await caught(h.client.responses.retrieve('resp_x'));
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.code).toBe('invalid_api_key');
  });

  it('a malformed JSON body is a 400 JSON error, not a crash', async () => {
    h = await startHarness();
    const res = await fetch(`${h.baseURL}/responses`, {
      method: 'POST',
      body: '{nope',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    expect(((await res.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
  });
});

describe('OpenAI emulator faults through the SDK', () => {
  it('429 with retry-after-ms surfaces as RateLimitError carrying the header when retries are off', async () => {
    h = await startHarness();
    h.emu.failRequests({ route: 'create', status: 429, retryAfterMs: 1500 });
    const err = await caught(h.client.responses.create({ model: 'm', input: 'x', background: true }));
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.headers?.get('retry-after-ms')).toBe('1500');
    expect(err.code).toBe('rate_limit_exceeded');
    expect((await h.client.responses.create({ model: 'm', input: 'x', background: true })).status).toBe(
      'queued',
    );
  });

  it('a 503 then success: the SDK retries after retry-after-ms and the second create is what counts', async () => {
    h = await startHarness({}, { maxRetries: 1 });
    h.emu.failRequests({ route: 'any', status: 503, retryAfterMs: 1, times: 1 });
    const created = await h.client.responses.create({ model: 'm', input: 'x', background: true });
    expect(created.status).toBe('queued');
    // Had the retry not used up the 503, this retrieve would get the 503 rather than its own 500.
    const err = await caught(
      (async () => {
        h!.emu.failRequests({ route: 'retrieve', status: 500, times: 5 });
        return h!.client.responses.retrieve(created.id, {}, { maxRetries: 0 });
      })(),
    );
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect(err.status).toBe(500);
  });

  it('stuck in queued: no time moves it on', async () => {
    h = await startHarness();
    h.emu.faultNext({ stuckInQueued: true });
    const created = await h.client.responses.create({ model: 'm', input: 'x', background: true });
    await h.clock.advance(3_600_000);
    expect((await h.client.responses.retrieve(created.id)).status).toBe('queued');
  });

  it('a response is forgotten after its retention window: 404 on retrieve, stream and cancel', async () => {
    h = await startHarness();
    h.emu.faultNext({ retentionMs: 600_000 });
    const created = await h.client.responses.create({
      model: 'm',
      input: 'x',
      background: true,
      stream: false,
    });
    await h.clock.advance(599_000);
    expect((await h.client.responses.retrieve(created.id)).status).toBe('completed');
    await h.clock.advance(1_000);
    await expect(h.client.responses.retrieve(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(h.client.responses.cancel(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('failed and incomplete outcomes reach the stream as response.failed / response.incomplete', async () => {
    h = await startHarness();
    h.emu.faultNext({ failWith: { code: 'server_error', message: 'boom' } });
    const s1 = await h.client.responses.create({
      model: 'm',
      input: 'one two three four',
      background: true,
      stream: true,
    });
    await h.clock.advance(10_000);
    const failed = await collect(s1);
    expect(failed.error).toBeUndefined();
    const last = failed.events.at(-1)!;
    expect(last.type).toBe('response.failed');
    expect(last.type === 'response.failed' && last.response.error).toEqual({
      code: 'server_error',
      message: 'boom',
    });

    h.emu.faultNext({ incompleteReason: 'max_output_tokens' });
    const created = await h.client.responses.create({
      model: 'm',
      input: 'one two three four',
      background: true,
    });
    await h.clock.advance(10_000);
    const incomplete = await h.client.responses.retrieve(created.id);
    expect(incomplete.status).toBe('incomplete');
    expect(incomplete.incomplete_details?.reason).toBe('max_output_tokens');
    expect(incomplete.output_text.length).toBeLessThan('You said: one two three four'.length);
  });

  it('faults ride in metadata, so a client that knows nothing of the emulator can be faulted', async () => {
    h = await startHarness();
    const created = await h.client.responses.create({
      model: 'm',
      input: 'x',
      background: true,
      metadata: { emulator_faults: JSON.stringify({ stuckInQueued: true }) },
    });
    await h.clock.advance(10_000);
    expect((await h.client.responses.retrieve(created.id)).status).toBe('queued');
    const bad = await caught(
      h.client.responses.create({
        model: 'm',
        input: 'x',
        background: true,
        metadata: { emulator_faults: '{"dropAfter":1}' },
      }),
    );
    expect(bad.param).toBe('metadata.emulator_faults.dropAfter');
  });

  it('the control endpoint queues faults for a run by hand, and rejects a bad one naming the field', async () => {
    h = await startHarness();
    const root = h.baseURL.replace(/\/v1$/, '');
    const post = (body: unknown) =>
      fetch(`${root}/_emulator/faults`, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
    expect((await post({ request: { route: 'cancel', status: 418 } })).status).toBe(400);
    expect(
      (await post({ next: { stuckInQueued: true }, request: { route: 'retrieve', status: 502 } })).status,
    ).toBe(200);
    const created = await h.client.responses.create({ model: 'm', input: 'x', background: true });
    expect((await caught(h.client.responses.retrieve(created.id))).status).toBe(502);
    await h.clock.advance(10_000);
    expect((await h.client.responses.retrieve(created.id)).status).toBe('queued');
  });
});
