import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as jose from 'jose';
import { AgentCard, generateAgentCardSignature } from '@a2a-js/sdk';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import type { Logger } from '../../src/core/logger.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { startTestHost } from '../host/in-process.ts';
import { Plane } from '../../src/plane/plane.ts';
import { SystemClock } from '../../src/core/clock.ts';
import { SeededRandom } from '../../src/core/random.ts';

/**
 * The connector checks signed agent cards against the keys a target trusts (A2A 1.0, agent card
 * signing): a card signed by `@a2a-js/sdk` with a trusted key binds; a changed card, another key's
 * signature, or (when required) no signature refuses the card with `unauthenticated`, a message that
 * says why, and a warning in the log. Our own host's signed card verifies through its JWK Set URL.
 */
const signer = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const never = new AbortController().signal;

let server: http.Server;
let base = '';
/** The card the test server serves, as JSON. */
let served: Record<string, unknown> = {};

const cardJson = (name = 'signed peer') =>
  ({
    name,
    description: 'card under test',
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false },
    supportedInterfaces: [{ url: `${base}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['application/json'],
    skills: [{ id: 's', name: 's', description: 's', tags: ['t'] }],
  }) as Record<string, unknown>;

async function sdkSigned(
  key: jose.CryptoKey | jose.KeyObject,
  json = cardJson(),
): Promise<Record<string, unknown>> {
  const sign = generateAgentCardSignature(key, { alg: 'ES256', typ: 'JOSE', kid: 'peer-key' });
  return AgentCard.toJSON(await sign(AgentCard.fromJSON(json))) as Record<string, unknown>;
}

let publicJwk: jose.JWK;
let host: RunningHost;

beforeAll(async () => {
  server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(served));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  publicJwk = { ...(await jose.exportJWK(signer.publicKey)), kid: 'peer-key' };
  host = await startTestHost(new MemoryStore(), {
    cardSigningKey: signer.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  });
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await host?.close();
});

function recordingLogger(): Logger & { warnings: Array<{ obj: unknown; msg?: string }> } {
  const warnings: Array<{ obj: unknown; msg?: string }> = [];
  const nothing = () => undefined;
  const logger = {
    warnings,
    debug: nothing,
    info: nothing,
    error: nothing,
    warn: (obj: unknown, msg?: string) => void warnings.push({ obj, ...(msg ? { msg } : {}) }),
    child: () => logger,
  };
  return logger as unknown as Logger & { warnings: Array<{ obj: unknown; msg?: string }> };
}

const connect = (cardSignatures: Record<string, unknown>, logger?: Logger) =>
  A2AConnector.connect({
    target: 'signed',
    baseUrl: base,
    cardSignatures,
    ...(logger ? { logger } : {}),
  });

describe('connector card signature checks', () => {
  it('a card signed by the SDK with a trusted JWK binds', async () => {
    served = await sdkSigned(signer.privateKey);
    const c = await connect({ keys: [publicJwk] });
    expect(c.card?.name).toBe('signed peer');
  });

  it('a trusted PEM public key works as well', async () => {
    served = await sdkSigned(signer.privateKey);
    const pem = signer.publicKey.export({ type: 'spki', format: 'pem' }) as string;
    const c = await connect({ keys: [pem] });
    expect(c.revision).toBe(`JSONRPC ${base}/a2a`);
  });

  it('a changed card is refused with unauthenticated and a warning', async () => {
    const signed = await sdkSigned(signer.privateKey);
    served = {
      ...signed,
      supportedInterfaces: [
        { url: 'http://attacker.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      ],
    };
    const logger = recordingLogger();
    const err = await connect({ keys: [publicJwk] }, logger).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'unauthenticated' });
    expect((err as Error).message).toMatch(
      /target signed: agent card refused: signature 0: .*signature verification failed/,
    );
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]!.msg).toBe('agent card refused: signature check failed');
  });

  it('a card signed with another key is refused', async () => {
    served = await sdkSigned(stranger.privateKey);
    await expect(connect({ keys: [publicJwk] })).rejects.toMatchObject({ code: 'unauthenticated' });
  });

  it('a kid no trusted key has is refused, naming the kid', async () => {
    const sign = generateAgentCardSignature(signer.privateKey, {
      alg: 'ES256',
      typ: 'JOSE',
      kid: 'unknown-kid',
    });
    served = AgentCard.toJSON(await sign(AgentCard.fromJSON(cardJson()))) as Record<string, unknown>;
    await expect(connect({ keys: [publicJwk] })).rejects.toThrow(/key "unknown-kid" is not trusted/);
  });

  it('an unsigned card is accepted, unless the target requires signatures', async () => {
    served = cardJson('unsigned');
    expect((await connect({ keys: [publicJwk] })).card?.name).toBe('unsigned');
    await expect(connect({ keys: [publicJwk], required: true })).rejects.toThrow(
      /not signed and this target requires signatures/,
    );
  });

  it("our host's signed card verifies through its JWK Set URL", async () => {
    const c = await A2AConnector.connect({
      target: 'host',
      baseUrl: host.url,
      cardSignatures: { jwksUrl: `${host.url}/.well-known/agent-card-jwks.json`, required: true },
    });
    const s = await c.start(
      { envelopeId: 'e', messageId: `sig-${process.pid}`, contextId: null, input: 'hi' },
      never,
    );
    expect(s.remoteId).toBeTruthy();
  });

  it('a plane job against a refused card stays unstarted with the reason, never failed', async () => {
    const signed = await sdkSigned(signer.privateKey);
    served = { ...signed, name: 'changed after signing' };
    const store = new MemoryStore();
    const logger = recordingLogger();
    const connector = new A2AConnector({
      target: 'signed',
      baseUrl: base,
      cardSignatures: { keys: [publicJwk] },
      logger,
    });
    const plane = new Plane({
      clock: new SystemClock(),
      random: new SeededRandom(3),
      store,
      connectors: (t) => (t === 'signed' ? connector : undefined),
      options: { startRetry: { initialIntervalMs: 50, maximumIntervalMs: 100 } },
    });
    await plane.start();
    try {
      const { envelope } = await plane.create({ tenant: 't', target: 'signed', input: 'go' });
      let env = await store.getEnvelope(envelope.id);
      for (let i = 0; i < 200 && !env?.lastError; i++) {
        await new Promise((r) => setTimeout(r, 10));
        env = await store.getEnvelope(envelope.id);
      }
      expect(env?.lastError?.message).toMatch(
        /agent card refused: signature 0: signature verification failed/,
      );
      expect(env?.state).toBe('accepted');
      expect(env?.remoteId).toBeNull();
      expect(logger.warnings.length).toBeGreaterThan(0);
    } finally {
      await plane.stop({ abandon: true });
    }
  });

  it('bad trust settings are config errors naming the field', () => {
    const privateJwk = { kty: 'EC', crv: 'P-256', x: 'x', y: 'y', d: 'd' };
    expect(
      () =>
        new A2AConnector({ target: 't', baseUrl: base, cardSignatures: { keys: [privateJwk as jose.JWK] } }),
    ).toThrow(/^targets\.t\.cardSignatures\.keys\[0\]: /);
    expect(
      () => new A2AConnector({ target: 't', baseUrl: base, cardSignatures: { required: true } }),
    ).toThrow(/^targets\.t\.cardSignatures: needs keys or jwksUrl/);
  });
});
