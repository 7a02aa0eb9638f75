import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { LookupAddress } from 'node:dns';
import { isIP, type AddressInfo, type LookupFunction } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { isTerminal } from '../../src/core/states.ts';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import { grpcDialTarget, interfaceHost } from '../../src/connectors/a2a/interface-host.ts';
import { publicOnlyLookup } from '../../src/connectors/a2a/interface-reach.ts';
import { jsonRpcTransport } from '../../src/connectors/a2a/transports.ts';
import { lazyGrpcTransport } from '../../src/connectors/a2a/grpc-lazy.ts';
import { TaskplaneError } from '../../src/core/errors.ts';
import { startSdkA2APeer } from '../support/sdk-a2a-peer.ts';
import { openStream } from '../../src/connectors/http-stream.ts';
import type { Resolver } from '../../src/core/public-address.ts';
import { recordingLogger } from '../support/recording-logger.ts';
import { peerPlane, type PeerPlane } from '../peers/peer-plane.ts';
import { startSdkPeer, type SdkPeer } from '../peers/sdk-peer.ts';

/**
 * An agent card names where the plane sends every call of its target. The card of an agent on public
 * addresses may not send it into a private network (interface-reach.ts); an agent placed on a private
 * address by the operator may, and so may any card on the base URL's own host name.
 */
const PUBLIC = '93.184.216.34';
const NAMES: Record<string, string> = {
  'agent.example': PUBLIC,
  'api.example': '93.184.216.35',
  'internal.example': '10.0.0.5',
  'agent.internal': '10.1.2.3',
  localhost: '127.0.0.1',
};
const resolve: Resolver = async (host) => {
  const address = NAMES[host];
  if (!address) throw new Error(`ENOTFOUND ${host}`);
  return [{ address, family: 4 }];
};

/** A fetch that serves one card at any base URL and records every URL asked for. */
function cardFetch(interfaceUrl: string, asked: string[], binding = 'JSONRPC'): typeof fetch {
  return (async (input: RequestInfo | URL) => {
    const url = String(input);
    asked.push(url);
    if (!url.endsWith('/.well-known/agent-card.json')) return new Response('no', { status: 500 });
    return Response.json({
      name: 'a',
      capabilities: { streaming: true, pushNotifications: false },
      supportedInterfaces: [{ url: interfaceUrl, protocolBinding: binding, protocolVersion: '1.0' }],
    });
  }) as typeof fetch;
}

const never = () => new AbortController().signal;

