import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../core/clock.ts';
import { newToken } from '../core/ids.ts';
import type { Random } from '../core/random.ts';
import type { ApiKeyRecord, EnvelopeStore } from '../store/store.ts';

/**
 * Short-lived stream tickets: what a browser puts in an EventSource URL (which cannot carry a header)
 * instead of its API key, so the key itself never lands in a URL, a proxy log or the history. A ticket
 * is `<payload>.<mac>`, the payload naming the key's hash and an expiry, the MAC keyed by a secret kept
 * in the store's settings: every process sharing the store accepts every other's tickets, and nothing
 * is stored per ticket. The key is checked again on use, so a ticket dies with its key.
 */
export const TICKET_SECRET_SETTING = 'server.streamTicketSecret';

/** @default 60000: long enough for EventSource's own reconnects, short enough not to matter when leaked. */
export const DEFAULT_TICKET_TTL_MS = 60_000;

export class StreamTickets {
  private constructor(
    private readonly secret: string,
    private readonly clock: Clock,
    readonly ttlMs: number,
  ) {}

  static async open(o: {
    store: EnvelopeStore;
    clock: Clock;
    random: Random;
    ttlMs?: number;
  }): Promise<StreamTickets> {
    const secret = await o.store.putSettingIfAbsent(TICKET_SECRET_SETTING, newToken(o.random, 256));
    return new StreamTickets(secret, o.clock, o.ttlMs ?? DEFAULT_TICKET_TTL_MS);
  }

  issue(key: ApiKeyRecord): { ticket: string; expiresAt: number } {
    const expiresAt = this.clock.now() + this.ttlMs;
    const payload = Buffer.from(JSON.stringify({ h: key.hash, e: expiresAt })).toString('base64url');
    return { ticket: `${payload}.${this.mac(payload)}`, expiresAt };
  }

  /** The key hash a valid, unexpired ticket names; undefined otherwise. */
  verify(ticket: string): string | undefined {
    const dot = ticket.indexOf('.');
    if (dot <= 0 || ticket.length > 1024) return undefined;
    const payload = ticket.slice(0, dot);
    const given = Buffer.from(ticket.slice(dot + 1));
    const expected = Buffer.from(this.mac(payload));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    try {
      const { h, e } = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
        h: unknown;
        e: unknown;
      };
      if (typeof h !== 'string' || typeof e !== 'number' || e <= this.clock.now()) return undefined;
      return h;
    } catch {
      return undefined;
    }
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.secret).update(payload).digest('base64url');
  }
}
