import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/clock.ts';
import { invalidArgument } from '../../src/core/errors.ts';
import { isNormalizedState } from '../../src/core/states.ts';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import type { Connector, InboundWebhook, RemoteSnapshot } from '../../src/connectors/connector.ts';
import { latestEventSeq } from '../../src/server/event-stream.ts';
import { KEY_A, KEY_B, planeApp } from '../server/plane-app-fixture.ts';
import { bodyOf, oddValue, rssMiB } from './fuzz-inputs.ts';

/**
 * The plane's HTTP API under generated and mutated requests, served in process: every route, with and
 * without keys, including the webhook route with valid and forged tokens. Whatever arrives: no 5xx, no
 * internal error, the server keeps answering, memory stays bounded, and a refused request changes
 * nothing in the store.
 */

const RUNS = 10_000;
const SEED = 20261201;
const MAX_BODY = 16 * 1024;
const MAX_WEBHOOK = 4 * 1024;

type App = Awaited<ReturnType<typeof planeApp>>;
let app: App;
const envelopeIds: string[] = [];
const pushes: Array<{ envelopeId: string; remoteId: string; token: string }> = [];

/**
 * The fake remote's webhook parser trusts its own payload shape; production's A2A parser decodes.
 * Decode here too, so what reaches the engine is what a real connector could hand it.
 */
function decodingFake(fake: Connector): void {
  const parse = fake.parseWebhook!.bind(fake);
  fake.parseWebhook = async (req: InboundWebhook) => {
    let body: { deliveryId?: unknown; snapshot?: Record<string, unknown> };
    try {
      body = JSON.parse(req.rawBody) as typeof body;
    } catch {
      throw invalidArgument('body', 'not JSON');
    }
    const s = body?.snapshot;
    if (
      typeof body?.deliveryId !== 'string' ||
      !s ||
      typeof s !== 'object' ||
      typeof s.remoteId !== 'string' ||
      !isNormalizedState(s.state) ||
      !(s.remoteVersion === null || Number.isSafeInteger(s.remoteVersion))
    )
      throw invalidArgument('body', 'not a push');
    const snapshot: RemoteSnapshot = {
      remoteId: s.remoteId,
      contextId: null,
      state: s.state,
      nativeState: String(s.nativeState ?? s.state).slice(0, 64),
      remoteVersion: s.remoteVersion as number | null,
      stateTimestamp: null,
    };
    const signal = await parse({
      ...req,
      rawBody: JSON.stringify({ deliveryId: body.deliveryId, snapshot }),
    });
    return signal;
  };
}

beforeAll(async () => {
  const agent = new A2AConnector({
    target: 'agent',
    baseUrl: 'http://agent.invalid',
    fetch: () => Promise.reject(new TypeError('fetch failed')),
  });
  app = await planeApp({
    clock: new VirtualClock(Date.parse('2026-12-01T00:00:00Z')),
    connectors: { agent },
    // Most of these requests are refused on purpose, as fast as the plane answers: with the default
    // refusal rate each tenant would wait at the door (tenant-fairness.test.ts) for most of the run.
    limits: {
      maxBodyBytes: MAX_BODY,
      maxWebhookBytes: MAX_WEBHOOK,
      refusalsPerSecondPerTenant: 1e6,
      refusalBurstPerTenant: 1e6,
    },
  });
  decodingFake(app.connectors.fake!);
  for (const [key, n] of [
    [KEY_A, 4],
    [KEY_B, 4],
  ] as const) {
    for (let i = 0; i < n; i++) {
      const res = await app.fetch('/v1/tasks', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ target: 'fake', input: { i } }),
      });
      envelopeIds.push(((await res.json()) as { id: string }).id);
    }
  }
  for (const job of app.remote.jobs.values()) {
    if (!job.push) continue;
    const envelopeId = new URL(job.push.url).searchParams.get('envelope')!;
    pushes.push({ envelopeId, remoteId: job.id, token: job.push.token });
  }
});
afterAll(async () => {
  await app?.close();
});

