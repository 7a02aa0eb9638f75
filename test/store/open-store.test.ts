import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { TaskplaneError } from '../../src/core/errors.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { openStore } from '../../src/store/open-store.ts';
import { disposeSchema, freshSchemaName, urlForSchema } from '../support/pg.ts';

async function openError(url: string): Promise<TaskplaneError> {
  const err: unknown = await openStore(url).then(
    async (store) => {
      await store.close();
      throw new Error(`expected ${url} to fail`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TaskplaneError);
  return err as TaskplaneError;
}

describe('openStore', () => {
  it('memory: opens the in-memory store', async () => {
    const store = await openStore('memory:');
    expect(store).toBeInstanceOf(MemoryStore);
    expect(store.capabilities).toEqual({
      durable: false,
      multiProcess: false,
      crossProcessNotify: false,
      ownerLiveness: false,
    });
    await store.close();
  });

  it('sqlite: opens a file, creating its parent directory, and sqlite::memory:', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-open-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'nested', 'deeper', 'taskplane.db');
    const file = await openStore(`sqlite:${path}`);
    expect(file.capabilities).toEqual({
      durable: true,
      multiProcess: true,
      crossProcessNotify: false,
      ownerLiveness: false,
    });
    expect(await file.putSettingIfAbsent('a', 'b')).toBe('b');
    await file.close();
    expect(existsSync(path)).toBe(true);
    const mem = await openStore('sqlite::memory:');
    expect(mem.capabilities.durable).toBe(false);
    expect(await mem.putSettingIfAbsent('a', 'c')).toBe('c');
    await mem.close();
  });

  it('postgres: opens a schema named in the URL', async () => {
    const schema = freshSchemaName('tp_open');
    onTestFinished(({ task }) => disposeSchema(schema, task.result?.state === 'fail'));
    const store = await openStore(urlForSchema(schema));
    expect(store.capabilities).toEqual({
      durable: true,
      multiProcess: true,
      crossProcessNotify: true,
      ownerLiveness: true,
    });
    expect(await store.putSettingIfAbsent('a', 'b')).toBe('b');
    await store.close();
  });

  it.each([
    ['', 'no scheme'],
    ['taskplane.db', 'no scheme'],
    ['mysql://root:hunter2@db/x', 'unknown store URL scheme "mysql:"'],
    ['sqlite:', 'needs a file path'],
    ['sqlite:./x.db?journal=off', 'option "journal"'],
    ['sqlite:./x.db?writeThread=both', 'option "writeThread"'],
    ['memory:/x', 'takes no path'],
    ['postgres://user:hunter2@[::1/db', 'not a valid postgres'],
    ['postgres://user:hunter2@localhost/db?schema=Bad-Name', 'schema must match'],
  ])('config error for store URL %j (memory, sqlite, postgres)', async (url, fragment) => {
    const err = await openError(url);
    expect(err.code).toBe('config');
    expect(err.message).toContain(fragment);
    expect(err.message).not.toContain('hunter2');
    expect(err.message).not.toContain('\n');
  });

  it('postgres: an unreachable server is unavailable, one line, no credentials', async () => {
    const err = await openError('postgres://admin:hunter2@127.0.0.1:1/test');
    expect(err.code).toBe('unavailable');
    expect(err.retryable).toBe(true);
    expect(err.message).toBe('postgres at 127.0.0.1:1/test is unreachable (ECONNREFUSED)');
  });

  it('sqlite: a path that cannot be a database file is unavailable, one line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-open-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const err = await openError(`sqlite:${dir}`);
    expect(err.code).toBe('unavailable');
    expect(err.message).not.toContain('\n');
  });
});
