import pg from 'pg';
import { TaskplaneError } from '../../core/errors.ts';

/** Where to connect, with the credentials kept out of `label` (the only part that is ever logged). */
export interface PgTarget {
  connectionString: string;
  /** Schema to create and use (URL `?schema=`), or undefined for the server's default search_path. */
  schema: string | undefined;
  /** `host:port/database`: safe to log. */
  label: string;
  /**
   * Where the one session connection (LISTEN, liveness lock) goes when it must bypass a
   * transaction-mode pooler: the URL with `?sessionHost=` / `?sessionPort=` as host and port.
   */
  sessionConnectionString: string;
  /** Pooled connections (URL `?poolMax=`), when the URL says. */
  poolMax: number | undefined;
  /**
   * Server settings for every connection (URL `?options=`, libpq's, e.g. `-c statement_timeout=5000`),
   * given at connection start together with the schema's search_path.
   */
  options: string | undefined;
}

/** Lower-case identifiers only, so the name needs no quoting anywhere; 48 leaves room in channel names. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,47}$/;

export function parsePgUrl(url: string): PgTarget {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TaskplaneError('config', 'store URL is not a valid postgres:// URL', { field: 'store' });
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new TaskplaneError('config', `store URL scheme ${parsed.protocol} is not postgres:`, {
      field: 'store',
    });
  }
  const schema = parsed.searchParams.get('schema') ?? undefined;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new TaskplaneError('config', 'store URL schema must match [a-z_][a-z0-9_]{0,47}', {
      field: 'store',
    });
  }
  parsed.searchParams.delete('schema');
  const poolMax = parsed.searchParams.get('poolMax') ?? undefined;
  if (poolMax !== undefined && !/^[1-9]\d{0,3}$/.test(poolMax))
    throw new TaskplaneError('config', 'store URL poolMax must be a whole number from 1 to 9999', {
      field: 'store',
    });
  const sessionHost = parsed.searchParams.get('sessionHost') ?? undefined;
  const sessionPort = parsed.searchParams.get('sessionPort') ?? undefined;
  if (sessionPort !== undefined && !/^\d{1,5}$/.test(sessionPort))
    throw new TaskplaneError('config', 'store URL sessionPort must be a port number', { field: 'store' });
  // Kept apart and sent beside search_path (clientConfig): left in the URL, the driver would send it
  // instead of the search_path, and every connection would work in the server's default schema.
  const options = parsed.searchParams.get('options') ?? undefined;
  for (const key of ['poolMax', 'sessionHost', 'sessionPort', 'options']) parsed.searchParams.delete(key);
  const session = new URL(parsed.toString());
  if (sessionHost !== undefined) session.hostname = sessionHost;
  if (sessionPort !== undefined) session.port = sessionPort;
  const database = parsed.pathname.replace(/^\//, '') || '(default)';
  return {
    connectionString: parsed.toString(),
    sessionConnectionString: session.toString(),
    poolMax: poolMax === undefined ? undefined : Number(poolMax),
    options,
    schema,
    label: `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}/${decodeURIComponent(database)}`,
  };
}

/**
 * Pool (and listener) config. BIGINT (oid 20) is parsed to a JS number for this pool only: every
 * BIGINT we store is an epoch-ms time or a sequence, far below 2^53. search_path is set at connection
 * start (`options`), so every pooled connection sees the schema without an extra round trip.
 */
export function clientConfig(target: PgTarget, connectTimeoutMs: number): pg.ClientConfig {
  const search = target.schema === undefined ? undefined : `-c search_path=${target.schema}`;
  const options = [target.options, search].filter((o) => o !== undefined).join(' ');
  return {
    connectionString: target.connectionString,
    connectionTimeoutMillis: connectTimeoutMs,
    ...(options ? { options } : {}),
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === 20
          ? (value: string) => Number(value)
          : pg.types.getTypeParser(oid, format as 'text')) as never,
    },
  };
}

const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ECONNRESET',
  'EPIPE',
]);

/** Driver errors to the port's codes, with one-line messages that never include the URL's credentials. */
export function translatePgError(err: unknown, label: string): TaskplaneError {
  if (err instanceof TaskplaneError) return err;
  const code = (err as { code?: unknown }).code;
  const message = err instanceof Error ? err.message : String(err);
  if (typeof code === 'string') {
    if (
      UNREACHABLE.has(code) ||
      code === '57P01' ||
      code === '57P03' ||
      code === '08006' ||
      code === '08001'
    ) {
      return new TaskplaneError('unavailable', `postgres at ${label} is unreachable (${code})`, {
        cause: err,
      });
    }
    if (code === '28P01' || code === '28000') {
      return new TaskplaneError('config', `postgres at ${label} rejected the credentials`, { cause: err });
    }
    if (code === '3D000')
      return new TaskplaneError('config', `postgres database ${label} does not exist`, { cause: err });
    if (code === '23505')
      return new TaskplaneError('conflict', 'a record with this key already exists', { cause: err });
    if (code === '40001' || code === '40P01') {
      return new TaskplaneError('unavailable', `postgres transaction aborted (${code}); retry`, {
        cause: err,
      });
    }
    return new TaskplaneError('internal', `postgres store error (${code})`, { cause: err });
  }
  if (/timeout|terminated|connect/i.test(message)) {
    return new TaskplaneError(
      'unavailable',
      `postgres at ${label} is unreachable (${message.split('\n')[0]})`,
      {
        cause: err,
      },
    );
  }
  return new TaskplaneError('internal', 'postgres store error', { cause: err });
}