interface Req {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

const keyHeader = fc.constantFrom<Record<string, string>>(
  { authorization: `Bearer ${KEY_A}` },
  { authorization: `Bearer ${KEY_B}` },
  { authorization: `Bearer ${KEY_A}` },
  {},
  { authorization: 'Bearer wrong-key-xyz' },
  { authorization: `Basic ${KEY_A}` },
);

function requests(): fc.Arbitrary<Req> {
  const id = fc.oneof(fc.constantFrom(...envelopeIds), fc.string({ maxLength: 12 }), fc.constant('tsk_x'));
  const segment = id.map(encodeURIComponent);
  const validCreate = fc.record({
    target: fc.constantFrom('fake', 'fake', 'nope', 'agent'),
    input: fc.jsonValue({ maxDepth: 3 }),
    idempotencyKey: fc.option(fc.string({ maxLength: 10 }), { nil: undefined }),
    actor: fc.option(fc.string({ maxLength: 10 }), { nil: undefined }),
    timeoutMs: fc.option(fc.integer({ min: 1, max: 1e9 }), { nil: undefined }),
    acceptance: fc.option(
      fc.constantFrom({ schema: { type: 'object' } }, { schema: { type: 'object', required: ['x'] } }),
      { nil: undefined },
    ),
  });
  const create = fc
    .record({ headers: keyHeader, body: bodyOf(validCreate, MAX_BODY) })
    .map(({ headers, body }): Req => ({ method: 'POST', path: '/v1/tasks', headers, body }));
  const validAnswer = fc.record({
    requestId: fc.string({ maxLength: 8 }),
    value: oddValue,
    actor: fc.string(),
  });
  const post = fc
    .record({
      verb: fc.constantFrom('cancel', 'input'),
      id: segment,
      headers: keyHeader,
      body: bodyOf(validAnswer, MAX_BODY),
    })
    .map(({ verb, id, headers, body }): Req => ({
      method: 'POST',
      path: `/v1/tasks/${id}/${verb}`,
      headers,
      body,
    }));
  const push = pushes.length > 0 ? fc.constantFrom(...pushes) : fc.constant(undefined);
  const webhook = fc
    .record({
      push,
      forged: fc.boolean(),
      target: fc.constantFrom('fake', 'agent', 'nope'),
      envelope: fc.option(id, { nil: undefined }),
      deliveryId: fc.string({ maxLength: 8 }),
      state: fc.oneof(fc.constantFrom('running', 'succeeded', 'waiting_for_input', 'cancelled'), fc.string()),
      version: fc.oneof(fc.integer(), fc.constant(null), oddValue),
    })
    .chain(({ push, forged, target, envelope, deliveryId, state, version }) => {
      const valid = fc.constant({
        deliveryId,
        snapshot: { remoteId: push?.remoteId ?? 'r', state, nativeState: state, remoteVersion: version },
      });
      return bodyOf(valid, MAX_WEBHOOK).map((body): Req => {
        const env = envelope ?? push?.envelopeId;
        const token = forged || !push ? 'forged-token' : push.token;
        return {
          method: 'POST',
          path: `/v1/webhooks/a2a/${target}${env !== undefined ? `?envelope=${encodeURIComponent(env)}` : ''}`,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body,
        };
      });
    });
  const query = fc.dictionary(
    fc.constantFrom('state', 'limit', 'target', 'cursor', 'updatedAfter', 'after', 'from', 'key'),
    fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('0', '-1', '501', 'now', 'running,lost', '1e999')),
    { maxKeys: 3 },
  );
  const get = fc
    .record({
      path: fc.oneof(
        fc.constant('/v1/tasks'),
        segment.map((i) => `/v1/tasks/${i}`),
        segment.map((i) => `/v1/tasks/${i}/history`),
        segment.map((i) => `/v1/tasks/${i}/events`),
        fc.constantFrom(
          '/v1/events',
          '/v1/signals',
          '/healthz',
          '/v1/openapi.json',
          '/v1/nope',
          '/v1/tasks/a/b/c',
        ),
      ),
      query,
      headers: keyHeader,
      lastEventId: fc.option(fc.string({ maxLength: 6 }), { nil: undefined }),
    })
    .map(({ path, query, headers, lastEventId }): Req => {
      const q = new URLSearchParams(query).toString();
      return {
        method: 'GET',
        path: q ? `${path}?${q}` : path,
        headers: lastEventId === undefined ? headers : { ...headers, 'last-event-id': lastEventId },
      };
    });
  const odd = fc
    .record({
      method: fc.constantFrom('PUT', 'DELETE', 'PATCH', 'POST'),
      path: fc.constantFrom('/v1/tasks', '/v1/events', '/v1/signals', '/v1/webhooks/a2a', '/metrics'),
      headers: keyHeader,
      body: fc.string({ maxLength: 32 }),
    })
    .map((r): Req => r);
  return fc.oneof(
    { weight: 4, arbitrary: create },
    { weight: 2, arbitrary: post },
    { weight: 3, arbitrary: webhook },
    { weight: 2, arbitrary: get },
    { weight: 1, arbitrary: odd },
  );
}

/** Lets the engine's follow-up work of an accepted request run (no timers: the clock is virtual). */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
}

describe('plane API fuzz', () => {
  it(`${RUNS} generated and mutated requests: no 5xx, no internal error, refused requests change nothing`, async () => {
    const rssStart = rssMiB();
    let sent = 0;
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(requests(), async (r) => {
        const before = await latestEventSeq(app.store);
        const res = await app.fetch(r.path, {
          method: r.method,
          headers: { 'content-type': 'application/json', ...r.headers },
          ...(r.body !== undefined ? { body: r.body as BodyInit } : {}),
        });
        sent++;
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const type = res.headers.get('content-type') ?? '';
        if (type.startsWith('text/event-stream')) await res.body?.cancel();
        else {
          const text = await res.text();
          if (type.startsWith('application/json') && res.status >= 400) {
            const body = JSON.parse(text) as { error?: { code?: string } };
            expect(body.error?.code, `${r.method} ${r.path}`).not.toBe('internal');
          }
        }
        expect(res.status, `${r.method} ${r.path}`).toBeLessThan(500);
        if (res.status >= 400) expect(await latestEventSeq(app.store), `${r.method} ${r.path}`).toBe(before);
        else await settle();
        if (sent % 1000 === 0) {
          expect((await app.fetch('/healthz')).status).toBe(200);
          expect(rssMiB() - rssStart).toBeLessThan(300);
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    expect(sent).toBeGreaterThanOrEqual(RUNS);
    expect((await app.fetch('/healthz')).status).toBe(200);
    // Every class of answer was reached, not only refusals.
    expect([...statuses.keys()].filter((s) => s < 300).length).toBeGreaterThan(0);
    expect(statuses.get(413) ?? 0).toBeGreaterThan(0);
    expect(statuses.get(401) ?? 0).toBeGreaterThan(0);
  }, 120_000);
});
