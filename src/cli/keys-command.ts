import type { Command } from 'commander';
import { SystemClock } from '../core/clock.ts';
import { TaskplaneError } from '../core/errors.ts';
import { CryptoRandom } from '../core/random.ts';
import { newApiKey } from '../server/api-keys.ts';
import { openDatabase } from './open-database.ts';
import type { ApiKeyRecord, Store } from '../store/store.ts';
import { table } from './cli-options.ts';
import { whenOrEmpty } from './task-views.ts';

/** What a key looks like to people and scripts: never its hash, which is as good as a secret to a guesser. */
function keyView(k: ApiKeyRecord): Record<string, unknown> {
  return {
    id: k.id,
    tenant: k.tenant,
    scope: k.readOnly ? 'read-only' : 'read-write',
    name: k.name,
    createdAt: k.createdAt,
    revokedAt: k.revokedAt,
  };
}

async function withStore<T>(db: string, mayCreate: boolean, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openDatabase(db, { mayCreate });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/**
 * `taskplane keys create|list|revoke`: the control plane's API keys, managed in its database directly
 * (run it where `taskplane serve` runs, or against the PostgreSQL every plane shares). The secret is
 * printed once at creation and only its hash is stored. A revoked key is refused by every plane on the
 * database within its key cache time (0.5 s by default) and its open streams close.
 */
export function registerKeysCommand(program: Command): void {
  const keys = program
    .command('keys')
    .description("Create, list and revoke the control plane's API keys (in its database)")
    .option('--db <url>', 'sqlite:PATH | postgres://…', 'sqlite:./data/taskplane.db')
    .option('--json', 'print JSON instead of tables', false);
  const globals = (cmd: Command) => cmd.optsWithGlobals<{ db: string; json: boolean }>();

  keys
    .command('create')
    .description('Create a key for a tenant; prints the secret once')
    .requiredOption('--tenant <name>', 'the tenant whose tasks the key reaches')
    .option('--read-only', 'the key may read but not create, answer or cancel', false)
    .option('--name <label>', 'a label for people (ci, dashboard, …)')
    .action(async (o: { tenant: string; readOnly: boolean; name?: string }, cmd: Command) => {
      const g = globals(cmd);
      const { secret, record } = newApiKey(new SystemClock(), new CryptoRandom(), {
        tenant: o.tenant,
        readOnly: o.readOnly,
        name: o.name ?? null,
      });
      await withStore(g.db, true, (store) => store.putApiKeyIfAbsent(record));
      if (g.json) {
        console.log(JSON.stringify({ ...keyView(record), key: secret }, null, 2));
        return;
      }
      console.log(`created ${record.id} for tenant "${record.tenant}" (${keyView(record).scope as string})`);
      console.log(`key (shown once; only its hash is stored): ${secret}`);
    });

  keys
    .command('list')
    .description('List every key: id, tenant, scope, name, created, revoked')
    .action(async (_o: unknown, cmd: Command) => {
      const g = globals(cmd);
      const found = await withStore(g.db, false, (store) => store.listApiKeys());
      if (g.json) {
        console.log(JSON.stringify(found.map(keyView), null, 2));
        return;
      }
      if (found.length === 0) {
        console.log('no API keys (`taskplane keys create --tenant NAME` makes one)');
        return;
      }
      const rows = [['ID', 'TENANT', 'SCOPE', 'NAME', 'CREATED', 'REVOKED']];
      for (const k of found)
        rows.push([
          k.id,
          k.tenant,
          k.readOnly ? 'read-only' : 'read-write',
          k.name ?? '',
          whenOrEmpty(k.createdAt),
          whenOrEmpty(k.revokedAt),
        ]);
      console.log(table(rows));
    });

  keys
    .command('revoke')
    .description('Revoke a key by id: refused from its next request on, its streams closed')
    .argument('<id>', 'the key id (key_…), as `keys list` shows it')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const g = globals(cmd);
      const revoked = await withStore(g.db, false, (store) => store.revokeApiKey(id, Date.now()));
      if (!revoked) throw new TaskplaneError('not_found', `key ${id} not found`, { field: 'id' });
      if (g.json) console.log(JSON.stringify(keyView(revoked), null, 2));
      else
        console.log(
          `revoked ${revoked.id} (tenant "${revoked.tenant}") at ${whenOrEmpty(revoked.revokedAt)}`,
        );
    });
}
