import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { retentionDays } from '../../src/cli/cli-options.ts';
import { spawnTaskplane } from '../support/process.ts';

describe('retention flags', () => {
  it('takes days (fractions too) or "never", and refuses anything else', () => {
    expect(retentionDays('30')).toBe(30);
    expect(retentionDays('0.5')).toBe(0.5);
    expect(retentionDays('0')).toBe(0);
    expect(retentionDays('never')).toBeNull();
    for (const bad of ['-1', '', 'forever', 'NaN', 'Infinity'])
      expect(() => retentionDays(bad), bad).toThrow(/days >= 0, or "never"/);
  });

  it('a bad value stops serve and host before they start: one line naming the flag, exit 2', async () => {
    for (const command of ['serve', 'host']) {
      const proc = await spawnTaskplane([
        command,
        '--retention-days',
        '-1',
        '--port',
        '0',
        '--db',
        'memory:',
      ]);
      const exit = await proc.exited;
      expect(exit.code, command).toBe(2);
      expect(proc.stderr).toMatch(/--retention-days <days>' argument '-1' is invalid/);
      expect(proc.stdout).toBe('');
    }
  }, 120_000);

  it('--export-before-purge to a directory that cannot be made stops serve before it starts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-export-dir-'));
    writeFileSync(join(dir, 'a-file'), '');
    const proc = await spawnTaskplane([
      'serve',
      '--port',
      '0',
      '--db',
      'memory:',
      '--export-before-purge',
      join(dir, 'a-file', 'audit'),
    ]);
    expect((await proc.exited).code).toBe(2);
    expect(proc.stderr).toMatch(
      /^taskplane: --export-before-purge: cannot create .*a-file\/audit \(ENOTDIR\)$/m,
    );
    expect(proc.stdout).toBe('');
  }, 120_000);
});
