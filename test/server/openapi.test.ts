import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Validator } from '@seriousme/openapi-schema-validator';
import { createParser } from 'eventsource-parser';
import { ENVELOPE_EVENT_TYPES } from '../../src/core/envelope.ts';
import { isTerminal, type NormalizedState } from '../../src/core/states.ts';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import { openApiDocument } from '../../src/server/openapi.ts';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';
import { resultsAgent } from './results-agent.ts';

/**
 * The API contract cannot drift: /v1/openapi.json is a valid OpenAPI 3.1 document, and every answer a
 * running plane gives here (tasks in every state, artifacts kept and read through, each error status it
 * answers) is checked against it: its status must be documented for that route, and its JSON body must
 * match the documented schema. The schemas of our own objects are closed, so a field the API starts
 * returning without a description here fails this test.
 */
const KEY_A = 'openapi-key-aaaa';
const KEY_B = 'openapi-key-bbbb';

type Doc = {
  paths: Record<string, Record<string, { responses: Record<string, ResponseObject> }>>;
  components: { responses: Record<string, ResponseObject> };
};
type ResponseObject = { $ref?: string; content?: Record<string, { schema?: unknown }> };

interface Answer {
  method: string;
  template: string;
  status: number;
  contentType: string;
  body: unknown;
}

let host: RunningHost;
let server: RunningServer;
/** A plane whose per-tenant limits are tiny, for the 429 answers. */
let limited: RunningServer;
const answers: Answer[] = [];
const sseEvents: unknown[] = [];

beforeAll(async () => {
  const logger = pino({ level: 'silent' });
  host = await startHost({ port: 0, db: 'memory:', agent: resultsAgent, logger });
  server = await startServer({
    port: 0,
    db: 'memory:',
    targets: {
      agent: { baseUrl: host.url, idempotentStart: true },
      // The same agent behind a target that takes only report requests of a known kind.
      strict: {
        baseUrl: host.url,
        idempotentStart: true,
        inputSchema: {
          type: 'object',
          required: ['kind'],
          properties: { kind: { enum: ['report', 'fail'] }, pages: { type: 'integer', minimum: 1 } },
        },
      },
    },
    apiKeys: `alpha:${KEY_A},beta:${KEY_B}`,
    dashboard: false,
    lab: false,
    defaultMetrics: false,
    plane: { results: { maxArtifactBytes: 2000 } },
    logger,
  });
  limited = await startServer({
    port: 0,
    db: 'memory:',
    targets: { agent: { baseUrl: host.url, idempotentStart: true } },
    apiKeys: `alpha:${KEY_A}`,
    dashboard: false,
    lab: false,
    defaultMetrics: false,
    limits: { writeBurstPerTenant: 1, writesPerSecondPerTenant: 0.001, maxStreamsPerTenant: 1 },
    logger,
  });
});
afterAll(async () => {
  await limited?.close();
  await server?.close();
  await host?.close();
});

/** Calls a documented route (by its template) and records the answer for the contract check. */
async function call(
  method: string,
  template: string,
  params: Record<string, string> = {},
  init: {
    body?: string;
    key?: string | null;
    query?: string;
    headers?: Record<string, string>;
    on?: RunningServer;
  } = {},
): Promise<{ status: number; body: unknown }> {
  const path = template.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(params[k] ?? ''));
  const key = init.key === undefined ? KEY_A : init.key;
  const res = await fetch(`${(init.on ?? server).url}${path}${init.query ?? ''}`, {
    method: method.toUpperCase(),
    headers: {
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...init.headers,
    },
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
  const contentType = res.headers.get('content-type') ?? '';
  // A stream is only recorded here (its events are checked by readStream).
  if (contentType.startsWith('text/event-stream')) {
    answers.push({ method, template, status: res.status, contentType, body: null });
    void res.body?.cancel();
    return { status: res.status, body: null };
  }
  const text = await res.text();
  // JSON Lines: the parsed lines, each checked against the documented `items` schema.
  const body: unknown = contentType.startsWith('application/jsonl')
    ? text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as unknown)
    : /json/.test(contentType)
      ? JSON.parse(text)
      : text;
  answers.push({ method, template, status: res.status, contentType, body });
  return { status: res.status, body };
}

