import { createPublicKey } from 'node:crypto';
import * as jose from 'jose';
import { TaskplaneError } from '../../core/errors.ts';
import { verifyAgentCard, type CardKey, type CardVerdict } from '../../protocols/a2a/card-signature.ts';

/**
 * Which agent card signatures a target trusts (A2A 1.0, agent card signing). A signed card is
 * verified against these keys: a signature that does not verify refuses the card. An unsigned card
 * is accepted unless `required`. The card's own `jku` is never followed on its own word: whoever can
 * change the card can change that URL too, so only a key set URL configured here is fetched.
 */
export interface CardSignatureOptions {
  /**
   * Public keys trusted to sign the card: JWKs (matched by `kid` when they have one) or PEM public
   * keys (tried for any `kid`). @default none
   */
  keys?: Array<jose.JWK | string>;
  /** A JWK Set URL trusted for the card's keys (fetched and cached by `jose`, keys matched by `kid`). @default none */
  jwksUrl?: string;
  /** Refuse a card that carries no signature. @default false */
  required?: boolean;
}

interface TrustedKey {
  kid: string | undefined;
  key: CardKey;
}

function bad(field: string, message: string): TaskplaneError {
  return new TaskplaneError('config', `${field}: ${message}`, { field });
}

/** Validates the options (a `config` error names the field) and imports the keys. */
export function cardTrust(o: CardSignatureOptions, field: string): CardTrust {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw bad(field, 'must be an object');
  for (const k of Object.keys(o))
    if (!['keys', 'jwksUrl', 'required'].includes(k))
      throw bad(`${field}.${k}`, 'unknown setting (known: keys, jwksUrl, required)');
  if (o.keys !== undefined && !Array.isArray(o.keys))
    throw bad(`${field}.keys`, 'must be a list of JWKs or PEM public keys');
  const keys: TrustedKey[] = (o.keys ?? []).map((k, i) => {
    try {
      if (typeof k === 'string') return { kid: undefined, key: createPublicKey(k) };
      if (k && typeof k === 'object' && !('d' in k)) {
        const key = createPublicKey({ key: k as never, format: 'jwk' });
        return { kid: typeof k.kid === 'string' && k.kid ? k.kid : undefined, key };
      }
    } catch {
      // reported below with the field
    }
    throw bad(`${field}.keys[${i}]`, 'must be a public JWK or a PEM public key (never a private key)');
  });
  let jwks: ReturnType<typeof jose.createRemoteJWKSet> | null = null;
  if (o.jwksUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(o.jwksUrl);
    } catch {
      throw bad(`${field}.jwksUrl`, 'must be an absolute http(s) URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw bad(`${field}.jwksUrl`, 'must be an http(s) URL');
    jwks = jose.createRemoteJWKSet(url, { timeoutDuration: 10_000, cooldownDuration: 30_000 });
  }
  if (o.required !== undefined && typeof o.required !== 'boolean')
    throw bad(`${field}.required`, 'must be true or false');
  if (keys.length === 0 && !jwks)
    throw bad(field, 'needs keys or jwksUrl: a signature can only be checked against a trusted key');
  return new CardTrust(keys, jwks, o.required === true);
}

export class CardTrust {
  constructor(
    private readonly keys: TrustedKey[],
    private readonly jwks: ReturnType<typeof jose.createRemoteJWKSet> | null,
    readonly required: boolean,
  ) {}

  /** The card's verdict: `verified`, `unsigned`, or `invalid` with the reason. */
  async check(card: unknown): Promise<CardVerdict> {
    return verifyAgentCard(card, async (header) => {
      const out = this.keys.filter((k) => k.kid === undefined || k.kid === header.kid).map((k) => k.key);
      if (this.jwks) {
        try {
          out.push(await this.jwks(header));
        } catch (err) {
          // No key for this kid in the set, or the set could not be read: other keys may still match.
          if (out.length === 0)
            throw new Error(`key set: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
      return out;
    });
  }
}
