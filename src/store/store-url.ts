import { TaskplaneError } from '../core/errors.ts';

/** What a store URL selects. Parsing is pure (no I/O) so config validation can run before anything opens. */
export type StoreTarget =
  | { kind: 'memory' }
  | {
      kind: 'sqlite';
      path: string;
      synchronous?: 'FULL' | 'NORMAL';
      groupCommit?: boolean;
      walFsync?: boolean;
      busyTimeoutMs?: number;
      writeThread?: 'worker' | 'event-loop';
    }
  | { kind: 'postgres'; url: string };

const EXPECTED = 'expected memory:, sqlite:<path>, sqlite::memory: or postgres://…';

/**
 * `memory:` · `sqlite:./data/taskplane.db` · `sqlite:///abs/path.db` · `sqlite::memory:` ·
 * `postgres://user@host:5432/db?schema=name` (also `postgresql://`; `poolMax`, `sessionHost` and
 * `sessionPort` too: postgres/pg-connect.ts).
 * SQLite takes optional `?synchronous=NORMAL|FULL&groupCommit=false&walFsync=false&busyTimeoutMs=N&writeThread=worker|event-loop`
 * (see SqliteStoreOptions).
 * Error messages name the scheme at most, never the whole URL: it may carry a password.
 */
export function parseStoreUrl(url: string): StoreTarget {
  const trimmed = url.trim();
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(trimmed)?.[1]?.toLowerCase();
  if (!scheme) throw configError(`store URL has no scheme; ${EXPECTED}`);
  if (scheme === 'memory') {
    if (!/^memory:(\/\/)?$/i.test(trimmed)) throw configError('store URL memory: takes no path or options');
    return { kind: 'memory' };
  }
  if (scheme === 'postgres' || scheme === 'postgresql') {
    try {
      new URL(trimmed);
    } catch {
      throw configError('store URL is not a valid postgres:// URL');
    }
    return { kind: 'postgres', url: trimmed };
  }
  if (scheme === 'sqlite') return parseSqlite(trimmed.slice('sqlite:'.length));
  throw configError(`unknown store URL scheme "${scheme}:"; ${EXPECTED}`);
}

function parseSqlite(rest: string): StoreTarget {
  const [rawPath = '', query = ''] = splitOnce(rest, '?');
  const path = rawPath.startsWith('//') ? rawPath.slice(2) : rawPath;
  if (path === '') throw configError('store URL sqlite: needs a file path, e.g. sqlite:./data/taskplane.db');
  const target: Extract<StoreTarget, { kind: 'sqlite' }> = { kind: 'sqlite', path: decodeURIComponent(path) };
  for (const [key, value] of new URLSearchParams(query)) {
    if (key === 'synchronous' && (value.toUpperCase() === 'FULL' || value.toUpperCase() === 'NORMAL')) {
      target.synchronous = value.toUpperCase() as 'FULL' | 'NORMAL';
    } else if (key === 'groupCommit' && (value === 'true' || value === 'false')) {
      target.groupCommit = value === 'true';
    } else if (key === 'walFsync' && (value === 'true' || value === 'false')) {
      target.walFsync = value === 'true';
    } else if (key === 'writeThread' && (value === 'worker' || value === 'event-loop')) {
      target.writeThread = value;
    } else if (key === 'busyTimeoutMs' && /^\d+$/.test(value)) {
      target.busyTimeoutMs = Number(value);
    } else {
      throw configError(`store URL sqlite option "${key}" is unknown or has a bad value`);
    }
  }
  return target;
}

function splitOnce(value: string, separator: string): [string, string] {
  const at = value.indexOf(separator);
  return at < 0 ? [value, ''] : [value.slice(0, at), value.slice(at + 1)];
}

function configError(message: string): TaskplaneError {
  return new TaskplaneError('config', message, { field: 'store' });
}
