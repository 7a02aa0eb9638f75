/**
 * What `taskplane/store` exports: the Store port, its records, and `openStore` for a `sqlite:`,
 * `postgres://` or `memory:` URL.
 */
export { openStore, type OpenStoreOptions } from './open-store.ts';
export type * from './store.ts';
export type { Logger, LogFn } from '../core/logger.ts';