const create = async (input: unknown, extra: Record<string, unknown> = {}) => {
  const r = await call(
    'post',
    '/v1/tasks',
    {},
    { body: JSON.stringify({ target: 'agent', input, ...extra }) },
  );
  expect(r.status).toBeLessThan(300);
  return (r.body as { id: string }).id;
};

/** Waits on the store's change feed (not on time) until the task satisfies `done`. */
async function until(id: string, done: (state: NormalizedState) => boolean): Promise<void> {
  for (;;) {
    const changed = new Promise<void>((resolve) => {
      const off = server.store.onChange(() => (off(), resolve()));
    });
    const env = await server.store.getEnvelope(id);
    if (env && done(env.state)) return;
    await changed;
  }
}

/** Reads a task's SSE stream until the task is terminal, keeping every event's data. */
async function readStream(id: string): Promise<void> {
  const res = await fetch(`${server.url}/v1/tasks/${id}/events`, {
    headers: { authorization: `Bearer ${KEY_A}` },
  });
  answers.push({
    method: 'get',
    template: '/v1/tasks/{id}/events',
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    body: null,
  });
  let done = false;
  const parser = createParser({
    onEvent: (e) => {
      const event = JSON.parse(e.data) as { type: string; data: { to?: string } };
      sseEvents.push(event);
      if (event.type === 'state_changed' && isTerminal(event.data.to as never)) done = true;
    },
  });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  while (!done) {
    const { value, done: end } = await reader.read();
    if (end) break;
    parser.feed(dec.decode(value, { stream: true }));
  }
  await reader.cancel();
}

