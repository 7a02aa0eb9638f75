/**
 * The SQLite write worker's entry (a worker_threads thread started by worker-writes.ts). It owns the
 * store's one writing connection: it runs each batch of writes it is sent through a WriteBatcher (group
 * commit, savepoints only when a write fails) with synchronous=FULL, so SQLite fsyncs the WAL inside
 * COMMIT on this thread and the event loop never waits on the disk or on SQLite's write path. It answers
 * each batch with its results once the batch's transactions are durable, along with the change notices of
 * every commit since the last answer: batches that shared a transaction have their notices in the first
 * answer, which still reaches the store before any of their writes resolve.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { ChangeNotice } from '../store.ts';
import { errorToData, translate } from './sqlite-errors.ts';
import { statementCache } from './statement-cache.ts';
import { runWrite } from './write-ops.ts';
import { WriteBatcher } from './write-batcher.ts';
import type { WorkerBatch, WorkerOptions, WorkerReply } from './worker-writes.ts';

const options = workerData as WorkerOptions;
const port = parentPort!;
const db = new Database(options.path);
db.pragma(`busy_timeout = ${options.busyTimeoutMs}`);
db.pragma(`synchronous = ${options.synchronous}`);

const conn = statementCache(db);

let notices: ChangeNotice[] = [];
const batcher = new WriteBatcher(db, {
  groupCommit: options.groupCommit,
  onCommit: (committed) => {
    for (const n of committed) notices.push(n);
  },
  translate,
});

// The pragma as SQLite took it, so the store can check the durability it asked for (2 = FULL).
port.postMessage({ ready: db.pragma('synchronous', { simple: true }) as number });

port.on('message', (msg: 'close' | WorkerBatch) => {
  if (msg === 'close') {
    db.close();
    port.close();
    return;
  }
  void Promise.allSettled(
    msg.ops.map(([name, args]) => batcher.run((n) => runWrite(conn, n, name, args))),
  ).then((settled) => {
    const reply: WorkerReply = {
      seq: msg.seq,
      results: settled.map((s) =>
        s.status === 'fulfilled' ? [true, s.value] : [false, errorToData(s.reason)],
      ),
      notices,
    };
    notices = [];
    port.postMessage(reply);
  });
});
