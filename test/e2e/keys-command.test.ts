import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnTaskplane, type TestProcess } from '../support/process.ts';

/**
 * `taskplane keys` against a real `taskplane serve` on the same SQLite file, each its own process: a
 * key created by the CLI works at once, a read-only key cannot write, and a key revoked by the CLI is
 * refused by the running plane and its open stream ends (waited on as the stream's end, not a sleep).
 */
const procs: TestProcess[] = [];
afterAll(async () => {
  for (const p of procs) await p.kill('SIGKILL').catch(() => {});
});

async function run(args: string[], env: Record<string, string | undefined> = {}) {
  const proc = await spawnTaskplane(args, { env });
  const exit = await proc.exited;
  return { code: exit.code, stdout: proc.stdout, stderr: proc.stderr };
}

async function keysJson<T>(db: string, ...args: string[]): Promise<T> {
  const r = await run(['keys', '--db', db, '--json', ...args]);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as T;
}

interface KeyOut {
  id: string;
  tenant: string;
  scope: string;
  key?: string;
  revokedAt: number | null;
}

describe('taskplane keys', () => {
  it('creates, lists and revokes keys that a running plane honours at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-keys-'));
    const db = `sqlite:${dir}/plane.db`;
    const writer = await keysJson<KeyOut>(db, 'create', '--tenant', 'acme', '--name', 'ci');
    const reader = await keysJson<KeyOut>(db, 'create', '--tenant', 'acme', '--read-only');
    expect(writer.key).toMatch(/^tp_/);
    expect(reader.scope).toBe('read-only');

    const serve = await spawnTaskplane(['serve', '--port', '0', '--db', db], {
      env: { TASKPLANE_API_KEYS: undefined, LOG_LEVEL: 'silent' },
      ready: /taskplane serve ready (http:\S+)/,
    });
    procs.push(serve);
    const url = serve.readyMatch![1]!;
    // Keys already exist: no first-start key is made or printed.
    expect(serve.stdout).not.toMatch(/shown once/);
    const call = (key: string, path: string, init: RequestInit = {}) =>
      fetch(url + path, {
        ...init,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      });

    expect((await call(writer.key!, '/v1/tasks')).status).toBe(200);
    expect((await call(reader.key!, '/v1/tasks')).status).toBe(200);
    const refused = await call(reader.key!, '/v1/tasks', {
      method: 'POST',
      body: JSON.stringify({ target: 'none', input: 'x' }),
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('permission_denied');

    const stream = await call(writer.key!, '/v1/events?from=now');
    expect(stream.status).toBe(200);
    const body = stream.body!.getReader();
    const ended = (async () => {
      for (;;) if ((await body.read()).done) return true;
    })();

    const revoked = await keysJson<KeyOut>(db, 'revoke', writer.id);
    expect(revoked.revokedAt).not.toBeNull();
    expect(await ended).toBe(true);
    expect((await call(writer.key!, '/v1/tasks')).status).toBe(401);
    expect((await call(reader.key!, '/v1/tasks')).status).toBe(200);

    const listed = await keysJson<KeyOut[]>(db, 'list');
    expect(listed.map((k) => [k.id, k.revokedAt !== null])).toEqual([
      [writer.id, true],
      [reader.id, false],
    ]);
    expect(JSON.stringify(listed)).not.toContain('sha256');
    await serve.kill('SIGTERM');
  });

  it('refuses a repeated or short seed key by position without printing it, and an unknown id', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-keys-'));
    const db = `sqlite:${dir}/plane.db`;
    const secret = 'seed-secret-0123456789';
    const twice = await run(['serve', '--port', '0', '--db', db], {
      TASKPLANE_API_KEYS: `a:${secret},b:other-secret-0123456789,c:${secret}`,
    });
    expect(twice.code).not.toBe(0);
    expect(twice.stderr).toContain('entry 3 repeats the key of entry 1');
    expect(twice.stderr + twice.stdout).not.toContain(secret);
    const short = await run(['serve', '--port', '0', '--db', db], { TASKPLANE_API_KEYS: 'a:short-key' });
    expect(short.code).not.toBe(0);
    expect(short.stderr).toContain('entry 1 has a key shorter than 16 characters');
    expect(short.stderr).not.toContain('short-key');

    await keysJson<KeyOut>(db, 'create', '--tenant', 'acme');
    const missing = await run(['keys', '--db', db, 'revoke', 'key_nope']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr.trim()).toBe('taskplane: key key_nope not found');
  });
});
