import { TaskplaneError } from '../core/errors.ts';
import { MemoryStore } from './memory/memory-store.ts';
import type { Store } from './store.ts';
import { silentLogger, type Logger } from '../core/logger.ts';
import { parseStoreUrl } from './store-url.ts';

export interface OpenStoreOptions {
  /** Where the store says what it opened; never given credentials. @default silent */
  logger?: Logger;
}

/**
 * Opens the Store a URL names (see parseStoreUrl) and brings its schema up to date. Backends load with
 * dynamic import, so code that imports only this module and uses `memory:` stays free of native modules
 * and node: builtins (the lab bundles for the browser).
 *
 * Every failure is a TaskplaneError with a one-line message: `config` (malformed URL, unknown scheme,
 * bad credentials), `unavailable` (database unreachable or locked), `schema_too_new`.
 */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  const logger = options.logger ?? silentLogger;
  const target = parseStoreUrl(url);
  switch (target.kind) {
    case 'memory':
      logger.info('store: memory (not durable)');
      return new MemoryStore();
    case 'sqlite': {
      const { SqliteStore } = await import('./sqlite/sqlite-store.ts');
      try {
        const { kind: _kind, ...sqliteOptions } = target;
        const store = new SqliteStore(sqliteOptions);
        await store.ready().catch(async (err: unknown) => {
          await store.close();
          throw err;
        });
        logger.info(`store: sqlite ${target.path}`);
        return store;
      } catch (err) {
        if (err instanceof TaskplaneError) throw err;
        const code = (err as { code?: unknown }).code;
        throw new TaskplaneError(
          'unavailable',
          `cannot open sqlite database ${target.path} (${String(code ?? err)})`,
          {
            cause: err,
            retryable: false,
          },
        );
      }
    }
    case 'postgres': {
      const { PostgresStore } = await import('./postgres/pg-store.ts');
      const store = await PostgresStore.open({ url: target.url, logger });
      logger.info(`store: postgres ${store.label}`);
      return store;
    }
  }
}
