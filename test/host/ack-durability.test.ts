import http from 'node:http';
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnHost, type TestProcess } from '../support/process.ts';
import { rpc, tempDb } from './helpers.ts';

/**
 * Durability of the answer itself: a SendMessage the host answered 2xx names a task that is in the store,
 * even when the process is SIGKILLed the moment that answer arrives, with more sends still in flight.
 * (The store answers after the commit and its WAL fsync; SIGKILL keeps what reached the kernel, so this
 * checks the order "commit, then answer" end to end; the fsync order is checked in
 * test/store/sqlite-durability.test.ts, since a power loss cannot be staged here.)
 */
const { dir, db } = tempDb('ack');
const procs: TestProcess[] = [];
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGKILL')));
  rmSync(dir, { recursive: true, force: true });
});

const TOTAL = 400;
const KILL_AT = 300;
const CONCURRENCY = 32;

describe('an acknowledged send survives SIGKILL right after its 2xx', () => {
  it('finds every task the host answered 2xx for after a restart on the same file', async () => {
    const first = await spawnHost(['--port', '0', '--db', db, '--host-id', 'ack-host']);
    procs.push(first.proc);
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const acknowledged: string[] = [];
    let killed = false;
    const send = (i: number) =>
      new Promise<void>((resolve) => {
        const body = JSON.stringify({
          jsonrpc: '2.0',
          id: i,
          method: 'SendMessage',
          params: {
            message: { messageId: `ack-${i}`, role: 'ROLE_USER', parts: [{ text: `hello ${i}` }] },
            configuration: { returnImmediately: true },
          },
        });
        const req = http.request(
          `${first.url}/a2a/jsonrpc`,
          {
            method: 'POST',
            agent,
            headers: {
              'content-type': 'application/json',
              'A2A-Version': '1.0',
              'content-length': Buffer.byteLength(body),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const json = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
                result?: { task: { id: string } };
              };
              if (res.statusCode === 200 && json.result) {
                acknowledged.push(json.result.task.id);
                // Synchronously, in the callback of the answer: no later turn of this process runs first.
                if (acknowledged.length === KILL_AT && !killed) {
                  killed = true;
                  first.proc.child.kill('SIGKILL');
                }
              }
              resolve();
            });
            res.on('error', () => resolve());
          },
        );
        req.on('error', () => resolve()); // sends cut off by the kill
        req.end(body);
      });
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < TOTAL && !killed) await send(next++);
      }),
    );
    agent.destroy();
    expect((await first.proc.exited).signal).toBe('SIGKILL');
    expect(acknowledged.length).toBeGreaterThanOrEqual(KILL_AT);
    expect(next).toBeLessThan(TOTAL); // sends were still in flight when it died

    const second = await spawnHost(['--port', '0', '--db', db, '--host-id', 'ack-host']);
    procs.push(second.proc);
    const missing: string[] = [];
    for (const id of acknowledged) {
      const got = (await rpc(second.url, 'GetTask', { id })) as { result?: { id: string } };
      if (got.result?.id !== id) missing.push(id);
    }
    expect(missing).toEqual([]);
    expect((await second.proc.stop()).code).toBe(0);
  }, 60_000);
});
