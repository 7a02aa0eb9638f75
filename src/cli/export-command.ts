import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { TaskplaneError } from '../core/errors.ts';
import { exportEvents, type ExportFilter } from '../server/event-export.ts';
import { openDatabase } from './open-database.ts';

/** `--since`: an ISO 8601 time or epoch milliseconds. */
export function parseSince(value: string): number {
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms))
    throw new TaskplaneError(
      'config',
      `--since: "${value}" is neither an ISO 8601 time nor epoch milliseconds`,
      {
        field: 'since',
      },
    );
  return ms;
}

/** Resolves once `out` took `chunk` (waits for 'drain' when its buffer is full). */
function writeTo(out: NodeJS.WritableStream): (chunk: string) => Promise<void> {
  return (chunk) =>
    new Promise((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      out.once('error', onError);
      const done = () => {
        out.off('error', onError);
        resolve();
      };
      if (out.write(chunk)) done();
      else out.once('drain', done);
    });
}

/**
 * `taskplane export`: one job's or one tenant's event log as JSON Lines (server/event-export.ts has the
 * line format), read straight from the plane's database, a page at a time, to a file or stdout. Progress
 * goes to stderr, so stdout carries only the lines.
 */
export function registerExportCommand(program: Command): void {
  program
    .command('export')
    .description(
      "Write a task's or a tenant's events as JSON Lines (the audit trail), from the plane's database",
    )
    .option('--db <url>', 'sqlite:PATH | postgres://…', 'sqlite:./data/taskplane.db')
    .option('--task <id>', 'one task (envelope id, tsk_…)')
    .option('--tenant <tenant>', "one tenant's tasks (with --task: only if the task is that tenant's)")
    .option('--since <time>', 'only events at or after this time (ISO 8601 or epoch ms)')
    .option('--out <file>', 'write to this file (default stdout)')
    .option('--quiet', 'no progress on stderr', false)
    .action(async (opts: Record<string, unknown>) => {
      const task = opts.task as string | undefined;
      const tenant = opts.tenant as string | undefined;
      if (!task && !tenant)
        throw new TaskplaneError('config', 'export: give --task ID or --tenant TENANT', { field: 'task' });
      const db = opts.db as string;
      const filter: ExportFilter = {
        ...(task ? { envelopeId: task } : {}),
        ...(tenant ? { tenant } : {}),
        ...(opts.since !== undefined ? { sinceMs: parseSince(opts.since as string) } : {}),
      };
      const store = await openDatabase(db);
      let file: WriteStream | null = null;
      try {
        if (task) {
          const env = await store.getEnvelope(task);
          if (!env || (tenant !== undefined && env.tenant !== tenant))
            throw new TaskplaneError(
              'not_found',
              `export: no task ${task}${tenant !== undefined ? ` in tenant ${tenant}` : ''} in this database (purged, or never here)`,
              { field: 'task' },
            );
        }
        const outPath = opts.out as string | undefined;
        if (outPath) {
          mkdirSync(dirname(outPath), { recursive: true });
          file = createWriteStream(outPath, { flags: 'w', mode: 0o600 });
          await new Promise<void>((resolve, reject) => {
            file!.once('open', () => resolve());
            file!.once('error', reject);
          });
        }
        const quiet = opts.quiet === true;
        let shown = 0;
        const lines = await exportEvents(store, filter, writeTo(file ?? process.stdout), (n) => {
          // A line per 10,000 events: long exports show they move, short ones stay quiet.
          if (!quiet && n - shown >= 10_000) {
            shown = n;
            process.stderr.write(`taskplane export: ${n} events so far\n`);
          }
        });
        if (file)
          await new Promise<void>((resolve, reject) =>
            file!.end((err?: Error | null) => (err ? reject(err) : resolve())),
          );
        if (!quiet)
          process.stderr.write(
            `taskplane export: ${lines} events${outPath ? ` written to ${outPath}` : ''}\n`,
          );
      } finally {
        if (file && !file.closed) file.destroy();
        await store.close();
      }
    });
}
