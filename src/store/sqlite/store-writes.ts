import type { WriteArgs, WriteName, WriteResult } from './write-ops.ts';

/**
 * Where a SqliteStore's writes run: on the write worker (worker-writes.ts) or on the event loop's own
 * connection (event-loop-writes.ts). The store holds one and never asks which.
 */
export interface StoreWrites {
  run<K extends WriteName>(name: K, args: WriteArgs<K>): Promise<WriteResult<K>>;
  /** `value` (read just now on the store's connection) once every commit it may include is durable. */
  visible<T>(value: T): Promise<T>;
  /** Settles once writes can run (the worker has its connection), or rejects when they never can. */
  readonly ready: Promise<void>;
  /** Waits for the writes made so far, then lets go of the connection or thread. */
  close(): Promise<void>;
}
