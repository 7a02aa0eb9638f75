import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { newEnvelope, type Envelope } from '../../src/core/envelope.ts';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openStore } from '../../src/store/open-store.ts';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { PG_MIGRATIONS } from '../../src/store/postgres/pg-schema.ts';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/sqlite-schema.ts';
import { migrateSqlite } from '../../src/store/sqlite/sqlite-migrate.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { statementCache } from '../../src/store/sqlite/statement-cache.ts';
import { WRITES } from '../../src/store/sqlite/write-ops.ts';
import { serializeEnvelope } from '../../src/store/sqlite/write-rows.ts';
import type { Store } from '../../src/store/store.ts';
import { disposeSchema, freshSchemaName, urlForSchema, withPgClient, withPgSchemaAt } from '../support/pg.ts';
import { tempDb } from './support/temp-db.ts';

const run = promisify(execFile);

function freshSchema(): { schema: string; url: string } {
  const schema = freshSchemaName('tp_migrate');
  onTestFinished(({ task }) => disposeSchema(schema, task.result?.state === 'fail'));
  return { schema, url: urlForSchema(schema) };
}

describe('migrations', () => {
  it('sqlite: four processes opening one new file at once all succeed and migrate once', async () => {
    const path = tempDb('taskplane-migrate-');
    const child = join(import.meta.dirname, 'support', 'open-sqlite-child.ts');
    const outputs = await Promise.all(
      Array.from({ length: 4 }, () =>
        run(process.execPath, ['--import', 'tsx', child, path], { timeout: 30_000 }),
      ),
    );
    expect(outputs.map((o) => o.stdout.trim())).toEqual(['ok', 'ok', 'ok', 'ok']);
    const db = new Database(path, { readonly: true });
    const applied = db.prepare('SELECT id FROM taskplane_migrations ORDER BY id').all() as { id: number }[];
    const opened = db.prepare("SELECT COUNT(*) AS n FROM settings WHERE key LIKE 'opened-by-%'").get() as {
      n: number;
    };
    db.close();
    expect(applied.map((r) => r.id)).toEqual(SQLITE_MIGRATIONS.map((m) => m.id));
    expect(opened.n).toBe(4);
  });

  it('sqlite: reopening an up-to-date file applies nothing and keeps the data', async () => {
    const path = tempDb('taskplane-migrate-');
    const first = new SqliteStore({ path });
    await first.putSettingIfAbsent('k', 'v');
    await first.close();
    const second = new SqliteStore({ path });
    expect(await second.getSetting('k')).toBe('v');
    await second.close();
  });

  it('sqlite: a file at migration 1 with task events migrates; seqs are kept and new ones are larger', async () => {
    const path = tempDb('taskplane-migrate-');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    migrateSqlite(
      db,
      SQLITE_MIGRATIONS.filter((m) => m.id === 1),
      0,
    );
    db.prepare(
      `INSERT INTO agent_tasks (id, owner, context_id, state, status_timestamp, created_at, updated_at, version, task,
         executor_state) VALUES ('t1', 'alice', 'c1', 'TASK_STATE_WORKING', 1, 1, 1, 1, '{"id":"t1"}', NULL)`,
    ).run();
    const insert = db.prepare(
      'INSERT INTO agent_task_events (seq, task_id, at, payload) VALUES (?, ?, ?, ?)',
    );
    for (const seq of [1, 2, 7]) insert.run(seq, 't1', seq, JSON.stringify({ n: seq }));
    db.close();

    const store = new SqliteStore({ path });
    const before = await store.listAgentTaskEvents('t1', 0);
    expect(before).toEqual([1, 2, 7].map((seq) => ({ seq, taskId: 't1', at: seq, payload: { n: seq } })));
    const task = (await store.getAgentTask('t1'))!;
    const { events } = await store.updateAgentTask(task, 1, [{ taskId: 't1', at: 9, payload: { n: 9 } }], []);
    expect(events[0]!.seq).toBeGreaterThan(7);
    expect((await store.listAgentTaskEvents('t1', 7)).map((e) => e.payload)).toEqual([{ n: 9 }]);
    await store.close();

    const check = new Database(path, { readonly: true });
    const applied = check.prepare('SELECT id FROM taskplane_migrations ORDER BY id').all() as {
      id: number;
    }[];
    const objects = check
      .prepare("SELECT name, sql FROM sqlite_master WHERE tbl_name IN ('agent_task_events', 'agent_tasks')")
      .all() as { name: string; sql: string | null }[];
    check.close();
    expect(applied.map((r) => r.id)).toEqual(SQLITE_MIGRATIONS.map((m) => m.id));
    const names = objects.map((o) => o.name);
    expect(names).toContain('agent_task_events_task');
    expect(names).not.toContain('agent_tasks_state');
    expect(objects.find((o) => o.name === 'agent_task_events')!.sql).not.toMatch(/AUTOINCREMENT/i);
  });

  it('sqlite: envelopes written at migration 11 keep their documents, indexes and generated columns through the table rebuild of migration 12', async () => {
    const path = tempDb('taskplane-migrate-');
    const db = new Database(path);
    migrateSqlite(
      db,
      SQLITE_MIGRATIONS.filter((m) => m.id <= 11),
      0,
    );
    const job = (id: string, createdAt: number, fields: Partial<Envelope>): Envelope => ({
      ...newEnvelope({
        id,
        tenant: 't1',
        connector: 'a2a',
        target: 'agent',
        requestKind: 'message',
        input: { text: id },
        inputHash: 'h',
        createdAt,
        remoteVersion: 0,
      }),
      ...fields,
    });
    const running = job('env_a', 100, {
      state: 'running',
      remoteId: 'r-a',
      workflowId: 'wf1',
      idempotencyKey: 'k1',
      timeoutMs: 1_000,
    });
    const unstarted = job('env_b', 200, {});
    const finished = job('env_c', 50, { state: 'succeeded', remoteId: 'r-c' });
    const c = statementCache(db);
    for (const e of [running, unstarted, finished])
      WRITES.createEnvelope(c, [], serializeEnvelope(e), [], undefined, null);
    db.close();

    const store = new SqliteStore({ path });
    onTestFinished(() => store.close());
    for (const e of [running, unstarted, finished]) expect(await store.getEnvelope(e.id)).toEqual(e);
    expect(await store.findEnvelopeByIdempotencyKey('t1', 'k1')).toEqual(running);
    expect((await store.listEnvelopes({ workflowId: 'wf1' })).items).toEqual([running]);
    expect(await store.openJobsOfTarget('agent')).toEqual({ tenants: ['t1'], oldestCreatedAt: 100 });
    // env_a's timeout (100 + 1,000) and env_b's unconfirmed start (200) have come; env_c is finished.
    const due = await store.listReconcileDue('agent', { now: 1_100, defaultOrphanCreatedBefore: 0 });
    expect(due.map((e) => e.id).sort()).toEqual(['env_a', 'env_b']);
    expect(await store.listReconcileDue('agent', { now: 1_099, defaultOrphanCreatedBefore: 0 })).toEqual([
      unstarted,
    ]);

    const indexes = (file: string) => {
      const check = new Database(file, { readonly: true });
      try {
        return check
          .prepare("SELECT name, sql FROM sqlite_master WHERE tbl_name = 'envelopes' ORDER BY name")
          .all();
      } finally {
        check.close();
      }
    };
    const fresh = tempDb('taskplane-migrate-');
    await new SqliteStore({ path: fresh }).close();
    expect(indexes(path)).toEqual(indexes(fresh));
  });

  it('sqlite: owner@tenant scopes written before structured scopes move to owner and tenant, none lost', async () => {
    const path = tempDb('taskplane-migrate-');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    migrateSqlite(
      db,
      SQLITE_MIGRATIONS.filter((m) => m.id < 3),
      0,
    );
    const insertTask = db.prepare(
      `INSERT INTO agent_tasks (id, owner, context_id, state, status_timestamp, created_at, updated_at, version, task,
         executor_state) VALUES (?, ?, 'c1', 'TASK_STATE_WORKING', 1, 1, 1, 1, '{}', NULL)`,
    );
    const insertMessage = db.prepare(
      'INSERT INTO agent_task_messages (owner, message_id, task_id) VALUES (?, ?, ?)',
    );
    const insertConfig = db.prepare(
      `INSERT INTO push_configs (task_id, id, owner, url, token, authentication, created_at)
         VALUES (?, 'c1', ?, 'https://hooks.example/', NULL, NULL, 1)`,
    );
    for (const [id, owner] of LEGACY_SCOPES) {
      insertTask.run(id, owner);
      insertMessage.run(owner, 'm-1', id);
      insertConfig.run(id, owner);
    }
    db.close();
    const store = new SqliteStore({ path });
    await expectMigratedScopes(store);
    await store.close();
  });

  it('sqlite: a database with a future migration is refused with schema_too_new', async () => {
    const path = tempDb('taskplane-migrate-');
    await new SqliteStore({ path }).close();
    const db = new Database(path);
    db.prepare('INSERT INTO taskplane_migrations (id, name, applied_at) VALUES (999, ?, 0)').run(
      'from the future',
    );
    db.close();
    const opening = openStore(`sqlite:${path}`);
    await expect(opening).rejects.toMatchObject({ code: 'schema_too_new' });
    await expect(opening).rejects.toThrow(/migration 999 .* knows only up to \d+/);
  });

  it('postgres: four stores migrating one new schema at once all succeed and migrate once', async () => {
    const { schema, url } = freshSchema();
    const stores = await Promise.all(
      Array.from({ length: 4 }, () => PostgresStore.open({ url, poolMax: 2 })),
    );
    await Promise.all(stores.map((s, i) => s.putSettingIfAbsent(`opened-${i}`, 'yes')));
    await Promise.all(stores.map((s) => s.close()));
    const applied = await withPgClient((c) =>
      c.query<{ id: number }>(`SELECT id FROM ${schema}.taskplane_migrations ORDER BY id`),
    );
    expect(applied.rows.map((r) => r.id)).toEqual(PG_MIGRATIONS.map((m) => m.id));
  });

  it('postgres: owner@tenant scopes written before structured scopes move to owner and tenant, none lost', async () => {
    const { schema, url } = freshSchema();
    await withPgSchemaAt(
      schema,
      (id) => id < 2,
      async (c) => {
        for (const [id, owner] of LEGACY_SCOPES) {
          await c.query(
            `INSERT INTO agent_tasks (id, owner, context_id, state, status_timestamp, created_at, updated_at, version,
             task, executor_state) VALUES ($1, $2, 'c1', 'TASK_STATE_WORKING', 1, 1, 1, 1, '{}', NULL)`,
            [id, owner],
          );
          await c.query('INSERT INTO agent_task_messages (owner, message_id, task_id) VALUES ($1, $2, $3)', [
            owner,
            'm-1',
            id,
          ]);
          await c.query(
            `INSERT INTO push_configs (task_id, id, owner, url, token, authentication, created_at)
             VALUES ($1, 'c1', $2, 'https://hooks.example/', NULL, NULL, 1)`,
            [id, owner],
          );
        }
      },
    );
    const store = await PostgresStore.open({ url });
    await expectMigratedScopes(store);
    await store.close();
  });

  it('postgres: a database with a future migration is refused with schema_too_new', async () => {
    const { schema, url } = freshSchema();
    await (await PostgresStore.open({ url })).close();
    await withPgClient((c) =>
      c.query(`INSERT INTO ${schema}.taskplane_migrations (id, name, applied_at) VALUES (999, 'future', 0)`),
    );
    const opening = openStore(url);
    await expect(opening).rejects.toMatchObject({ code: 'schema_too_new' });
    await expect(opening).rejects.toThrow(/migration 999/);
  });
});

