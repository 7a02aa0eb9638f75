import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { SystemClock } from '../../src/core/clock.ts';
import { TaskplaneError } from '../../src/core/errors.ts';
import { CryptoRandom } from '../../src/core/random.ts';
import { OpenAIConnector } from '../../src/connectors/openai/openai-connector.ts';
import { responseSnapshot, usageOf } from '../../src/connectors/openai/response-snapshot.ts';
import { Plane } from '../../src/plane/plane.ts';
import { connectTarget, parseTargets } from '../../src/server/targets.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { OpenAIEmulator } from '../emulators/openai/emulator.ts';
import type { ResponseRun } from '../emulators/openai/responses.ts';
import { untilStored } from '../support/until-stored.ts';

const SECRET = 'whsec_' + Buffer.from('fedcba9876543210fedcba9876543210').toString('base64');
const o = { incomplete: 'failed' as const, prices: null };

describe('OpenAI response → snapshot', () => {
  it('maps each status, keeps the native one, and orders by status rank', () => {
    const at = (status: string, extra = {}) => responseSnapshot({ id: 'resp_1', status, ...extra }, o);
    expect(at('queued')).toMatchObject({ state: 'accepted', nativeState: 'queued', remoteVersion: 1 });
    expect(at('in_progress')).toMatchObject({ state: 'running', remoteVersion: 3 });
    expect(at('completed')).toMatchObject({ state: 'succeeded', remoteVersion: 4 });
    expect(at('cancelled')).toMatchObject({ state: 'cancelled', remoteVersion: 4 });
    expect(at('failed', { error: { code: 'server_error', message: 'boom' } })).toMatchObject({
      state: 'failed',
      error: { code: 'server_error', message: 'boom' },
    });
    expect(at('incomplete', { incomplete_details: { reason: 'max_output_tokens' } })).toMatchObject({
      state: 'failed',
      nativeState: 'incomplete:max_output_tokens',
      error: { code: 'incomplete:max_output_tokens' },
    });
    const accepted = responseSnapshot(
      { id: 'resp_1', status: 'incomplete', incomplete_details: { reason: 'content_filter' } },
      { incomplete: 'succeeded', prices: null },
    );
    expect(accepted).toMatchObject({ state: 'succeeded', statusMessage: 'incomplete:content_filter' });
    expect(at('paused_by_new_feature')).toMatchObject({ state: 'unknown', remoteVersion: null });
  });

  it('usage: tokens, and cost from the price table rounded up so a budget never under-counts', () => {
    const usage = {
      input_tokens: 1000,
      output_tokens: 300,
      total_tokens: 1300,
      input_tokens_details: { cached_tokens: 400 },
      output_tokens_details: { reasoning_tokens: 100 },
    };
    expect(
      usageOf(usage, {
        unit: 'cents',
        inputPerMillionTokens: 125,
        cachedInputPerMillionTokens: 12.5,
        outputPerMillionTokens: 1000,
      }),
    ).toEqual({
      input_tokens: 1000,
      output_tokens: 300,
      total_tokens: 1300,
      cached_tokens: 400,
      reasoning_tokens: 100,
      // (600 * 125 + 400 * 12.5 + 300 * 1000) / 1e6 = 0.38 cents, rounded up
      cents: 1,
    });
    expect(usageOf(null, null)).toBeNull();
  });
});

