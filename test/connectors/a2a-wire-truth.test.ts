import { afterEach, describe, expect, it } from 'vitest';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import { a2aWireError } from '../../src/connectors/a2a/wire-errors.ts';

/**
 * What the A2A connector may conclude from an answer: only the protocol's own TaskNotFoundError means
 * the agent does not know a task; any other 404 is a route that did not answer as A2A. And the agent
 * card is kept as its HTTP caching headers say.
 */
describe('wire errors', () => {
  it('TaskNotFound by JSON-RPC code or by REST ErrorInfo reason is not_found', () => {
    expect(a2aWireError({ rpcCode: -32001, httpStatus: 200 }).code).toBe('not_found');
    const rest = a2aWireError({
      httpStatus: 404,
      details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND' }],
    });
    expect(rest.code).toBe('not_found');
  });

  it('a bare 404 (HTML page, gateway JSON, Status without the reason) is retryable route trouble', () => {
    for (const err of [
      a2aWireError({ httpStatus: 404 }),
      a2aWireError({ httpStatus: 404, message: 'no Route matched with those values' }),
      a2aWireError({ httpStatus: 404, details: [{ reason: 'SOMETHING_ELSE_NOT_FOUND' }] }),
    ]) {
      expect(err.code).toBe('unavailable');
      expect(err.retryable).toBe(true);
      expect(err.details?.route).toBe('not_protocol');
    }
  });
});

describe('agent card cache', () => {
  const cardFor = (url: string, streaming: boolean) => ({
    name: 'a',
    capabilities: { streaming, pushNotifications: false },
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
  });
  let reads = 0;
  afterEach(() => {
    reads = 0;
  });

  /** A fetch that serves the card with `cacheControl` and answers GetTask with a working task. */
  function fakeFetch(card: () => object, cacheControl: string): typeof fetch {
    return (async (input: RequestInfo | URL, init?: RequestInit) => {
      const url = String(input);
      if (url.endsWith('/.well-known/agent-card.json')) {
        reads++;
        return new Response(JSON.stringify(card()), {
          headers: { 'content-type': 'application/json', 'cache-control': cacheControl },
        });
      }
      const body = JSON.parse(String(init?.body)) as { id: number };
      if (url.includes('/old'))
        return new Response('<html>404 Not Found</html>', {
          status: 404,
          headers: { 'content-type': 'text/html' },
        });
      return Response.json({
        jsonrpc: '2.0',
        id: body.id,
        result: { id: 't1', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } },
      });
    }) as typeof fetch;
  }
  const never = new AbortController().signal;

  it('is read once while max-age holds, and again on every call when the agent says no-cache', async () => {
    const cached = new A2AConnector({
      target: 'a',
      baseUrl: 'http://agent',
      fetch: fakeFetch(() => cardFor('http://agent/rpc', true), 'max-age=3600'),
    });
    await cached.get('t1', never);
    await cached.get('t1', never);
    expect(reads).toBe(1);
    reads = 0;
    const uncached = new A2AConnector({
      target: 'a',
      baseUrl: 'http://agent',
      fetch: fakeFetch(() => cardFor('http://agent/rpc', true), 'no-cache'),
    });
    await uncached.get('t1', never);
    await uncached.get('t1', never);
    expect(reads).toBe(2);
  });

  it('prepare() makes capabilities the card’s own before a start is chosen', async () => {
    const c = new A2AConnector({
      target: 'a',
      baseUrl: 'http://agent',
      fetch: fakeFetch(() => cardFor('http://agent/rpc', false), 'max-age=60'),
    });
    expect(c.capabilities.stream).toBe(true);
    await c.prepare(never);
    expect(c.capabilities.stream).toBe(false);
  });

  it('a page instead of an A2A answer re-reads the card and moves to the interface it lists now', async () => {
    let url = 'http://agent/old';
    const c = new A2AConnector({
      target: 'a',
      baseUrl: 'http://agent',
      fetch: fakeFetch(() => cardFor(url, false), 'max-age=3600'),
    });
    await c.prepare(never);
    const before = c.revision;
    url = 'http://agent/new';
    const snap = await c.get('t1', never);
    expect(snap.state).toBe('running');
    expect(c.revision).not.toBe(before);
    expect(c.revision).toContain('http://agent/new');
  });

  it('a stream answered with a page before its first frame moves to the interface the card lists now', async () => {
    let url = 'http://agent/old';
    const frames = [
      { task: { id: 't1', contextId: 'c', status: { state: 'TASK_STATE_WORKING' } } },
      { statusUpdate: { taskId: 't1', contextId: 'c', status: { state: 'TASK_STATE_COMPLETED' } } },
    ];
    const streamed: string[] = [];
    const base = fakeFetch(() => cardFor(url, true), 'max-age=3600');
    const c = new A2AConnector({
      target: 'a',
      baseUrl: 'http://agent',
      fetch: (async (input: RequestInfo | URL, init?: RequestInit) => {
        const to = String(input);
        if (to.endsWith('/.well-known/agent-card.json') || to.includes('/old')) return base(input, init);
        streamed.push(to);
        const sse = frames.map(
          (result, i) => `id: ${i + 1}\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result })}\n\n`,
        );
        return new Response(sse.join(''), { headers: { 'content-type': 'text/event-stream' } });
      }) as typeof fetch,
    });
    await c.prepare(never);
    url = 'http://agent/new';
    const states: string[] = [];
    for await (const snap of c.observe('t1', null, never)) states.push(snap.state);
    expect(states).toEqual(['running', 'succeeded']);
    expect(streamed).toEqual(['http://agent/new']);
    expect(reads).toBe(2);
  });
});
