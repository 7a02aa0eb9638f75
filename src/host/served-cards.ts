import type { JWK } from 'jose';
import { signAgentCard, type CardSigningKey } from '../protocols/a2a/card-signature.ts';
import type { AgentCard } from '../protocols/a2a/types.ts';
import { v03CardOf } from '../protocols/a2a/v03/card.ts';

/** Where the host publishes the public key of its card signatures (the `jku` of each signature). */
export const CARD_JWKS_PATH = '/.well-known/agent-card-jwks.json';

/**
 * The cards the host serves, built once per card change: the 1.0 card, and the card a client that
 * names no version (or 0.3) reads, each signed when a signing key is configured (A2A 1.0, agent card
 * signing). The 0.3 variant carries the 1.0 card's signature: it covers the 1.0 fields, which that
 * card keeps unchanged, and verifiers canonicalize to those fields.
 */
export class ServedCards {
  private v10Card: AgentCard | null = null;
  private v03Card: Record<string, unknown> | null = null;

  constructor(private readonly signer: (CardSigningKey & { publicJwk: JWK }) | null) {}

  async set(card: AgentCard): Promise<void> {
    const signed = this.signer ? await signAgentCard(card, this.signer) : card;
    const v03 = v03CardOf(card);
    this.v10Card = signed;
    this.v03Card = v03 && signed.signatures ? { ...v03, signatures: signed.signatures } : v03;
  }

  get v10(): AgentCard {
    if (!this.v10Card) throw new Error('card not built yet');
    return this.v10Card;
  }

  /** The card for 0.3 clients, or null when no interface speaks 0.3. */
  get v03(): Record<string, unknown> | null {
    return this.v03Card;
  }

  /** The public key set verifiers may fetch, or null when the card is not signed. */
  get jwks(): { keys: JWK[] } | null {
    return this.signer ? { keys: [this.signer.publicJwk] } : null;
  }
}
