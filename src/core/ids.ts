import type { Clock } from './clock.ts';
import type { Random } from './random.ts';

// Crockford base32: sortable as ASCII, no ambiguous letters.
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

const CODES = Array.from(ALPHABET, (c) => c.charCodeAt(0));

/**
 * Writes `chars` base32 characters (as char codes) of `bytes`' bits, first bit first, into `out` from
 * `at`; past the last byte the bits are zeros. Char codes and one String.fromCharCode, not appends: 36
 * appends made a chain of cons strings to flatten later (see newId).
 */
function base32Into(bytes: Uint8Array, out: number[], at: number, chars: number): void {
  let buffer = 0;
  let bits = 0;
  let i = 0;
  for (let k = at; k < at + chars; k++) {
    if (bits < 5) {
      // At most 4 bits are left over, so 12 bits hold all that is still unread.
      buffer = ((buffer << 8) | (bytes[i++] ?? 0)) & 0xfff;
      bits += 8;
    }
    out[k] = CODES[(buffer >>> (bits - 5)) & 31]!;
    bits -= 5;
  }
}

/**
 * Ids are 10 base32 characters of creation time (ms, sortable until the year 10889) followed by 26
 * characters carrying 130 random bits: unguessable (ids can be capabilities: docs/a2a-notes.md, "The task
 * control envelope") and
 * sortable by creation. An optional prefix names the kind (`tsk_`, `evt_`).
 *
 * Built as character codes in one scratch array and turned into a string once (base32Into): measured
 * faster than appending the 36 characters one by one, and a host send makes three ids (docs/performance.md, "Ids").
 */
export function newId(clock: Clock, random: Random, prefix = ''): string {
  let t = Math.max(0, Math.floor(clock.now()));
  for (let i = 9; i >= 0; i--) {
    ID_CODES[i] = CODES[t % 32]!;
    t = Math.floor(t / 32);
  }
  // 26 characters: the first 130 of 17 random bytes' 136 bits.
  base32Into(random.bytes(17), ID_CODES, 10, ID_LENGTH - 10);
  return prefix + String.fromCharCode.apply(null, ID_CODES);
}

const ID_LENGTH = 36;
/** Scratch for newId (synchronous, so never shared by two calls). */
const ID_CODES: number[] = new Array<number>(ID_LENGTH).fill(0);

/** Creation time encoded in an id from `newId` (prefix stripped by the caller's knowledge of its length). */
export function idTime(id: string, prefixLength = 0): number {
  let t = 0;
  for (const ch of id.slice(prefixLength, prefixLength + 10)) t = t * 32 + ALPHABET.indexOf(ch);
  return t;
}

/** A random token (base32, `bits` of entropy rounded up to whole characters). */
export function newToken(random: Random, bits = 160): string {
  const out = new Array<number>(Math.ceil(bits / 5));
  base32Into(random.bytes(Math.ceil(bits / 8)), out, 0, out.length);
  return String.fromCharCode.apply(null, out);
}