describe('where an agent card may send the plane', () => {
  for (const [inside, named] of [
    ['http://169.254.169.254/latest/meta-data', '169.254.169.254'],
    ['http://internal.example/a2a', '10.0.0.5'],
    ['http://[::ffff:127.0.0.1]:8080/a2a', '::ffff:7f00:1'],
  ] as const)
    it(`a public agent's card naming ${inside} is refused, and nothing is sent there`, async () => {
      const asked: string[] = [];
      const logger = recordingLogger();
      const c = new A2AConnector({
        target: 't',
        baseUrl: 'http://agent.example',
        fetch: cardFetch(inside, asked),
        resolve,
        logger,
      });
      const err = (await c.prepare(never()).catch((e: unknown) => e)) as TaskplaneError;
      expect(err).toMatchObject({ code: 'permission_denied', retryable: true, details: { notSent: true } });
      expect(err.message).toContain(named);
      expect(err.message).toContain('allowPrivateInterfaces');
      expect(asked).toEqual(['http://agent.example/.well-known/agent-card.json']);
      expect(c.revision).toBeNull();
      expect(logger.lines.map((l) => l.msg)).toContain(
        'agent card refused: its interface is not known to be public',
      );
    });

  // gRPC targets are read by grpc-js, which has forms of its own: a DNS server named in the authority
  // (`dns://agent.example/…` names the agent's own host, yet connects wherever that server says), literal
  // addresses, Unix sockets. Each is judged by where it connects, or refused when it does not show that.
  for (const [named, why] of [
    ['10.0.0.5:50051', 'on 10.0.0.5, which is not a public address'],
    ['localhost:50051', '127.0.0.1, not a public address'],
    ['grpc://internal.example:50051', '10.0.0.5, not a public address'],
    ['dns://agent.example/10.0.0.5:50051', 'does not show the host it connects to'],
    ['dns:///internal.example:50051', 'does not show the host it connects to'],
    ['ipv4:10.0.0.5:50051', 'does not show the host it connects to'],
    ['unix:///var/run/docker.sock', 'does not show the host it connects to'],
  ] as const)
    it(`a public agent's card naming the gRPC target ${named} is refused`, async () => {
      const asked: string[] = [];
      const c = new A2AConnector({
        target: 't',
        baseUrl: 'http://agent.example',
        fetch: cardFetch(named, asked, 'GRPC'),
        resolve,
      });
      const err = (await c.prepare(never()).catch((e: unknown) => e)) as TaskplaneError;
      expect(err).toMatchObject({ code: 'permission_denied', retryable: true, details: { notSent: true } });
      expect(err.message).toContain(why);
      expect(c.revision).toBeNull();
    });

  it('a bare host:port gRPC target is dialled as a DNS name, never as a scheme of grpc-js', () => {
    expect(grpcDialTarget('dns:53')).toBe('dns:dns:53');
    expect(grpcDialTarget('api.example:50051')).toBe('dns:api.example:50051');
    expect(grpcDialTarget('[2001:db8::1]:443')).toBe('dns:[2001:db8::1]:443');
    expect(grpcDialTarget('unix:///run/a.sock')).toBe('unix:///run/a.sock');
    expect(interfaceHost('dns:53', 'GRPC')).toBe('dns');
    expect(interfaceHost('grpcs://API.example', 'GRPC')).toBe('api.example');
    expect(interfaceHost('ftp://api.example/a2a', 'JSONRPC')).toBeNull();
  });

  it('a refused card is judged again on the next read, not taken as "not modified" by its ETag', async () => {
    let card = { etag: '"v1"', named: 'http://agent.example:9000/a2a' };
    const conditional: Array<string | null> = [];
    const fetchCard = (async (_input: RequestInfo | URL, init?: RequestInit) => {
      const ifNoneMatch = new Headers(init?.headers).get('if-none-match');
      conditional.push(ifNoneMatch);
      if (ifNoneMatch === card.etag) return new Response(null, { status: 304, headers: { etag: card.etag } });
      return Response.json(
        {
          name: 'a',
          capabilities: { streaming: true },
          supportedInterfaces: [{ url: card.named, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
        },
        { headers: { etag: card.etag } },
      );
    }) as typeof fetch;
    const c = new A2AConnector({ target: 't', baseUrl: 'http://agent.example', fetch: fetchCard, resolve });
    await c.prepare(never());
    card = { etag: '"v2"', named: 'http://169.254.169.254/a2a' };
    for (let i = 0; i < 2; i++)
      await expect(c.prepare(never(), { fresh: true })).rejects.toMatchObject({ code: 'permission_denied' });
    // Each read asks as of the card in force (v1), so the refused v2 comes back whole and is judged.
    expect(conditional).toEqual([null, '"v1"', '"v1"']);
    expect(c.revision).toBe('JSONRPC http://agent.example:9000/a2a');
  });

  const accepted: Array<{
    what: string;
    baseUrl: string;
    named: string;
    resolve?: Resolver;
    allow?: boolean;
    binding?: 'GRPC';
  }> = [
    {
      what: 'a public agent may name a public interface on another host',
      baseUrl: 'http://agent.example',
      named: 'http://api.example/a2a',
    },
    {
      what: 'an agent the operator placed on a private address may name private interfaces',
      baseUrl: 'http://agent.internal',
      named: 'http://127.0.0.1:9000/a2a',
    },
    {
      what: "an interface on the base URL's own host name is not judged (a base that does not resolve is no obstacle)",
      baseUrl: 'http://agent.example',
      named: 'http://agent.example:9000/a2a',
      resolve: () => Promise.reject(new Error('resolved')),
    },
    {
      what: 'a public agent may name a public gRPC host:port on another host',
      baseUrl: 'http://agent.example',
      named: 'api.example:50051',
      binding: 'GRPC',
    },
    {
      what: "a gRPC URL on the base URL's own host name is not judged",
      baseUrl: 'http://agent.example',
      named: 'grpcs://agent.example:8443',
      binding: 'GRPC',
      resolve: () => Promise.reject(new Error('resolved')),
    },
    {
      what: 'an agent the operator placed on a private address may name a Unix socket',
      baseUrl: 'http://agent.internal',
      named: 'unix:///run/agent.sock',
      binding: 'GRPC',
    },
    {
      what: 'allowPrivateInterfaces lets a public agent name a private interface',
      baseUrl: 'http://agent.example',
      named: 'http://internal.example/a2a',
      allow: true,
    },
  ];
  for (const a of accepted)
    it(a.what, async () => {
      const c = new A2AConnector({
        target: 't',
        baseUrl: a.baseUrl,
        fetch: cardFetch(a.named, [], a.binding),
        resolve: a.resolve ?? resolve,
        ...(a.allow ? { allowPrivateInterfaces: true } : {}),
      });
      await c.prepare(never());
      expect(c.revision).toBe(`${a.binding ?? 'JSONRPC'} ${a.named}`);
    });
});

describe('against the official @a2a-js/sdk agent, reached by a public name', () => {
  // The SDK's card names the agent by its loopback address; the target names it agent.example, which
  // resolves to a public address (its requests are sent to the peer): a public agent naming a loopback
  // interface.
  const open: Array<{ close(): Promise<unknown> }> = [];
  afterEach(async () => {
    for (const o of open.reverse()) await o.close().catch(() => {});
    open.length = 0;
  });

  /** A plane whose target names the peer agent.example: its requests go to the peer. */
  async function planeOn(peer: SdkPeer, allowPrivateInterfaces: boolean): Promise<PeerPlane> {
    const port = new URL(peer.base).port;
    const toPeer = ((input: RequestInfo | URL, init?: RequestInit) =>
      fetch(String(input).replace(`http://agent.example:${port}`, peer.base), init)) as typeof fetch;
    const p = await peerPlane(
      `http://agent.example:${port}`,
      {},
      { fetch: toPeer, resolve, allowPrivateInterfaces },
    );
    open.push(p);
    return p;
  }

  it('refused: the job stays unstarted, its last error says why, the agent never hears of it', async () => {
    const peer = await startSdkPeer({ streaming: true });
    open.push(peer);
    const p = await planeOn(peer, false);
    const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'go' });
    const env = await p.until(envelope.id, (e) => !!e.lastError, 'a failed attempt');
    expect(env.state).toBe('accepted');
    expect(env.remoteId).toBeNull();
    expect(env.lastError).toMatchObject({ code: 'permission_denied' });
    expect(env.lastError!.message).toContain('127.0.0.1');
    expect(env.startMaybeSent ?? false).toBe(false);
    expect(peer.received).toEqual([]);
  });

  it('allowed by the target: the job runs to its end', async () => {
    const peer = await startSdkPeer({ streaming: true });
    open.push(peer);
    const p = await planeOn(peer, true);
    const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'go' });
    await p.until(envelope.id, (e) => e.remoteId !== null, 'bound');
    peer.finish();
    expect((await p.until(envelope.id, (e) => isTerminal(e.state), 'end')).state).toBe('succeeded');
  });
});

