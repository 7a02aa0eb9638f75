import { Option, type Command } from 'commander';
import { TaskplaneError } from '../core/errors.ts';
import { openDatabase } from './open-database.ts';
import type { OutboxRow, OutboxStatus } from '../store/store.ts';
import { intOption, table } from './cli-options.ts';
import { whenOrEmpty } from './task-views.ts';

const STATUSES: readonly OutboxStatus[] = ['pending', 'leased', 'delivered', 'dead'];

function rows(found: OutboxRow[]): string {
  const out = [['ID', 'TASK', 'CONFIG', 'STATUS', 'ATTEMPTS', 'NEXT / DELIVERED', 'LAST ERROR']];
  for (const r of found) {
    const at = r.status === 'delivered' ? r.deliveredAt : r.status === 'dead' ? null : r.nextAttemptAt;
    out.push([
      String(r.id),
      r.taskId,
      r.configId,
      r.status,
      String(r.attempts),
      whenOrEmpty(at),
      (r.lastError ?? '').slice(0, 80),
    ]);
  }
  return table(out);
}

/**
 * `taskplane host outbox`: the push outbox of a host's database, read directly (the host may be
 * running). Shows what is waiting, what was delivered and, above all, what was dead-lettered after the
 * last attempt, with the receiver's last error; `--requeue-dead` gives dead rows a fresh set of attempts
 * (the running host picks them up within its poll interval, 1 s).
 */
export function registerHostOutboxCommand(host: Command): void {
  host
    .command('outbox')
    .configureHelp({ showGlobalOptions: true })
    .description('List the push deliveries in a host database: pending, delivered, dead-lettered')
    .addOption(new Option('--status <status>', 'only rows in this state').choices(STATUSES))
    .option('--task <id>', 'only deliveries of this task')
    .option('--limit <n>', 'most rows to print (oldest first)', intOption(1), 50)
    .option(
      '--requeue-dead',
      'give every dead-lettered row (of --task, if given) a fresh set of attempts; takes no --status or --limit',
    )
    .option('--json', 'print JSON instead of a table', false)
    .action(
      async (
        o: { status?: string; task?: string; limit: number; requeueDead?: boolean; json: boolean },
        cmd: Command,
      ) => {
        // `--db` is `taskplane host`'s own flag (same default, same meaning), given before or after `outbox`.
        const db = cmd.optsWithGlobals<{ db: string }>().db;
        if (o.requeueDead && (o.status !== undefined || cmd.getOptionValueSource('limit') === 'cli'))
          throw new TaskplaneError(
            'config',
            '--requeue-dead requeues every dead row (of --task); drop --status and --limit',
            {
              field: 'requeue-dead',
            },
          );
        const store = await openDatabase(db);
        try {
          if (o.requeueDead) {
            const n = await store.requeueDeadOutbox(Date.now(), o.task);
            console.log(
              o.json
                ? JSON.stringify({ requeued: n })
                : `${n} dead-lettered ${n === 1 ? 'delivery' : 'deliveries'} requeued`,
            );
            return;
          }
          const found = await store.listOutbox({
            ...(o.status ? { status: o.status as OutboxStatus } : {}),
            ...(o.task ? { taskId: o.task } : {}),
            limit: o.limit,
          });
          if (o.json) {
            console.log(JSON.stringify(found, null, 2));
            return;
          }
          if (found.length === 0) {
            console.log('no push deliveries match');
            return;
          }
          console.log(rows(found));
          if (found.length === o.limit) console.log(`(first ${o.limit} rows; --limit shows more)`);
        } finally {
          await store.close();
        }
      },
    );
}