describe('OpenAI connector against the emulator and odd servers', () => {
  let emu: OpenAIEmulator | undefined;
  let server: Server | undefined;
  let plane: Plane | undefined;
  afterEach(async () => {
    await plane?.stop();
    await emu?.close();
    server?.closeAllConnections();
    server?.close();
    plane = emu = server = undefined;
  });

  it('a 404 that is not OpenAI JSON says nothing about the response: unavailable, not_protocol', async () => {
    server = createServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'text/html' });
      res.end('<html>gateway says no</html>');
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    const c = new OpenAIConnector({
      target: 'gpt',
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
      apiKey: 'sk',
      model: 'm',
      maxRetries: 0,
    });
    const err = (await c
      .get('resp_x', new AbortController().signal)
      .catch((e: unknown) => e)) as TaskplaneError;
    expect(err.code).toBe('unavailable');
    expect(err.details?.route).toBe('not_protocol');
  });

  it('refuses a task input that sets what the connector owns, naming the field', async () => {
    emu = new OpenAIEmulator({ clock: new SystemClock() });
    const c = new OpenAIConnector({ target: 'gpt', baseUrl: await emu.start(), apiKey: 'sk', model: 'm' });
    const err = (await c
      .start(
        { envelopeId: 'e', messageId: 'm', contextId: null, input: { input: 'x', store: false } },
        new AbortController().signal,
      )
      .catch((e: unknown) => e)) as TaskplaneError;
    expect(err.code).toBe('invalid_argument');
    expect(err.field).toBe('input.store');
  });

  it('a lost create under the escalate policy stays unknown, is never resent, and a signed webhook finds it by metadata', async () => {
    const clock = new SystemClock();
    emu = new OpenAIEmulator({ clock, queuedMs: 20, deltaIntervalMs: 5 });
    const connector = new OpenAIConnector({
      target: 'gpt',
      baseUrl: await emu.start(),
      apiKey: 'sk',
      model: 'm',
      webhookSecret: SECRET,
      clock,
    });
    const runs: ResponseRun[] = [];
    emu.on('created', (r) => runs.push(r));
    const store = new MemoryStore();
    plane = new Plane({
      clock,
      random: new CryptoRandom(),
      store,
      connectors: (t) => (t === 'gpt' ? connector : undefined),
      logger: silentLogger,
      options: {
        lostPolicy: 'escalate',
        reconcile: { enabled: false },
        startRetry: { initialIntervalMs: 10, maximumIntervalMs: 20 },
      },
    });
    await plane.start();
    emu.faultNext({ dropStreamAfterEvents: 0 });
    const terminal = once(emu, 'terminal');
    const { envelope } = await plane.create({ tenant: 't', target: 'gpt', input: 'hello there' });
    await untilStored(
      store,
      envelope.id,
      async () => (await store.getEnvelope(envelope.id))?.reconciliation?.result === 'escalated',
      'escalated',
    );
    const escalated = (await store.getEnvelope(envelope.id))!;
    expect(escalated.state).toBe('unknown');
    expect(escalated.remoteId).toBeNull();
    await terminal;
    expect(runs).toHaveLength(1);

    const body = JSON.stringify({
      object: 'event',
      id: 'evt_1',
      type: 'response.completed',
      created_at: Math.floor(Date.now() / 1000),
      data: { id: runs[0]!.id },
    });
    const at = new Date();
    const headers = {
      'webhook-id': 'wh_1',
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(SECRET).sign('wh_1', at, body),
    };
    expect(await plane.handleWebhook('gpt', { headers, rawBody: body })).toEqual({
      status: 'observed',
      envelopeId: envelope.id,
    });
    const bound = (await store.getEnvelope(envelope.id))!;
    expect(bound).toMatchObject({ state: 'succeeded', remoteId: runs[0]!.id });
    expect(bound.artifacts.map((a) => a.artifactId)).toEqual(['output_text', 'output']);
    expect(await plane.handleWebhook('gpt', { headers, rawBody: body })).toMatchObject({
      status: 'duplicate',
    });
    expect(runs).toHaveLength(1);
    await expect(
      plane.handleWebhook('gpt', { headers: { ...headers, 'webhook-signature': 'v1,AAAA' }, rawBody: body }),
    ).rejects.toMatchObject({ code: 'unauthenticated' });
  });
});

describe('target kind openai', () => {
  const deps = {
    clock: new SystemClock(),
    random: new CryptoRandom(),
    logger: silentLogger,
    env: { KEY: 'sk-test', WH: SECRET },
  };
  it('builds from a targets-file entry; secrets come from the environment', () => {
    const c = connectTarget(
      'gpt',
      {
        kind: 'openai',
        apiKey: { env: 'KEY' },
        webhookSecret: { env: 'WH' },
        model: 'gpt-5',
        prices: { unit: 'usd_micros', inputPerMillionTokens: 1, outputPerMillionTokens: 2 },
        incomplete: 'succeeded',
      },
      deps,
    );
    expect(c.kind).toBe('openai');
    expect(c.capabilities).toMatchObject({
      idempotentStart: false,
      list: false,
      streamResume: true,
      notFound: { expiresAfterMs: 600_000 },
    });
  });

  it('names the setting at fault', () => {
    const bad = (config: Record<string, unknown>) => {
      try {
        connectTarget('gpt', { kind: 'openai', apiKey: { env: 'KEY' }, model: 'm', ...config }, deps);
      } catch (err) {
        return (err as TaskplaneError).field;
      }
      return null;
    };
    expect(bad({ model: undefined })).toBe('targets.gpt.model');
    expect(bad({ apiKey: { env: 'MISSING' } })).toBe('targets.gpt.apiKey');
    expect(bad({ request: { store: false } })).toBe('targets.gpt.request.store');
    expect(
      bad({ prices: { unit: 'usd_micros', inputPerMillionTokens: -1, outputPerMillionTokens: 1 } }),
    ).toBe('targets.gpt.prices.inputPerMillionTokens');
    expect(bad({ incomplete: 'maybe' })).toBe('targets.gpt.incomplete');
    expect(bad({ colour: 'blue' })).toBe('targets.gpt.colour');
  });

  it('--target name=openai+https://…?model=… picks the kind, the key from OPENAI_API_KEY', () => {
    expect(parseTargets('gpt=openai+https://api.openai.com/v1?model=gpt-5')).toEqual({
      gpt: {
        kind: 'openai',
        baseUrl: 'https://api.openai.com/v1',
        apiKey: { env: 'OPENAI_API_KEY' },
        model: 'gpt-5',
      },
    });
  });
});