async function exercise(): Promise<void> {
  await call('get', '/healthz', {}, { key: null });
  await call('get', '/metrics', {}, { key: null });
  await call('get', '/v1/openapi.json', {}, { key: null });
  await call('get', '/v1/tasks', {}, { key: null });
  await call('get', '/v1/tasks', {}, { key: 'not-a-key-at-all' });

  // Creation, idempotency and the errors around it.
  const headers = { 'idempotency-key': 'contract-1' };
  const body = JSON.stringify({ target: 'agent', input: { kind: 'report' } });
  const first = await call('post', '/v1/tasks', {}, { body, headers });
  const report = (first.body as { id: string }).id;
  // Waiting for the remote's first answer turns the 202 into a 201.
  await call(
    'post',
    '/v1/tasks',
    {},
    { body: JSON.stringify({ target: 'agent', input: 'waited' }), query: '?wait=started' },
  );
  await call('post', '/v1/tasks', {}, { body, headers });
  await call('post', '/v1/tasks', {}, { body: JSON.stringify({ target: 'agent', input: 'other' }), headers });
  await call('post', '/v1/tasks', {}, { body: '{not json' });
  await call('post', '/v1/tasks', {}, { body: JSON.stringify({ target: 'nowhere', input: 1 }) });
  // Every field valid, but the target's input schema refuses the input: 422 naming where and why.
  const refused = await call(
    'post',
    '/v1/tasks',
    {},
    { body: JSON.stringify({ target: 'strict', input: { kind: 'report', pages: 0 } }) },
  );
  expect(refused.status).toBe(422);
  expect(refused.body).toMatchObject({
    error: {
      code: 'unprocessable',
      field: 'input',
      violations: [{ instancePath: '/pages', keyword: 'minimum', schemaPath: '#/properties/pages/minimum' }],
    },
  });
  expect((refused.body as { error: { message: string } }).error.message).toContain('input/pages');
  const takes = await call(
    'post',
    '/v1/tasks',
    {},
    { body: JSON.stringify({ target: 'strict', input: { kind: 'report', pages: 2 } }) },
  );
  expect(takes.status).toBe(202);
  await call('get', '/v1/tasks/{id}', { id: report });

  const accepted = await create({ kind: 'report' }, { acceptance: { schema: { type: 'string' } } });
  const budgeted = await create({ kind: 'report' }, { budget: { limit: 100, unit: 'tokens' } });
  const big = await create({ kind: 'big' });
  const failing = await create({ kind: 'fail' });
  const asking = await create({ kind: 'ask' });
  const waiting = await create({ kind: 'wait' });
  await readStream(report);
  for (const id of [accepted, budgeted, big, failing]) await until(id, isTerminal);

  // Input: a wrong request id is a 409, the right one moves the task on.
  await until(asking, (s) => s === 'waiting_for_input');
  const pending = (await call('get', '/v1/tasks/{id}', { id: asking })).body as {
    pendingInput: { requestId: string };
  };
  await call(
    'post',
    '/v1/tasks/{id}/input',
    { id: asking },
    { body: JSON.stringify({ requestId: 'nope', value: 1 }) },
  );
  await call(
    'post',
    '/v1/tasks/{id}/input',
    { id: asking },
    { body: JSON.stringify({ requestId: pending.pendingInput.requestId, value: 'second' }) },
  );
  await until(asking, isTerminal);

  // Cancel: intent, then the true outcome.
  await until(waiting, (s) => s === 'running');
  await call('post', '/v1/tasks/{id}/cancel', { id: waiting }, { body: '{}' });
  await until(waiting, isTerminal);

  // A person's acceptance decision: recorded with who; a bad decision names its field.
  const decided = await call(
    'post',
    '/v1/tasks/{id}/acceptance',
    { id: accepted },
    { body: JSON.stringify({ decision: 'accepted', reason: 'checked by hand', actor: 'ana' }) },
  );
  expect(decided.body).toMatchObject({
    state: 'succeeded',
    acceptance: { status: 'accepted', reasons: ['checked by hand'], decidedBy: { actor: 'ana' } },
  });
  const bad = await call(
    'post',
    '/v1/tasks/{id}/acceptance',
    { id: accepted },
    { body: JSON.stringify({ decision: 'maybe' }) },
  );
  expect(bad).toMatchObject({ status: 400, body: { error: { field: 'decision' } } });

  for (const id of [report, accepted, budgeted, big, failing, asking, waiting]) {
    await call('get', '/v1/tasks/{id}', { id });
    await call('get', '/v1/tasks/{id}/history', { id });
    await call('get', '/v1/tasks/{id}/artifacts', { id });
  }
  // The task's log as JSON Lines: the same events as the JSON history, one export line each.
  const history = await call('get', '/v1/tasks/{id}/history', { id: report });
  const lines = await call('get', '/v1/tasks/{id}/history', { id: report }, { query: '?format=jsonl' });
  expect(lines.status).toBe(200);
  expect((lines.body as Array<{ seq: number }>).map((l) => l.seq)).toEqual(
    (history.body as { events: Array<{ seq: number }> }).events.map((e) => e.seq),
  );
  const bogus = await call('get', '/v1/tasks/{id}/history', { id: report }, { query: '?format=xml' });
  expect(bogus).toMatchObject({ status: 400, body: { error: { field: 'format' } } });
  await call('get', '/v1/tasks/{id}/history', { id: report }, { query: '?format=jsonl', key: KEY_B });
  await call('get', '/v1/tasks/{id}/artifacts/{artifactId}', { id: report, artifactId: 'summary' });
  await call('get', '/v1/tasks/{id}/artifacts/{artifactId}', { id: report, artifactId: 'figures' });
  await call('get', '/v1/tasks/{id}/artifacts/{artifactId}', { id: report, artifactId: 'chart' });
  await call('get', '/v1/tasks/{id}/artifacts/{artifactId}', { id: big, artifactId: 'log' });
  await call('get', '/v1/tasks/{id}/artifacts/{artifactId}', { id: report, artifactId: 'nope' });
  await call('get', '/v1/tasks/{id}', { id: 'tsk_nope' });
  await call('get', '/v1/tasks/{id}', { id: report }, { key: KEY_B });
  await call('get', '/v1/tasks/{id}/artifacts', { id: report }, { key: KEY_B });
  await call('post', '/v1/tasks/{id}/cancel', { id: 'tsk_nope' }, { body: '{}' });
  await call('get', '/v1/tasks');
  await call('get', '/v1/tasks', {}, { query: '?state=bogus' });
  await call('get', '/v1/tasks', {}, { query: '?limit=1' });
  await call('get', '/v1/signals');
  await server.plane.reconcileNow();
  const targets = await call('get', '/v1/targets');
  expect((targets.body as { targets: { name: string }[] }).targets.map((t) => t.name)).toEqual([
    'agent',
    'strict',
  ]);
  await call('get', '/v1/targets/{name}', { name: 'agent' });
  await call('get', '/v1/targets/{name}', { name: 'agent' }, { key: KEY_B });
  await call('get', '/v1/targets/{name}', { name: 'nope' });
  await call(
    'post',
    '/v1/webhooks/{kind}/{target}',
    { kind: 'a2a', target: 'agent' },
    { key: null, body: '{}' },
  );

  // Workflows: a budget set, read and enforced; the workflow's sums; the verifier secret.
  const wf = 'contract-wf';
  await call('put', '/v1/workflows/{id}/budget', { id: wf }, { body: JSON.stringify({ tasks: 0 }) });
  await call('get', '/v1/workflows/{id}/budget', { id: wf });
  await call('get', '/v1/workflows/{id}', { id: wf });
  const set = await call(
    'put',
    '/v1/workflows/{id}/budget',
    { id: wf },
    { body: JSON.stringify({ tasks: 1, usage: { tokens: 1000 }, wallTimeMs: 3_600_000 }) },
  );
  expect(set.status).toBe(200);
  const inWf = await call(
    'post',
    '/v1/tasks',
    {},
    { body: JSON.stringify({ target: 'agent', input: 'w', workflowId: wf }) },
  );
  const past = await call(
    'post',
    '/v1/tasks',
    {},
    { body: JSON.stringify({ target: 'agent', input: 'x', workflowId: wf }) },
  );
  expect(past.body).toMatchObject({ error: { code: 'failed_precondition', field: 'budget.tasks' } });
  await call(
    'post',
    '/v1/tasks',
    {},
    {
      body: JSON.stringify({ target: 'agent', input: 'c', parentId: (inWf.body as { id: string }).id }),
    },
  );
  await until((inWf.body as { id: string }).id, isTerminal);
  expect((await call('get', '/v1/workflows/{id}/budget', { id: wf })).body).toMatchObject({
    used: { tasks: 1 },
    exhausted: ['tasks'],
  });
  expect((await call('get', '/v1/workflows/{id}', { id: wf })).body).toMatchObject({
    workflowId: wf,
    tasks: 1,
  });
  await call('get', '/v1/tasks', {}, { query: `?workflowId=${wf}` });
  await call('get', '/v1/verifier-secret');
  const costs = await call('get', '/v1/costs');
  expect((costs.body as { targets: Array<{ target: string }> }).targets.map((t) => t.target)).toContain(
    'agent',
  );

  // Over a per-tenant limit: the one write of the burst, then 429 on every write route; one stream, then 429.
  const on = limited;
  const created = await call(
    'post',
    '/v1/tasks',
    {},
    { on, body: JSON.stringify({ target: 'agent', input: 1 }) },
  );
  const id = (created.body as { id: string }).id;
  await call('post', '/v1/tasks', {}, { on, body: JSON.stringify({ target: 'agent', input: 2 }) });
  await call('post', '/v1/tasks/{id}/cancel', { id }, { on, body: '{}' });
  await call('post', '/v1/tasks/{id}/input', { id }, { on, body: JSON.stringify({ requestId: 'r' }) });
  await call('post', '/v1/stream-tickets', {}, { on });
  const stream = await fetch(`${limited.url}/v1/events`, { headers: { authorization: `Bearer ${KEY_A}` } });
  expect(stream.status).toBe(200);
  await call('get', '/v1/events', {}, { on });
  await call('get', '/v1/tasks/{id}/events', { id }, { on });
  await stream.body!.cancel();
}

