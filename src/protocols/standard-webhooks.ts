import { Webhook } from 'standardwebhooks';
import { TaskplaneError } from '../core/errors.ts';

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): `webhook-id`, `webhook-timestamp`
 * (Unix seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`,
 * several separated by spaces while a secret is rotated). The `standardwebhooks` package computes the
 * HMAC; the timestamp is judged here against the caller's clock, because its own `verify` reads the
 * wall clock and a virtual clock must drive every timed decision.
 */

export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';

/** How far a signed timestamp may be from "now", either way (the package's and the spec's 5 min). */
export const SIGNATURE_TOLERANCE_MS = 5 * 60_000;

/**
 * A signing key from a `whsec_<base64>` secret (the Standard Webhooks form; the prefix may be left
 * out). The specification asks for 24 to 64 random bytes; fewer than 16 is refused as guessable.
 * `field` names the option in the error.
 */
export function signingKey(secret: string, field: string): Webhook {
  const b64 = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0)
    throw new TaskplaneError('config', `${field}: must be whsec_ followed by base64`, { field });
  const bytes = (b64.length / 4) * 3 - (b64.length - b64.replace(/=+$/, '').length);
  if (bytes < 16)
    throw new TaskplaneError(
      'config',
      `${field}: must hold at least 16 random bytes (24 to 64 recommended)`,
      {
        field,
      },
    );
  return new Webhook(b64);
}

/** The three headers for one delivery signed at `atMs` (rounded down to whole seconds, as the format has). */
export function signatureHeaders(
  key: Webhook,
  id: string,
  atMs: number,
  body: string,
): Record<string, string> {
  const seconds = Math.floor(atMs / 1000);
  return {
    [WEBHOOK_ID_HEADER]: id,
    [WEBHOOK_TIMESTAMP_HEADER]: String(seconds),
    [WEBHOOK_SIGNATURE_HEADER]: key.sign(id, new Date(seconds * 1000), body),
  };
}

/**
 * Checks a delivery's signature headers (names lower-case) against `body` exactly as received. Returns
 * null when one `v1` signature matches within the tolerance of `nowMs`, else why not (for logs; a
 * sender is only ever told 401).
 */
export function verifySignature(
  key: Webhook,
  headers: Record<string, string | undefined>,
  body: string,
  nowMs: number,
): string | null {
  const id = headers[WEBHOOK_ID_HEADER];
  const timestamp = headers[WEBHOOK_TIMESTAMP_HEADER];
  const signatures = headers[WEBHOOK_SIGNATURE_HEADER];
  if (!id || !timestamp || !signatures) return 'signature headers missing';
  if (!/^\d{1,15}$/.test(timestamp)) return 'webhook-timestamp is not Unix seconds';
  const atMs = Number(timestamp) * 1000;
  if (Math.abs(nowMs - atMs) > SIGNATURE_TOLERANCE_MS) return 'webhook-timestamp outside the tolerance';
  const expected = key.sign(id, new Date(atMs), body);
  for (const candidate of signatures.split(' ')) {
    if (candidate.startsWith('v1,') && sameString(candidate, expected)) return null;
  }
  return 'no matching signature';
}

/** Constant-time for equal lengths (a signature's length is public). */
function sameString(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
