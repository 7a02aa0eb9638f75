import { afterEach, describe, expect, it } from 'vitest';
import { AgentCard, SendMessageRequest, taskStateToJSON, type Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { VirtualClock } from '../../src/core/clock.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { startTestHost, type Wire } from './in-process.ts';
import type { Binding } from './helpers.ts';

/**
 * Where real clients meet the host's HTTP edge: URLs with a trailing slash, answers that are always
 * JSON in the binding's own error shape, and the Content-Types both bindings take and send
 * (TCK HTTP_JSON-SVC-001, HTTP_JSON-ERR-001, HTTP_JSON-STATUS-001, JSONRPC-SSE-002).
 */
const hosts: RunningHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});
async function host(): Promise<RunningHost> {
  const h = await startTestHost(new MemoryStore());
  hosts.push(h);
  return h;
}

let seq = 0;
const send = (text: string) =>
  SendMessageRequest.fromJSON({
    message: { messageId: `edge-${process.pid}-${++seq}`, role: 'ROLE_USER', parts: [{ text }] },
  });

/** The official SDK client built from the host's card with a `/` appended to every interface URL. */
async function slashClient(h: RunningHost, binding: Binding) {
  const res = await fetch(h.cardUrl);
  const card = (await res.json()) as Wire;
  for (const i of card.supportedInterfaces as Wire[]) i.url = `${i.url as string}/`;
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory(), new RestTransportFactory()],
    preferredTransports: [binding],
  });
  return new ClientFactory(options).createFromAgentCard(AgentCard.fromJSON(card));
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'A2A-Version': '1.0', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const rpcBody = (method: string, params: unknown) => ({ jsonrpc: '2.0', id: 7, method, params });
const sendParams = (id: string) => ({
  message: { messageId: id, role: 'ROLE_USER', parts: [{ text: 'hi' }] },
});

describe('trailing slash on every route', () => {
  it.each<Binding>(['JSONRPC', 'HTTP+JSON'])(
    'the official SDK client works with "/" after the %s URL',
    async (binding) => {
      const h = await host();
      const client = await slashClient(h, binding);
      const task = (await client.sendMessage(send('slash'))) as Task;
      expect(taskStateToJSON(task.status!.state)).toBe('TASK_STATE_COMPLETED');
      const again = await client.getTask({ id: task.id, tenant: '' });
      expect(again.id).toBe(task.id);
    },
  );

  it('the card, the JSON-RPC URL and REST routes take a trailing slash', async () => {
    const h = await host();
    const card = await fetch(`${h.cardUrl}/`);
    expect(card.status).toBe(200);
    expect(card.headers.get('content-type')).toBe('application/json');
    const rpc = await post(`${h.jsonRpcUrl}/`, rpcBody('SendMessage', sendParams('s-1')), {
      'content-type': 'application/json',
    });
    expect(rpc.status).toBe(200);
    const id = ((await rpc.json()) as Wire).result.task.id as string;
    const got = await fetch(`${h.restUrl}/tasks/${id}/`, { headers: { 'A2A-Version': '1.0' } });
    expect(got.status).toBe(200);
    expect(((await got.json()) as Wire).id).toBe(id);
    const listed = await fetch(`${h.restUrl}/tasks/`, { headers: { 'A2A-Version': '1.0' } });
    expect(listed.status).toBe(200);
  });
});

describe('a JSON API answers JSON', () => {
  it('an unknown path below the JSON-RPC URL is a JSON-RPC error envelope, 404', async () => {
    const h = await host();
    const res = await post(`${h.jsonRpcUrl}/nope`, rpcBody('GetTask', { id: 'x' }), {
      'content-type': 'application/json',
    });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as Wire;
    expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32601 } });
  });

  it.each(['/nope', '/a2a', '/a2a/other/x', '/.well-known/other.json'])(
    'an unknown path %s is a google.rpc.Status, 404',
    async (path) => {
      const h = await host();
      const res = await fetch(`${h.url}${path}`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/json');
      const body = (await res.json()) as Wire;
      expect(body.error).toMatchObject({ code: 404, status: 'NOT_FOUND' });
      expect(body.error.details[0].reason).toBe('METHOD_NOT_FOUND');
    },
  );

  it('an unknown REST route and a wrong method are google.rpc.Status 404 in application/json', async () => {
    const h = await host();
    for (const [method, path] of [
      ['GET', '/nothing/here/at/all'],
      ['DELETE', '/tasks'],
      ['PUT', '/message:send'],
    ] as const) {
      const res = await fetch(`${h.restUrl}${path}`, { method, headers: { 'A2A-Version': '1.0' } });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/json');
      expect(((await res.json()) as Wire).error.status).toBe('NOT_FOUND');
    }
  });
});