describe('a public agent whose name later answers private (DNS rebinding) or that redirects inward', () => {
  const open: Array<{ close(): Promise<unknown> }> = [];
  afterEach(async () => {
    for (const o of open.reverse()) await o.close().catch(() => {});
    open.length = 0;
  });

  /**
   * The official SDK agent, reached as agent.example: the card is fetched through a fetch that sends the
   * request to the peer and names agent.example in the card it returns. agent.example answers public the
   * first time it is asked (when the card is judged) and loopback after that, as a name rebound by
   * whoever runs its DNS.
   */
  async function rebound(streaming: boolean) {
    const peer = await startSdkPeer({ streaming });
    open.push(peer);
    const port = new URL(peer.base).port;
    const named = `http://agent.example:${port}`;
    const viaCardFetch: string[] = [];
    const cardFetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      viaCardFetch.push(String(input));
      const answer = await fetch(String(input).replace(named, peer.base), init);
      const text = (await answer.text()).replaceAll(peer.base, named);
      return new Response(text, { status: answer.status, headers: answer.headers });
    }) as typeof fetch;
    const asked: string[] = [];
    const rebinding: Resolver = async (host) => {
      asked.push(host);
      return [{ address: asked.length === 1 ? PUBLIC : '127.0.0.1', family: 4 }];
    };
    const p = await peerPlane(named, {}, { fetch: cardFetch, resolve: rebinding });
    open.push(p);
    return { peer, p, asked, viaCardFetch };
  }

  for (const streaming of [true, false])
    it(`the ${streaming ? 'streaming ' : ''}start is refused at the connection, and the agent never hears of it`, async () => {
      const { peer, p, asked, viaCardFetch } = await rebound(streaming);
      const { envelope } = await p.plane.create({ tenant: 't', target: 'peer', input: 'go' });
      const env = await p.until(envelope.id, (e) => !!e.lastError, 'a failed attempt');
      expect(env.lastError).toMatchObject({ code: 'permission_denied' });
      expect(env.lastError!.message).toContain('agent.example is at 127.0.0.1, not a public address');
      expect(env.state).toBe('accepted');
      expect(env.startMaybeSent ?? false).toBe(false);
      expect(peer.received).toEqual([]);
      // The card was judged with the public answer; the connection asked again and was refused.
      expect(asked.length).toBeGreaterThanOrEqual(2);
      // Only the card went through the target's fetch: a fetch cannot be given the lookup.
      expect(viaCardFetch.filter((u) => !u.endsWith('/.well-known/agent-card.json'))).toEqual([]);
    });
});

