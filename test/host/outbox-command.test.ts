import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, spawnHost, spawnTaskplane, type TestProcess } from '../support/process.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { Wire } from './in-process.ts';

/** `taskplane host outbox`, run as a real process against a real host's SQLite file. */
describe('taskplane host outbox', () => {
  let dir: string;
  let db: string;
  let host: TestProcess;
  let url: string;
  let taskId: string;
  let receiver: Server | undefined;
  let hookPort: number;

  async function cli(...args: string[]) {
    const proc = await spawnTaskplane(['host', 'outbox', '--db', db, ...args]);
    const exit = await proc.exited;
    return { code: exit.code, out: proc.stdout, err: proc.stderr };
  }

  /** Polls the host's file through a store of the test's own (the CLI is only run for its answers). */
  async function until(check: (store: SqliteStore) => Promise<boolean>): Promise<void> {
    const store = new SqliteStore({ path: join(dir, 'host.db') });
    try {
      for (let i = 0; i < 400; i++) {
        if (await check(store)) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('condition not met within 20 s');
    } finally {
      await store.close();
    }
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'taskplane-outbox-'));
    db = `sqlite:${join(dir, 'host.db')}`;
    hookPort = await freePort(); // nothing listens: every delivery is refused
    ({ proc: host, url } = await spawnHost([
      '--port',
      '0',
      '--db',
      db,
      '--allow-private-webhooks',
      '--push-attempts',
      '1',
      '--push-base-ms',
      '100',
    ]));
    const res = await fetch(`${url}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: { messageId: 'outbox-1', role: 'ROLE_USER', parts: [{ text: 'hello' }] },
          configuration: { taskPushNotificationConfig: { url: `http://127.0.0.1:${hookPort}/hook` } },
        },
      }),
    });
    taskId = ((await res.json()) as Wire).result.task.id;
  }, 60_000);

  afterAll(async () => {
    await host?.stop();
    await new Promise<void>((r) => (receiver ? receiver.close(() => r()) : r()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists the dead-lettered deliveries with the receiver’s error, as a table and as JSON', async () => {
    await until(async (s) => (await s.listOutbox({ status: 'dead', taskId })).length > 0);
    const table = await cli('--status', 'dead');
    expect(table.code).toBe(0);
    expect(table.out).toMatch(/ID\s+TASK\s+CONFIG\s+STATUS\s+ATTEMPTS/);
    expect(table.out).toContain(taskId);
    expect(table.out).toMatch(/\bdead\s+1\b/);
    const rows = JSON.parse((await cli('--task', taskId, '--json')).out) as Wire[];
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((r) => r.status === 'dead' && r.taskId === taskId)).toBe(true);
    expect(rows[0].lastError).toMatch(/ECONNREFUSED|refused|fetch failed/i);
    expect(rows[0].payload).toHaveProperty('task.id', taskId);
  }, 30_000);

  it('--requeue-dead sends them again; the running host delivers them once the receiver is back', async () => {
    const got: string[] = [];
    receiver = createServer((req, res) => {
      got.push(String(req.headers['a2a-delivery-id']));
      req.resume();
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => receiver!.listen(hookPort, '127.0.0.1', () => r()));
    const dead = JSON.parse((await cli('--status', 'dead', '--json')).out) as Wire[];
    const requeued = await cli('--requeue-dead');
    expect(requeued.code).toBe(0);
    expect(requeued.out).toMatch(new RegExp(`^${dead.length} dead-lettered deliver(y|ies) requeued`));
    await until(async () => got.length >= dead.length);
    expect(new Set(got)).toEqual(new Set(dead.map((r) => r.deliveryId)));
    await until(async (s) => (await s.listOutbox({ status: 'delivered', taskId })).length === dead.length);
    expect((await cli('--status', 'dead')).out.trim()).toBe('no push deliveries match');
  }, 30_000);

  it('bad flags are one-line errors naming the flag', async () => {
    const bad = await cli('--status', 'lost');
    expect(bad.code).toBe(2);
    expect(bad.err.trim()).toBe(
      "taskplane: option '--status <status>' argument 'lost' is invalid. Allowed choices are pending, leased, delivered, dead.",
    );
    const limit = await cli('--limit', '0');
    expect(limit.code).toBe(2);
    expect(limit.err.trim()).toBe(
      "taskplane: option '--limit <n>' argument '0' is invalid. Expected a positive integer.",
    );
    // --requeue-dead acts on every dead row (of --task): a filter it would ignore is refused.
    const requeue = await cli('--requeue-dead', '--limit', '3');
    expect([requeue.code, requeue.err.trim()]).toEqual([
      2,
      'taskplane: --requeue-dead requeues every dead row (of --task); drop --status and --limit',
    ]);
  }, 30_000);

  it('a mistyped database path is an error, not an empty outbox (nothing is created)', async () => {
    const missing = join(dir, 'nope', 'host.db');
    const proc = await spawnTaskplane(['host', 'outbox', '--db', `sqlite:${missing}`]);
    const exit = await proc.exited;
    expect([exit.code, proc.stderr.trim()]).toEqual([2, `taskplane: --db: no database at ${missing}`]);
    expect(existsSync(join(dir, 'nope'))).toBe(false);
    // `--db` is `taskplane host`'s flag: before `outbox` it names the same database.
    const before = await spawnTaskplane(['host', '--db', db, 'outbox', '--json']);
    expect((await before.exited).code).toBe(0);
    expect(Array.isArray(JSON.parse(before.stdout))).toBe(true);
  }, 30_000);
});
