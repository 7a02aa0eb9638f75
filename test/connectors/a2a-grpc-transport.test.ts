import { createHash } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import { grpcTarget } from '../../src/connectors/a2a/interface-host.ts';
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
