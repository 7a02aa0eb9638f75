/**
 * The acceptance-schema compile worker's entry (a worker_threads thread started by
 * worker-schema-compiler.ts). It compiles one schema at a time into a standalone validator's source and
 * sends the source back, or what is wrong with the schema. The thread that started it may stop it at any
 * point (a compile past its deadline); it holds nothing worth keeping.
 */
import { parentPort } from 'node:worker_threads';
import { compileSchemaSource } from '../plane/acceptance.ts';
import type { CompileReply, CompileRequest } from './worker-schema-compiler.ts';

const port = parentPort!;
// Loaded and ready: the deadline of the first compile starts now, not while the thread boots.
port.postMessage({ ready: true });

port.on('message', (msg: CompileRequest) => {
  let reply: CompileReply;
  try {
    reply = { id: msg.id, ok: true, ...compileSchemaSource(msg.schema) };
  } catch (err) {
    reply = { id: msg.id, ok: false, message: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(reply);
});
