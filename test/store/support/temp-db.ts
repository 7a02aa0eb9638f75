import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

/**
 * A path for a SQLite file in a fresh temp directory, removed after the test unless it failed (then it is
 * kept, and named, for a look). Call inside a test.
 */
export function tempDb(prefix = 'taskplane-store-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const path = join(dir, 'store.db');
  onTestFinished(({ task }) => {
    if (task.result?.state === 'fail') console.error(`kept sqlite database for inspection: ${path}`);
    else rmSync(dir, { recursive: true, force: true });
  });
  return path;
}
