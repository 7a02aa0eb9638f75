import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import * as jose from 'jose';
import { TaskplaneError } from '../core/errors.ts';
import type { CardSigningKey } from '../protocols/a2a/card-signature.ts';

/**
 * The host's agent card signing key (A2A 1.0, agent card signing). Given as a PEM private key or a
 * private JWK (JSON); only asymmetric keys, since verifiers hold the public half. The JWS algorithm
 * follows the key: EC P-256/P-384/P-521 → ES256/ES384/ES512, Ed25519 → EdDSA, RSA → RS256 (or the
 * JWK's own `alg`). The key id is the JWK's `kid`, else its RFC 7638 thumbprint, so a verifier that
 * pins the public key finds it by the `kid` in each signature.
 */
export interface ParsedCardKey {
  key: KeyObject;
  alg: string;
  kid: string | undefined;
}

const EC_ALG: Record<string, string> = { prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' };

function bad(field: string, message: string): TaskplaneError {
  return new TaskplaneError('config', `${field}: ${message}`, { field });
}

/** Parses the key text; throws a `config` error naming `field` for anything unusable. */
export function parseCardSigningKey(text: string, field = 'cardSigningKey'): ParsedCardKey {
  const trimmed = text.trim();
  let key: KeyObject;
  let jwk: Record<string, unknown> | null = null;
  try {
    if (trimmed.startsWith('{')) {
      jwk = JSON.parse(trimmed) as Record<string, unknown>;
      key = createPrivateKey({ key: jwk as never, format: 'jwk' });
    } else key = createPrivateKey(trimmed);
  } catch {
    throw bad(field, 'must be a PEM private key or a private JWK (EC, Ed25519 or RSA)');
  }
  let alg: string | undefined;
  if (jwk && typeof jwk.alg === 'string') alg = jwk.alg;
  else if (key.asymmetricKeyType === 'ec') alg = EC_ALG[key.asymmetricKeyDetails?.namedCurve ?? ''];
  else if (key.asymmetricKeyType === 'ed25519') alg = 'EdDSA';
  else if (key.asymmetricKeyType === 'rsa') alg = 'RS256';
  if (!alg)
    throw bad(
      field,
      `key type ${key.asymmetricKeyType ?? 'unknown'} cannot sign a JWS; use EC, Ed25519 or RSA`,
    );
  return { key, alg, kid: jwk && typeof jwk.kid === 'string' && jwk.kid ? jwk.kid : undefined };
}

/** The signer a host uses, with the public JWK it publishes for verifiers. */
export async function cardSigner(
  parsed: ParsedCardKey,
  jku?: string,
): Promise<CardSigningKey & { publicJwk: jose.JWK }> {
  // A JWK whose `alg` does not fit its key fails here, at start, naming the option, not at first serve.
  try {
    await new jose.FlattenedSign(new Uint8Array([0]))
      .setProtectedHeader({ alg: parsed.alg })
      .sign(parsed.key);
  } catch (err) {
    throw bad('cardSigningKey', `cannot sign with alg ${parsed.alg}: ${(err as Error).message}`);
  }
  const publicJwk = await jose.exportJWK(createPublicKey(parsed.key));
  const kid = parsed.kid ?? (await jose.calculateJwkThumbprint(publicJwk));
  return {
    key: parsed.key,
    alg: parsed.alg,
    kid,
    ...(jku ? { jku } : {}),
    publicJwk: { ...publicJwk, kid, alg: parsed.alg, use: 'sig' },
  };
}