describe('an agent found public stays so', () => {
  const open: Array<{ close(): Promise<unknown> }> = [];
  afterEach(async () => {
    for (const o of open.reverse()) await o.close().catch(() => {});
    open.length = 0;
  });

  it('a card read again while its name answers private does not let its connections go inward', async () => {
    const peer = await startSdkPeer({ streaming: false });
    open.push(peer);
    const port = new URL(peer.base).port;
    const named = `http://agent.example:${port}`;
    const cardFetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const answer = await fetch(String(input).replace(named, peer.base), init);
      const text = (await answer.text()).replaceAll(peer.base, named);
      return new Response(text, { status: answer.status, headers: answer.headers });
    }) as typeof fetch;
    let answer = PUBLIC;
    const c = new A2AConnector({
      target: 't',
      baseUrl: named,
      fetch: cardFetch,
      resolve: async () => [{ address: answer, family: 4 }],
      timeoutMs: 5_000,
    });
    await c.prepare(never());
    answer = '127.0.0.1';
    // Read again: the base now resolves to loopback, as an agent placed inside would.
    await c.prepare(never(), { fresh: true });
    expect(c.revision).toBe(`JSONRPC ${named}/a2a`);
    const err = (await c.get('task_x', never()).catch((e: unknown) => e)) as TaskplaneError;
    expect(err).toMatchObject({ code: 'permission_denied', details: { notSent: true } });
    expect(peer.received).toEqual([]);
  });

  it('whether the agent is public is judged by the address its card came from, not by a second lookup', async () => {
    // The resolver says localhost is public; the card was read from 127.0.0.1 (the system's localhost), so
    // the agent is one placed inside, which may name private interfaces.
    const server = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          name: 'a',
          capabilities: { streaming: false },
          supportedInterfaces: [
            { url: 'http://internal.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
          ],
        }),
      );
    });
    open.push({ close: () => new Promise((r) => server.close(r)) });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    const c = new A2AConnector({
      target: 't',
      baseUrl: `http://localhost:${port}`,
      resolve: async (host) => (host === 'localhost' ? [{ address: PUBLIC, family: 4 }] : resolve(host)),
    });
    await c.prepare(never());
    expect(c.revision).toBe('JSONRPC http://internal.example/a2a');
  });
});

