import { createHash } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import { grpcTarget } from '../../src/connectors/a2a/interface-host.ts';
import { lazyGrpcTransport } from '../../src/connectors/a2a/grpc-lazy.ts';
import { isRouteError } from '../../src/connectors/a2a/wire-errors.ts';
import { TaskplaneError } from '../../src/core/errors.ts';
import { startHost, type RunningHost } from '../../src/host/start-host.ts';
import type { AgentCard } from '../../src/protocols/a2a/types.ts';
import { freePort } from '../support/process.ts';

/**
 * The connector's gRPC transport beyond the shared behaviour suite: which interface it picks, how the
 * interface URL becomes a gRPC target, keys in metadata, and the errors of a target that does not answer.
 */
const never = new AbortController().signal;
const KEY = 'alice-secret-key-0001';
let host: RunningHost;
let card: AgentCard;

beforeAll(async () => {
  const keys = new Map([[createHash('sha256').update(KEY).digest('hex'), 'alice']]);
  host = await startHost({
    port: 0,
    grpcPort: 0,
    db: 'memory:',
    logger: pino({ level: 'silent' }),
    auth: 'keys',
    keys,
  });
  card = (await (await fetch(host.cardUrl)).json()) as AgentCard;
});
afterAll(async () => {
  await host?.close();
});

/** The host's card with its interfaces reordered or replaced. */
const withInterfaces = (interfaces: AgentCard['supportedInterfaces']): AgentCard => ({
  ...card,
  supportedInterfaces: interfaces,
});
const grpcFirst = () =>
  withInterfaces([...card.supportedInterfaces].sort((a) => (a.protocolBinding === 'GRPC' ? -1 : 1)));

describe('A2A connector over gRPC', () => {
  it('an interface URL becomes a gRPC target: TLS for https/grpcs and bare :443, plaintext otherwise', () => {
    expect(grpcTarget('127.0.0.1:50051')).toEqual({ target: '127.0.0.1:50051', tls: false });
    expect(grpcTarget('a2a.example.com:443')).toEqual({ target: 'a2a.example.com:443', tls: true });
    expect(grpcTarget('https://a2a.example.com')).toEqual({ target: 'a2a.example.com:443', tls: true });
    expect(grpcTarget('grpcs://a2a.example.com:8443')).toEqual({ target: 'a2a.example.com:8443', tls: true });
    expect(grpcTarget('grpc://10.0.0.1:9000/')).toEqual({ target: '10.0.0.1:9000', tls: false });
    expect(grpcTarget('http://a2a.internal')).toEqual({ target: 'a2a.internal:80', tls: false });
  });

  it('the card order decides (gRPC when listed first); preferBinding overrides it', async () => {
    const headers = { authorization: `Bearer ${KEY}` };
    const first = new A2AConnector({ target: 'demo', baseUrl: host.url, card: grpcFirst(), headers });
    expect(first.transport.binding).toBe('GRPC');
    const hostOrder = new A2AConnector({ target: 'demo', baseUrl: host.url, card, headers });
    expect(hostOrder.transport.binding).toBe('JSONRPC');
    const preferred = new A2AConnector({
      target: 'demo',
      baseUrl: host.url,
      card,
      headers,
      preferBinding: 'GRPC',
    });
    expect(preferred.transport.binding).toBe('GRPC');
  });

  it('sends the target headers as metadata: the key authenticates, a wrong one is unauthenticated', async () => {
    const c = new A2AConnector({
      target: 'demo',
      baseUrl: host.url,
      card,
      preferBinding: 'GRPC',
      headers: { authorization: `Bearer ${KEY}` },
      idempotentStart: true,
    });
    const s = await c.start(
      { envelopeId: 'e1', messageId: `m-grpc-${Date.now()}`, contextId: 'c-grpc', input: 'hello' },
      never,
    );
    expect(s.remoteId).toBeTruthy();
    const got = await c.get(s.remoteId, never);
    expect(got.remoteId).toBe(s.remoteId);
    const wrong = new A2AConnector({
      target: 'demo',
      baseUrl: host.url,
      card,
      preferBinding: 'GRPC',
      headers: { authorization: 'Bearer not-the-key-000000' },
    });
    const err = (await wrong.get(s.remoteId, never).catch((e: unknown) => e)) as TaskplaneError;
    expect(err).toBeInstanceOf(TaskplaneError);
    expect(err.code).toBe('unauthenticated');
  });

  it('a closed port is a retryable unavailable marked not sent; a target without the service is a route error', async () => {
    const port = await freePort();
    const closed = new A2AConnector({
      target: 'demo',
      baseUrl: host.url,
      card: withInterfaces([{ url: `127.0.0.1:${port}`, protocolBinding: 'GRPC', protocolVersion: '1.0' }]),
      timeoutMs: 5_000,
    });
    const refused = (await closed.get('task_x', never).catch((e: unknown) => e)) as TaskplaneError;
    expect(refused.code).toBe('unavailable');
    expect(refused.details?.notSent).toBe(true);

    const empty = new grpc.Server();
    const emptyPort = await new Promise<number>((resolve, reject) =>
      empty.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    try {
      const elsewhere = new A2AConnector({
        target: 'demo',
        baseUrl: host.url,
        card: withInterfaces([
          { url: `127.0.0.1:${emptyPort}`, protocolBinding: 'GRPC', protocolVersion: '1.0' },
        ]),
      });
      const moved = await elsewhere.get('task_x', never).catch((e: unknown) => e);
      expect(isRouteError(moved)).toBe(true);
      expect((moved as TaskplaneError).code).toBe('unavailable');
    } finally {
      empty.forceShutdown();
    }
  });
});

describe('a gRPC interface whose connections are looked up the interface way', () => {
  const grpcPort = () =>
    grpcTarget(card.supportedInterfaces.find((i) => i.protocolBinding === 'GRPC')!.url)
      .target.split(':')
      .at(-1)!;
  /** agent.example, which no DNS here knows, looked up as the host's loopback address. */
  const asked: string[] = [];
  const toLoopback: LookupFunction = (hostname, options, callback) => {
    asked.push(hostname);
    if (options.all)
      (callback as (e: null, a: LookupAddress[]) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
    else callback(null, '127.0.0.1', 4);
  };

  it('dials the address its lookup found, with the host name kept as the authority', async () => {
    const t = lazyGrpcTransport({
      url: `grpc://agent.example:${grpcPort()}`,
      headers: { authorization: `Bearer ${KEY}` },
      timeoutMs: 5_000,
      lookup: toLoopback,
    });
    const err = (await t
      .call('GetTask', { id: 'task_none' }, never)
      .catch((e: unknown) => e)) as TaskplaneError;
    // The host answered (its own not-found for a task it does not have): the call reached it.
    expect(err.code).toBe('not_found');
    expect(asked).toEqual(['agent.example']);
  });

  it('a lookup that refuses fails the call before anything is sent, and is asked again at the next call', async () => {
    let refusals = 0;
    const refusing: LookupFunction = (_hostname, _options, callback) => {
      refusals++;
      callback(new TaskplaneError('permission_denied', 'not public', { retryable: true }) as never, '', 0);
    };
    const t = lazyGrpcTransport({
      url: `agent.example:${grpcPort()}`,
      timeoutMs: 5_000,
      lookup: refusing,
    });
    for (let i = 0; i < 2; i++)
      await expect(t.call('GetTask', { id: 'task_none' }, never)).rejects.toMatchObject({
        code: 'permission_denied',
      });
    expect(refusals).toBe(2);
  });
});
