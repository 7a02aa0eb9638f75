import * as jose from 'jose';
import { canonicalJson } from '../../core/canonical-json.ts';
import type { AgentCard, AgentCardSignature } from './types.ts';
import { isV03Card } from './v03/card.ts';
import { type Obj, isObj } from '../../core/json-object.ts';

/**
 * Agent card signatures (A2A 1.0, agent card signing): each entry of `signatures` is a JWS (RFC 7515)
 * in flattened form with a detached payload: `protected` (base64url header with `alg`, `typ: "JOSE"`,
 * `kid`, optional `jku`) and `signature`. The payload is the card's canonical JSON (RFC 8785 JCS)
 * with `signatures` removed and proto3 default values dropped: fields outside the 1.0 card schema,
 * empty strings, empty lists and objects, and `false` in non-`optional` booleans. That is exactly
 * what `@a2a-js/sdk` signs and checks, so a card either of us signs verifies on the other side.
 * A card without `supportedInterfaces` is an A2A 0.3 card, whose canonical form is the JCS of the
 * card as served (minus `signatures`, empty values dropped).
 *
 * JWS is done by `jose` (README, dependencies): algorithm checks, key import and base64url are a
 * solved problem, and the SDK uses the same library.
 */

/** A field of the card schema: a scalar, a free JSON value, or a message (single, list, or map). */
type Field =
  'str' | 'bool' | 'optbool' | 'strs' | 'json' | { msg: Schema } | { list: Schema } | { map: Schema | 'str' };
interface Schema {
  [field: string]: Field;
}

const STRING_LIST: Schema = { list: 'strs' };
const SECURITY_REQUIREMENT: Schema = { schemes: { map: STRING_LIST } };
const flow = (fields: string[], extra: Schema = {}): Schema => ({
  ...Object.fromEntries(fields.map((f) => [f, 'str' as const])),
  scopes: { map: 'str' },
  ...extra,
});
const OAUTH_FLOWS: Schema = {
  authorizationCode: {
    msg: flow(['authorizationUrl', 'tokenUrl', 'refreshUrl'], { pkceRequired: 'bool' }),
  },
  clientCredentials: { msg: flow(['tokenUrl', 'refreshUrl']) },
  deviceCode: { msg: flow(['deviceAuthorizationUrl', 'tokenUrl', 'refreshUrl']) },
  implicit: { msg: flow(['authorizationUrl', 'refreshUrl']) },
  password: { msg: flow(['tokenUrl', 'refreshUrl']) },
};
const SECURITY_SCHEME: Schema = {
  apiKeySecurityScheme: { msg: { description: 'str', location: 'str', name: 'str' } },
  httpAuthSecurityScheme: { msg: { description: 'str', scheme: 'str', bearerFormat: 'str' } },
  oauth2SecurityScheme: {
    msg: { description: 'str', flows: { msg: OAUTH_FLOWS }, oauth2MetadataUrl: 'str' },
  },
  openIdConnectSecurityScheme: { msg: { description: 'str', openIdConnectUrl: 'str' } },
  mtlsSecurityScheme: { msg: { description: 'str' } },
};
/** `lf.a2a.v1.AgentCard` as its JSON: the fields a signature covers. */
const AGENT_CARD: Schema = {
  name: 'str',
  description: 'str',
  supportedInterfaces: {
    list: { url: 'str', protocolBinding: 'str', tenant: 'str', protocolVersion: 'str' },
  },
  provider: { msg: { url: 'str', organization: 'str' } },
  version: 'str',
  documentationUrl: 'str',
  capabilities: {
    msg: {
      streaming: 'optbool',
      pushNotifications: 'optbool',
      extensions: { list: { uri: 'str', description: 'str', required: 'bool', params: 'json' } },
      extendedAgentCard: 'optbool',
    },
  },
  securitySchemes: { map: SECURITY_SCHEME },
  securityRequirements: { list: SECURITY_REQUIREMENT },
  defaultInputModes: 'strs',
  defaultOutputModes: 'strs',
  skills: {
    list: {
      id: 'str',
      name: 'str',
      description: 'str',
      tags: 'strs',
      examples: 'strs',
      inputModes: 'strs',
      outputModes: 'strs',
      securityRequirements: { list: SECURITY_REQUIREMENT },
    },
  },
  iconUrl: 'str',
};