describe('content types', () => {
  it('REST answers and REST errors are application/json', async () => {
    const h = await host();
    const ok = await post(`${h.restUrl}/message:send`, sendParams('ct-1'), {
      'content-type': 'application/json',
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('application/json');
    const missing = await fetch(`${h.restUrl}/tasks/absent`, { headers: { 'A2A-Version': '1.0' } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('application/json');
  });

  it.each(['application/json', 'application/a2a+json', 'application/A2A+JSON; charset=utf-8'])(
    'both bindings take a body sent as %s',
    async (type) => {
      const h = await host();
      const rest = await post(`${h.restUrl}/message:send`, sendParams(`ct-r-${type}`), {
        'content-type': type,
      });
      expect(rest.status).toBe(200);
      const rpc = await post(h.jsonRpcUrl, rpcBody('SendMessage', sendParams(`ct-j-${type}`)), {
        'content-type': type,
      });
      expect(((await rpc.json()) as Wire).result.task.status.state).toBe('TASK_STATE_COMPLETED');
    },
  );

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'application/xml'])(
    'JSON-RPC refuses a %s body with -32005 ContentTypeNotSupportedError',
    async (type) => {
      const h = await host();
      const res = await post(h.jsonRpcUrl, rpcBody('SendMessage', sendParams(`bad-${type}`)), {
        'content-type': type,
      });
      expect(res.headers.get('content-type')).toBe('application/json');
      const body = (await res.json()) as Wire;
      expect(body.error.code).toBe(-32005);
      expect(body.error.data[0].reason).toBe('CONTENT_TYPE_NOT_SUPPORTED');
    },
  );

  it.each(['text/plain', 'application/x-www-form-urlencoded'])(
    'HTTP+JSON refuses a %s body with 415 in application/json',
    async (type) => {
      const h = await host();
      for (const path of ['/message:send', '/message:stream']) {
        const res = await post(`${h.restUrl}${path}`, sendParams(`bad-r-${type}-${path}`), {
          'content-type': type,
        });
        expect(res.status, path).toBe(415);
        expect(res.headers.get('content-type')).toBe('application/json');
        const body = (await res.json()) as Wire;
        expect(body.error.code).toBe(415);
        expect(body.error.details[0].reason).toBe('CONTENT_TYPE_NOT_SUPPORTED');
      }
    },
  );
});

describe('agent card caching', () => {
  it('Last-Modified beside the ETag; If-Modified-Since and If-None-Match answer 304', async () => {
    const clock = new VirtualClock(Date.parse('2026-03-04T05:06:07.890Z'));
    const h = await startTestHost(new MemoryStore(), { clock });
    hosts.push(h);
    const first = await fetch(h.cardUrl);
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag')!;
    const lastModified = first.headers.get('last-modified')!;
    expect(lastModified).toBe('Wed, 04 Mar 2026 05:06:07 GMT');
    await clock.advance(60_000);
    // The card has not changed: the same Last-Modified later on.
    expect((await fetch(h.cardUrl)).headers.get('last-modified')).toBe(lastModified);
    const since = await fetch(h.cardUrl, { headers: { 'if-modified-since': lastModified } });
    expect(since.status).toBe(304);
    expect(since.headers.get('last-modified')).toBe(lastModified);
    expect(since.headers.get('etag')).toBe(etag);
    const older = await fetch(h.cardUrl, {
      headers: { 'if-modified-since': 'Wed, 04 Mar 2026 05:06:06 GMT' },
    });
    expect(older.status).toBe(200);
    expect((await fetch(h.cardUrl, { headers: { 'if-modified-since': 'not a date' } })).status).toBe(200);
    expect((await fetch(h.cardUrl, { headers: { 'if-none-match': `W/${etag}, "other"` } })).status).toBe(304);
    // If-None-Match decides when both are sent (RFC 9110 §13.2.2).
    const both = await fetch(h.cardUrl, {
      headers: { 'if-none-match': '"other"', 'if-modified-since': lastModified },
    });
    expect(both.status).toBe(200);
  });
});