/** Task id → the scope string the host wrote before owner and tenant were separate columns. */
const LEGACY_SCOPES: Array<[string, string]> = [
  ['t-tenant', 'alice@x'],
  ['t-plain', 'alice'],
  ['t-two-at', 'bob@x@y'],
  ['t-trailing', 'carol@'],
];

/** Where each legacy row lands: split at the first `@` when something follows it. */
const MIGRATED: Array<[string, { owner: string; tenant: string }]> = [
  ['t-tenant', { owner: 'alice', tenant: 'x' }],
  ['t-plain', { owner: 'alice', tenant: '' }],
  ['t-two-at', { owner: 'bob', tenant: 'x@y' }],
  ['t-trailing', { owner: 'carol@', tenant: '' }],
];

async function expectMigratedScopes(store: Store): Promise<void> {
  for (const [id, scope] of MIGRATED) {
    expect(await store.getAgentTask(id)).toMatchObject({ id, ...scope, version: 1 });
    expect(await store.getAgentTask(id, scope)).toBeDefined();
    expect(await store.findAgentTaskByMessageId(scope, 'm-1')).toBe(id);
    expect(await store.getPushConfig(id, 'c1')).toMatchObject({ taskId: id, ...scope });
    const listed = await store.listAgentTasks(scope);
    expect(listed.tasks.map((t) => t.id)).toEqual([id]);
    // Counted by migration 6's backfill (rows written before the counts existed).
    expect(listed.totalSize).toBe(1);
  }
  // The joined name no longer reaches alice's tenant task, and dedup works in the new columns.
  expect(await store.getAgentTask('t-tenant', { owner: 'alice@x', tenant: '' })).toBeUndefined();
  const again = await store.createAgentTask(
    {
      id: 't-new',
      owner: 'alice',
      tenant: 'x',
      contextId: 'c1',
      state: 'TASK_STATE_SUBMITTED',
      statusTimestamp: 2,
      task: {},
      executorState: null,
      createdAt: 2,
      updatedAt: 2,
      version: 1,
    },
    'm-1',
    [],
    [],
  );
  expect(again).toMatchObject({ created: false, task: { id: 't-tenant' } });
}