describe('node:http requests with a lookup of their own', () => {
  const servers: Server[] = [];
  const stops: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
    for (const stop of stops.splice(0)) await stop();
  });
  async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<number> {
    const server = createServer(handler);
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return (server.address() as AddressInfo).port;
  }
  /** Names resolve to loopback; an address is refused, as publicOnlyLookup refuses a private one. */
  const namesOnly: LookupFunction = (hostname, options, callback) => {
    if (isIP(hostname.replace(/^\[|\]$/g, '')) !== 0) {
      callback(Object.assign(new Error(`${hostname} refused`), { code: 'EREFUSED' }), '', 0);
      return;
    }
    if (options.all)
      (callback as (e: null, a: LookupAddress[]) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
    else callback(null, '127.0.0.1', 4);
  };

  it('calls to the official SDK agent connect where the lookup says, over JSON-RPC and gRPC', async () => {
    // agent.example is known to no DNS here: a call that used the system's lookup would be unreachable.
    // The SDK's own "task not found" is the answer of a call that reached it.
    const sdk = await startSdkA2APeer({
      name: 'sdk peer',
      executor: { execute: async () => {}, cancelTask: async () => {} },
    });
    stops.push(() => sdk.close());
    const card = (await (await fetch(`${sdk.base}/.well-known/agent-card.json`)).json()) as {
      supportedInterfaces: Array<{ url: string; protocolBinding: string }>;
    };
    const at = (binding: string) =>
      card.supportedInterfaces
        .find((i) => i.protocolBinding === binding)!
        .url.replace('127.0.0.1', 'agent.example');
    const asked: string[] = [];
    const lookup: LookupFunction = (hostname, options, callback) => {
      asked.push(hostname);
      namesOnly(hostname, options, callback);
    };
    const options = { timeoutMs: 5_000, lookup };
    for (const t of [
      jsonRpcTransport({ ...options, url: at('JSONRPC') }),
      lazyGrpcTransport({ ...options, url: at('GRPC') }),
    ])
      await expect(t.call('GetTask', { id: 'task_none' }, never())).rejects.toMatchObject({
        code: 'not_found',
      });
    expect(asked).toEqual(['agent.example', 'agent.example']);
  });

  it('a gRPC lookup that refuses fails the call before anything is sent, and is asked again at the next call', async () => {
    let refusals = 0;
    const refusing: LookupFunction = (_hostname, _options, callback) => {
      refusals++;
      callback(new TaskplaneError('permission_denied', 'not public', { retryable: true }) as never, '', 0);
    };
    const t = lazyGrpcTransport({ url: 'agent.example:50051', timeoutMs: 5_000, lookup: refusing });
    for (let i = 0; i < 2; i++)
      await expect(t.call('GetTask', { id: 'task_none' }, never())).rejects.toMatchObject({
        code: 'permission_denied',
      });
    expect(refusals).toBe(2);
  });

  it('a redirect to an address is asked of the lookup too, and refused there before anything is sent', async () => {
    const inner: string[] = [];
    const innerPort = await serve((req, res) => {
      inner.push(String(req.url));
      res.end('{}');
    });
    const port = await serve((_req, res) => {
      res.statusCode = 307;
      res.setHeader('location', `http://127.0.0.1:${innerPort}/latest/meta-data`);
      res.end();
    });
    const err = await openStream(
      `http://agent.example:${port}/a2a`,
      { method: 'POST', headers: {}, body: '{}', lookup: namesOnly },
      never(),
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'EREFUSED' });
    expect(inner).toEqual([]);
  });
});

describe('publicOnlyLookup', () => {
  const ask = (lookup: LookupFunction, host: string, all: boolean) =>
    new Promise<unknown>((resolve, reject) =>
      lookup(host, { all }, (err, address, family) =>
        err ? reject(err) : resolve(all ? address : [address, family]),
      ),
    );
  const names: Resolver = async (host) =>
    host === 'mixed.example'
      ? [
          { address: PUBLIC, family: 4 },
          { address: '127.0.0.1', family: 4 },
        ]
      : host === 'six.example'
        ? [{ address: '2606:2800:220:1::1', family: 6 }]
        : resolve(host);

  it('answers a name whose every address is public, in either form node:net asks for', async () => {
    const lookup = publicOnlyLookup(names);
    expect(await ask(lookup, 'agent.example', true)).toEqual([{ address: PUBLIC, family: 4 }]);
    expect(await ask(lookup, 'agent.example', false)).toEqual([PUBLIC, 4]);
    expect(await ask(lookup, 'six.example', false)).toEqual(['2606:2800:220:1::1', 6]);
    expect(await ask(lookup, PUBLIC, true)).toEqual([{ address: PUBLIC, family: 4 }]);
  });

  for (const [host, why] of [
    ['internal.example', 'internal.example is at 10.0.0.5, not a public address'],
    ['mixed.example', 'mixed.example is at 127.0.0.1, not a public address'],
    ['169.254.169.254', '169.254.169.254 is not a public address'],
    ['[::ffff:127.0.0.1]', '::ffff:127.0.0.1 is not a public address'],
  ] as const)
    it(`refuses ${host}: permission_denied, retryable, nothing sent`, async () => {
      const err = await ask(publicOnlyLookup(names), host, true).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'permission_denied', retryable: true, details: { notSent: true } });
      expect((err as Error).message).toContain(why);
    });

  it('a name that does not resolve is ENOTFOUND, the network error it is', async () => {
    const err = await ask(publicOnlyLookup(names), 'nowhere.example', true).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ENOTFOUND' });
  });
});
