import type { Logger } from '../core/logger.ts';
import { openStore } from '../store/open-store.ts';
import type { AgentTaskStore } from '../store/store.ts';

/**
 * Opens the host's store from a `--db` URL (`sqlite:PATH`, `postgres://…`, `memory:`). SQLite group-commits
 * and fsyncs each batch's WAL before its writes resolve (synchronous=NORMAL plus an fsync on the thread
 * pool, or `?synchronous=FULL`), so a 2xx is sent only after the task is on disk.
 */
export function openHostStore(url: string, logger: Logger): Promise<AgentTaskStore> {
  return openStore(url, { logger: logger.child({ part: 'store' }) });
}
