import type { AgentCard, AgentInterface } from '../types.ts';
import { A2A_V03_CARD_VERSION } from './wire.ts';
import { type Obj, isObj } from '../../../core/json-object.ts';

/**
 * The A2A 0.3 agent card beside the 1.0 one. A 0.3 card names its main endpoint in `url` with
 * `preferredTransport`, more in `additionalInterfaces[{url, transport}]`, its version in a card-level
 * `protocolVersion`, the extended card in `supportsAuthenticatedExtendedCard`, its security
 * requirements in `security` (`[{name: scopes}]`).
 */

/** True when an interface's `protocolVersion` is 0.x (0.3 and the 0.2 agents that speak the same wire). */
export function isV03Version(version: unknown): boolean {
  return typeof version === 'string' && /^0\.\d+(\.\d+)?$/.test(version.trim());
}

/**
 * A card with no 1.0 `supportedInterfaces` that names its endpoint the 0.3 way (the same test
 * `@a2a-js/sdk` makes: a card that lists `supportedInterfaces` is read as 1.0 even when it also
 * carries 0.3 fields).
 */
export function isV03Card(raw: unknown): boolean {
  if (!isObj(raw)) return false;
  if (Array.isArray(raw.supportedInterfaces) && raw.supportedInterfaces.length > 0) return false;
  return typeof raw.url === 'string' || 'preferredTransport' in raw || 'additionalInterfaces' in raw;
}

/** The interfaces a 0.3 card lists, as 1.0 AgentInterfaces stamped with the card's 0.x version. */
export function interfacesOfV03Card(raw: Obj): AgentInterface[] {
  const version = isV03Version(raw.protocolVersion) ? String(raw.protocolVersion).trim() : '0.3';
  const out: AgentInterface[] = [];
  const add = (url: unknown, binding: unknown) => {
    if (typeof url !== 'string' || !url) return;
    const protocolBinding = typeof binding === 'string' && binding ? binding : 'JSONRPC';
    if (!out.some((i) => i.url === url && i.protocolBinding === protocolBinding))
      out.push({ url, protocolBinding, protocolVersion: version });
  };
  add(raw.url, raw.preferredTransport);
  if (Array.isArray(raw.additionalInterfaces))
    for (const i of raw.additionalInterfaces) if (isObj(i)) add(i.url, i.transport);
  return out;
}

/**
 * The card a client that names no version reads: the 1.0 card with the 0.3 fields added (a "hybrid",
 * as `@a2a-js/sdk` serves to such clients), so a 0.3 client finds `url`, `preferredTransport` and
 * `protocolVersion`, and a 1.0 client that forgot the header still finds every 1.0 field unchanged.
 * Only interfaces that speak 0.3 are named as 0.3 endpoints; null when the card has none. Security
 * schemes keep their 1.0 shape (a 0.3 scheme has a `type` member a strict 1.0 reader refuses); the
 * requirements are added in the 0.3 `security` shape.
 */
export function v03CardOf(card: AgentCard): Obj | null {
  const v03 = card.supportedInterfaces.filter((i) => isV03Version(i.protocolVersion));
  const main = v03[0];
  if (!main) return null;
  const out: Obj = {
    ...card,
    protocolVersion: A2A_V03_CARD_VERSION,
    url: main.url,
    preferredTransport: main.protocolBinding,
    additionalInterfaces: v03.map((i) => ({ url: i.url, transport: i.protocolBinding })),
    supportsAuthenticatedExtendedCard: card.capabilities.extendedAgentCard === true,
  };
  delete out.signatures;
  if (card.securityRequirements) {
    out.security = card.securityRequirements.map((r) =>
      Object.fromEntries(Object.entries(r.schemes).map(([name, scopes]) => [name, scopes.list])),
    );
  }
  return out;
}
