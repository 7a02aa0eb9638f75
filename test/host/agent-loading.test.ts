import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { TaskplaneError } from '../../src/core/errors.ts';
import { startHost } from '../../src/host/start-host.ts';

/** `--agent` names a file the operator wrote: a bad one is a one-line config error, never a loader stack. */
describe('loading --agent', () => {
  const dir = mkdtempSync(join(tmpdir(), 'taskplane-agent-'));
  const start = (agent: string) =>
    startHost({ port: 0, db: 'memory:', agent, logger: pino({ level: 'silent' }) }).catch((e: unknown) => e);

  it('a missing file is a config error naming it', async () => {
    const err = await start(join(dir, 'missing.mjs'));
    expect(err).toBeInstanceOf(TaskplaneError);
    expect((err as TaskplaneError).code).toBe('config');
    expect((err as TaskplaneError).message).toMatch(/^cannot load agent .*missing\.mjs: /);
    expect((err as TaskplaneError).message).not.toContain('\n');
  });

  it('a module that throws while loading is a config error', async () => {
    const file = join(dir, 'throws.mjs');
    writeFileSync(file, 'throw new Error("boom at load");\n');
    const err = (await start(file)) as TaskplaneError;
    expect(err.code).toBe('config');
    expect(err.message).toContain('boom at load');
  });

  it('a module without defineAgent as its default export says what it must export', async () => {
    const file = join(dir, 'empty.mjs');
    writeFileSync(file, 'export const nothing = 1;\n');
    const err = (await start(file)) as TaskplaneError;
    expect(err.code).toBe('config');
    expect(err.message).toMatch(/default export must be defineAgent/);
  });
});
