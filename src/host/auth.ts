import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { TaskplaneError } from '../core/errors.ts';
import { A2AError } from '../protocols/a2a/errors.ts';
import type { Authenticate } from '../protocols/a2a/handler.ts';

/** The owner every request gets under `--auth none`. */
export const ANONYMOUS_OWNER = 'anonymous';

/**
 * Characters an owner name may not contain: the `@` and `/` that scopes and tenant paths were once
 * written with, the list separators, whitespace, and control and format characters (invisible in a
 * log, so two names that print the same could differ). Owner and tenant are kept apart in the store
 * whatever the name; refusing these keeps a name readable and unambiguous wherever it is shown.
 */
const FORBIDDEN_IN_OWNER = /[\s@/\\:,\p{Cc}\p{Cf}]/u;
/** A key is sent as `Authorization: Bearer <key>`: whitespace or a control character could never match. */
const FORBIDDEN_IN_KEY = /[\s\p{Cc}]/u;

/**
 * Parses `owner:key,owner:key` (TASKPLANE_HOST_KEYS) or a file with one `owner:key` per line (`#`
 * comments). Keys are bearer secrets: each is at least 16 characters and appears once (a key listed twice
 * is a mistake that would hand one owner's key to another, or hide a rotation that did not happen).
 * Errors name the entry by its position among the entries (blank lines and comments not counted) and
 * never print a key, nor an owner name, which may be a key pasted in the wrong place.
 */
export function parseKeys(text: string): Map<string, string> {
  const keys = new Map<string, string>();
  const positions = new Map<string, number>();
  let position = 0;
  for (const raw of text.split(/[,\n]/)) {
    const entry = raw.trim();
    if (entry === '' || entry.startsWith('#')) continue;
    position += 1;
    const refuse = (problem: string) =>
      new TaskplaneError('config', `host keys: entry ${position}: ${problem}`, { field: 'keys' });
    const i = entry.indexOf(':');
    if (i <= 0 || i === entry.length - 1) throw refuse('must be owner:key');
    const owner = entry.slice(0, i).trim();
    const key = entry.slice(i + 1).trim();
    if (owner === '') throw refuse('the owner name is empty');
    if (FORBIDDEN_IN_OWNER.test(owner))
      throw refuse(
        'the owner name contains a separator (@ / \\ : ,), whitespace or a control or format character',
      );
    if (key.length < 16) throw refuse('the key is shorter than 16 characters');
    if (FORBIDDEN_IN_KEY.test(key)) throw refuse('the key contains whitespace or a control character');
    const d = digest(key);
    const first = positions.get(d);
    if (first !== undefined) throw refuse(`has the same key as entry ${first}; each key must be listed once`);
    positions.set(d, position);
    keys.set(d, owner);
  }
  if (keys.size === 0)
    throw new TaskplaneError('config', 'host keys: none configured (TASKPLANE_HOST_KEYS or --keys-file)', {
      field: 'keys',
    });
  return keys;
}

/** Keys from `--keys-file` when given, else from the TASKPLANE_HOST_KEYS value. */
export function loadKeys(env: string | undefined, file: string | undefined): Map<string, string> {
  if (file === undefined) return parseKeys(env ?? '');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new TaskplaneError('config', `--keys-file: cannot read ${file}`, { field: 'keysFile', cause: err });
  }
  return parseKeys(text);
}

function digest(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/**
 * Bearer API keys mapped to owners. Keys are held only as SHA-256 digests and compared in constant
 * time; a missing or wrong key gets the same UnauthenticatedError (401).
 */
export function bearerKeyAuth(keys: Map<string, string>): Authenticate {
  const digests = [...keys.entries()].map(([d, owner]) => ({ d: Buffer.from(d, 'hex'), owner }));
  return (headers) => {
    const header = headers.get('authorization') ?? '';
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw new A2AError('UnauthenticatedError');
    const d = Buffer.from(digest(m[1]!), 'hex');
    for (const entry of digests) if (timingSafeEqual(entry.d, d)) return entry.owner;
    throw new A2AError('UnauthenticatedError');
  };
}

export const noAuth: Authenticate = () => ANONYMOUS_OWNER;
