import { existsSync, mkdirSync } from 'node:fs';
import { TaskplaneError } from '../core/errors.ts';
import { openStore } from '../store/open-store.ts';
import type { Store } from '../store/store.ts';
import { parseStoreUrl } from '../store/store-url.ts';

/**
 * Opens a database another process (a running plane or host) writes, for the commands that read or
 * change it directly (`keys`, `export`, `host outbox`). An in-memory store is refused: it holds nothing
 * between processes. A SQLite path that is not there is refused too, since opening it would create an
 * empty database and report nothing to see; with `mayCreate` (keys can exist before the first `serve`)
 * it is made, folder and all.
 */
export async function openDatabase(db: string, o: { mayCreate?: boolean } = {}): Promise<Store> {
  const target = parseStoreUrl(db);
  if (target.kind === 'memory' || (target.kind === 'sqlite' && target.path === ':memory:'))
    throw new TaskplaneError('config', '--db: an in-memory store holds nothing between processes', {
      field: 'db',
    });
  if (target.kind === 'sqlite' && !existsSync(target.path)) {
    if (!o.mayCreate)
      throw new TaskplaneError('config', `--db: no database at ${target.path}`, { field: 'db' });
    if (target.path.includes('/'))
      mkdirSync(target.path.slice(0, target.path.lastIndexOf('/')), { recursive: true });
  }
  return openStore(db);
}