/** Keeps the schema's fields; drops `false` where proto3 would not write it. */
function project(value: unknown, schema: Schema): Obj {
  const out: Obj = {};
  if (!isObj(value)) return out;
  for (const [name, field] of Object.entries(schema)) {
    const v = value[name];
    if (v === undefined) continue;
    if (field === 'bool') {
      if (v !== false) out[name] = v;
    } else if (typeof field === 'string') out[name] = v;
    else if ('msg' in field) out[name] = project(v, field.msg);
    else if ('list' in field) out[name] = Array.isArray(v) ? v.map((item) => project(item, field.list)) : v;
    else {
      const entry = field.map;
      out[name] = isObj(v)
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, entry === 'str' ? x : project(x, entry)]))
        : v;
    }
  }
  return out;
}

/** Drops empty strings, nulls, empty lists and empty objects, recursively (as `@a2a-js/sdk` does). */
function cleanEmpty(v: unknown): unknown {
  if (v === '' || v === null || v === undefined) return undefined;
  if (Array.isArray(v)) {
    const items = v.map(cleanEmpty).filter((x) => x !== undefined);
    return items.length > 0 ? items : undefined;
  }
  if (isObj(v)) {
    const entries = Object.entries(v)
      .map(([k, x]) => [k, cleanEmpty(x)] as const)
      .filter(([, x]) => x !== undefined);
    return entries.length > 0 ? Object.fromEntries(entries) : undefined;
  }
  return v;
}

/** The bytes a card signature covers (see above). */
export function canonicalCardPayload(card: unknown): string {
  let body: unknown;
  if (isV03Card(card)) {
    const { signatures: _s, ...rest } = card as Obj;
    body = rest;
  } else body = project(card, AGENT_CARD);
  return canonicalJson(cleanEmpty(body) ?? {});
}

/** The key a host signs its card with, and the protected header that names it. */
export interface CardSigningKey {
  key: CardKey;
  alg: string;
  kid: string;
  /** Where verifiers can fetch the public key set (JWS `jku`). */
  jku?: string;
}

/** Returns the card with one more signature entry made with `signer`. */
export async function signAgentCard<T extends AgentCard>(card: T, signer: CardSigningKey): Promise<T> {
  const jws = await new jose.FlattenedSign(new TextEncoder().encode(canonicalCardPayload(card)))
    .setProtectedHeader({
      alg: signer.alg,
      typ: 'JOSE',
      kid: signer.kid,
      ...(signer.jku ? { jku: signer.jku } : {}),
    })
    .sign(signer.key);
  const entry: AgentCardSignature = { protected: jws.protected!, signature: jws.signature };
  return { ...card, signatures: [...(card.signatures ?? []), entry] };
}

/** A public key a verifier trusts. */
export type CardKey = jose.CryptoKey | jose.KeyObject | Uint8Array;

/**
 * The trusted keys that may have made a signature with this protected header (by its `kid`, and
 * `jku`); empty when none is trusted.
 */
export type CardKeyResolver = (header: jose.ProtectedHeaderParameters) => Promise<CardKey[]>;

/** How a card's signatures were judged. */
export type CardVerdict =
  { status: 'unsigned' } | { status: 'verified'; kid: string } | { status: 'invalid'; reason: string };

/**
 * Checks the card's signatures: `verified` when one verifies with a trusted key, `invalid` (with the
 * reason of each entry) when it has signatures and none does, `unsigned` when it has none.
 */
export async function verifyAgentCard(card: unknown, resolve: CardKeyResolver): Promise<CardVerdict> {
  const signatures = isObj(card) ? card.signatures : undefined;
  if (signatures === undefined || (Array.isArray(signatures) && signatures.length === 0))
    return { status: 'unsigned' };
  if (!Array.isArray(signatures)) return { status: 'invalid', reason: 'signatures is not a list' };
  const payload = jose.base64url.encode(new TextEncoder().encode(canonicalCardPayload(card)));
  const reasons: string[] = [];
  for (const [i, entry] of signatures.entries()) {
    try {
      if (!isObj(entry) || typeof entry.protected !== 'string' || typeof entry.signature !== 'string')
        throw new Error('not a JWS (protected and signature are required)');
      const header = jose.decodeProtectedHeader({ protected: entry.protected });
      if (!header.alg || !header.kid) throw new Error('protected header lacks alg or kid');
      const keys = await resolve(header);
      if (keys.length === 0) throw new Error(`key ${JSON.stringify(header.kid)} is not trusted`);
      const jws = {
        payload,
        protected: entry.protected,
        signature: entry.signature,
        ...(isObj(entry.header) ? { header: entry.header as jose.JWSHeaderParameters } : {}),
      };
      let failure: unknown;
      for (const key of keys) {
        try {
          await jose.flattenedVerify(jws, key);
          return { status: 'verified', kid: header.kid };
        } catch (err) {
          failure = err;
        }
      }
      throw failure;
    } catch (err) {
      reasons.push(`signature ${i}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return { status: 'invalid', reason: reasons.join('; ') };
}