/** The schema a documented answer promises for a JSON body, or why there is none. */
function documented(doc: Doc, a: Answer): { schema?: unknown; problem?: string } {
  const op = doc.paths[a.template]?.[a.method];
  if (!op) return { problem: 'route not documented' };
  let response = op.responses[String(a.status)];
  if (!response) return { problem: `status ${a.status} not documented` };
  if (response.$ref) response = doc.components.responses[response.$ref.split('/').pop()!]!;
  const mediaType = a.contentType.split(';')[0]!.trim();
  const content = response.content?.[mediaType] ?? response.content?.['*/*'];
  if (!content) return { problem: `${mediaType} not documented for ${a.status}` };
  if (/json/.test(mediaType) && content.schema === undefined && a.template !== '/v1/openapi.json')
    return { problem: `no schema for the JSON answer ${a.status}` };
  return { schema: content.schema };
}

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(openApiDocument());
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('describes every answer a running plane gives: statuses, media types and every JSON field', async () => {
    await exercise();
    const doc = openApiDocument() as unknown as Doc;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema(doc, 'openapi.json');
    const failures: string[] = [];
    for (const a of answers) {
      const { schema, problem } = documented(doc, a);
      const where = `${a.method.toUpperCase()} ${a.template} → ${a.status}`;
      if (problem) {
        failures.push(`${where}: ${problem}`);
        continue;
      }
      if (schema === undefined || !/json/.test(a.contentType)) continue;
      // Compiled within the document, so its $refs to components resolve.
      if (a.contentType.startsWith('application/jsonl')) {
        const line = ajv.compile({ $ref: `openapi.json#${pointerTo(doc, a)}/items` });
        for (const l of a.body as unknown[])
          if (!line(l)) failures.push(`${where} (a line): ${ajv.errorsText(line.errors)}`);
        continue;
      }
      const validate = ajv.compile({ $ref: `openapi.json#${pointerTo(doc, a)}` });
      if (!validate(a.body)) failures.push(`${where}: ${ajv.errorsText(validate.errors)}`);
    }
    const event = ajv.compile({ $ref: 'openapi.json#/components/schemas/Event' });
    for (const e of sseEvents) if (!event(e)) failures.push(`SSE event: ${ajv.errorsText(event.errors)}`);
    // Distinct lines only: one missing field fails every task answer the same way.
    expect([...new Set(failures)].join('\n')).toBe('');

    // The answers covered what the contract is about.
    const statuses = new Set(answers.map((a) => a.status));
    for (const s of [200, 201, 202, 400, 401, 404, 409, 422]) expect(statuses).toContain(s);
    const limitedRoutes = answers.filter((a) => a.status === 429).map((a) => `${a.method} ${a.template}`);
    expect(new Set(limitedRoutes)).toEqual(
      new Set([
        'post /v1/tasks',
        'post /v1/tasks/{id}/cancel',
        'post /v1/tasks/{id}/input',
        'post /v1/stream-tickets',
        'get /v1/events',
        'get /v1/tasks/{id}/events',
      ]),
    );
    const states = new Set(
      answers
        .filter((a) => a.template === '/v1/tasks/{id}' && a.status === 200)
        .map((a) => (a.body as { state: string }).state),
    );
    expect([...states].sort()).toEqual(['cancelled', 'failed', 'succeeded', 'waiting_for_input']);
    expect(sseEvents.length).toBeGreaterThan(2);
  }, 60_000);

  it('closes the task schema, so a field nobody described is caught', () => {
    const doc = openApiDocument() as unknown as Doc & { components: { schemas: Record<string, unknown> } };
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema(doc, 'openapi.json');
    const task = (answers.find((a) => a.template === '/v1/tasks/{id}' && a.status === 200)?.body ??
      null) as Record<string, unknown> | null;
    expect(task).not.toBeNull();
    const validate = ajv.compile({ $ref: 'openapi.json#/components/schemas/Task' });
    expect(validate(task)).toBe(true);
    expect(validate({ ...task, somethingNew: 1 })).toBe(false);
  });

  it('lists every event type the log holds, so an SSE client can subscribe to each by name', () => {
    const doc = openApiDocument() as unknown as {
      components: { schemas: { Event: { properties: { type: { enum: string[] } } } } };
    };
    const listed = doc.components.schemas.Event.properties.type.enum;
    expect(listed).toEqual([...ENVELOPE_EVENT_TYPES]);
    expect(listed).toContain('budget_refused');
    expect(listed).toContain('card_changed');
  });
});

/** JSON pointer (inside the document) to the schema documented for this answer. */
function pointerTo(doc: Doc, a: Answer): string {
  const esc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
  const response = doc.paths[a.template]![a.method]!.responses[String(a.status)]!;
  const mediaType = a.contentType.split(';')[0]!.trim();
  const base = response.$ref
    ? `/components/responses/${response.$ref.split('/').pop()!}`
    : `/paths/${esc(a.template)}/${a.method}/responses/${a.status}`;
  const key = response.$ref ? mediaType : response.content?.[mediaType] !== undefined ? mediaType : '*/*';
  return `${base}/content/${esc(key)}/schema`;
}
