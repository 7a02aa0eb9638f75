import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as jose from 'jose';
import { AgentCard, verifyAgentCardSignature } from '@a2a-js/sdk';
import { verifyAgentCard } from '../../src/protocols/a2a/card-signature.ts';
import { hostConfig } from '../../src/host/host-options.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { spawnHost, type TestProcess } from '../support/process.ts';
import { startTestHost, type Wire } from './in-process.ts';

/**
 * The host signs its agent card (A2A 1.0, agent card signing: JWS over the canonical card) with a
 * configured key. The official `@a2a-js/sdk` verifier accepts the signature; a changed card or
 * another key does not verify; the public key is served as a JWK Set.
 */
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const ecPem = ec.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });

let host: RunningHost;

beforeAll(async () => {
  host = await startTestHost(new MemoryStore(), { cardSigningKey: ecPem });
});

afterAll(async () => {
  await host?.close();
});

const card = async (headers: Record<string, string> = { 'A2A-Version': '1.0' }) =>
  (await (await fetch(host.cardUrl, { headers })).json()) as Wire;

const sdkVerify = (key: jose.CryptoKey | jose.KeyObject | jose.JWK, c: Wire) =>
  verifyAgentCardSignature(() => Promise.resolve(key))(AgentCard.fromJSON(c));

describe('host card signing', () => {
  it('signs the card: ES256, typ JOSE, kid and jku in the protected header', async () => {
    const c = await card();
    expect(c.signatures).toHaveLength(1);
    const header = jose.decodeProtectedHeader(c.signatures[0]);
    expect(header).toMatchObject({ alg: 'ES256', typ: 'JOSE' });
    expect(header.kid).toBe(await jose.calculateJwkThumbprint(await jose.exportJWK(ec.publicKey)));
    expect(header.jku).toBe(`${host.url}/.well-known/agent-card-jwks.json`);
  });

  it('the official SDK verifier accepts it, and so do we', async () => {
    const c = await card();
    await expect(sdkVerify(ec.publicKey, c)).resolves.toBeUndefined();
    expect(await verifyAgentCard(c, () => Promise.resolve([ec.publicKey]))).toMatchObject({
      status: 'verified',
    });
  });

  it('the card served to 0.3 clients carries a signature that verifies too', async () => {
    const c = await card({});
    expect(c.protocolVersion).toBe('0.3.0');
    await expect(sdkVerify(ec.publicKey, c)).resolves.toBeUndefined();
  });

  it('a changed card does not verify', async () => {
    const c = await card();
    c.supportedInterfaces[0].url = 'https://attacker.example/a2a/jsonrpc';
    await expect(sdkVerify(ec.publicKey, c)).rejects.toThrow();
    const verdict = await verifyAgentCard(c, () => Promise.resolve([ec.publicKey]));
    expect(verdict.status).toBe('invalid');
  });

  it('another key does not verify', async () => {
    const c = await card();
    await expect(sdkVerify(other.publicKey, c)).rejects.toThrow();
    expect((await verifyAgentCard(c, () => Promise.resolve([other.publicKey]))).status).toBe('invalid');
  });

  it('serves the public key as a JWK Set, without the private part', async () => {
    const res = await fetch(`${host.url}/.well-known/agent-card-jwks.json`);
    expect(res.headers.get('content-type')).toBe('application/jwk-set+json');
    const jwks = (await res.json()) as { keys: jose.JWK[] };
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]!.d).toBeUndefined();
    const key = (await jose.importJWK(jwks.keys[0]!, 'ES256')) as jose.CryptoKey;
    await expect(sdkVerify(key, await card())).resolves.toBeUndefined();
  });

  it('a host without a key serves an unsigned card and no key set', async () => {
    const plain = await startTestHost(new MemoryStore());
    try {
      const c = (await (await fetch(plain.cardUrl, { headers: { 'A2A-Version': '1.0' } })).json()) as Wire;
      expect(c.signatures).toBeUndefined();
      expect((await fetch(`${plain.url}/.well-known/agent-card-jwks.json`)).status).toBe(404);
    } finally {
      await plain.close();
    }
  });

  it('a JWK whose alg does not fit its key stops the start, naming the option', async () => {
    const jwk = { ...(await jose.exportJWK(ec.privateKey)), alg: 'RS256' };
    await expect(startTestHost(new MemoryStore(), { cardSigningKey: JSON.stringify(jwk) })).rejects.toThrow(
      /^cardSigningKey: cannot sign with alg RS256/,
    );
  });

  it('a key that cannot sign is a config error naming the option', () => {
    expect(() => hostConfig({ cardSigningKey: 'not a key' })).toThrow(/^cardSigningKey: /);
    const pub = ec.publicKey.export({ type: 'spki', format: 'pem' }) as string;
    expect(() => hostConfig({ cardSigningKey: pub })).toThrow(/^cardSigningKey: /);
  });
});

describe('taskplane host --card-signing-key', () => {
  let proc: TestProcess;
  let dir: string;
  let url: string;
  const ed = generateKeyPairSync('ed25519');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'card-key-'));
    const jwk = { ...(await jose.exportJWK(ed.privateKey)), kid: 'host-key-1' };
    writeFileSync(join(dir, 'card-key.jwk'), JSON.stringify(jwk));
    ({ proc, url } = await spawnHost([
      '--port',
      '0',
      '--db',
      'memory:',
      '--card-signing-key',
      join(dir, 'card-key.jwk'),
    ]));
  });

  afterAll(async () => {
    await proc?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('signs with an Ed25519 JWK file: EdDSA, its kid, verified by the SDK', async () => {
    const c = (await (
      await fetch(`${url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
    ).json()) as Wire;
    expect(jose.decodeProtectedHeader(c.signatures[0])).toMatchObject({ alg: 'EdDSA', kid: 'host-key-1' });
    await expect(sdkVerify(ed.publicKey, c)).resolves.toBeUndefined();
  });
});
