import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { TaskplaneError } from '../core/errors.ts';
import { A2AError } from '../protocols/a2a/errors.ts';
import type { Authenticate } from '../protocols/a2a/handler.ts';

/** The owner every request gets under `--auth none`. */
export const ANONYMOUS_OWNER = 'anonymous';

/**
 * Parses `owner:key,owner:key` (TASKPLANE_HOST_KEYS) or a file with one `owner:key` per line (`#`
 * comments). Keys shorter than 16 characters are refused: they are bearer secrets.
 */
export function parseKeys(text: string): Map<string, string> {
  const keys = new Map<string, string>();
  for (const raw of text.split(/[,\n]/)) {
    const entry = raw.trim();
    if (entry === '' || entry.startsWith('#')) continue;
    const i = entry.indexOf(':');
    if (i <= 0 || i === entry.length - 1)
      throw new TaskplaneError('config', 'host keys: each entry must be owner:key', { field: 'keys' });
    const owner = entry.slice(0, i).trim();
    const key = entry.slice(i + 1).trim();
    if (key.length < 16)
      throw new TaskplaneError('config', `host keys: the key for ${owner} is shorter than 16 characters`, {
        field: 'keys',
      });
    keys.set(digest(key), owner);
  }
  if (keys.size === 0)
    throw new TaskplaneError('config', 'host keys: none configured (TASKPLANE_HOST_KEYS or --keys-file)', {
      field: 'keys',
    });
  return keys;
}

export function loadKeys(env: string | undefined, file: string | undefined): Map<string, string> {
  if (file) return parseKeys(readFileSync(file, 'utf8'));
  return parseKeys(env ?? '');
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
