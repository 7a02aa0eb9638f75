import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished } from 'vitest';
import { NORMALIZED_STATES, isTerminal } from '../../src/core/states.ts';
import { listActiveEnvelopes } from '../../src/plane/reconciler.ts';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { OPEN_ENVELOPES_SQL, isOpenStateSet } from '../../src/store/store-query.ts';
import type { Store } from '../../src/store/store.ts';
import { disposeSchema, freshSchemaName, urlForSchema, withPgClient } from '../support/pg.ts';

/**
 * Listing open jobs (lease rounds, adoption, reconciliation) reads the partial index envelopes_open:
 * the cost is the open jobs, not the finished ones stored beside them.
 */
const OPEN = NORMALIZED_STATES.filter((s) => !isTerminal(s));
const FINISHED = 30_000;

/** FINISHED succeeded envelopes and 7 open ones, written with SQL (no API: the point is what is stored). */
const insertSql = (table: string, series: string, json = '') => `
  INSERT INTO ${table} (id, tenant, idempotency_key, connector, target, remote_id, state, updated_at, version, doc)
  SELECT 'e' || i, 't', NULL, 'fake', 'fake', 'r' || i,
    CASE WHEN i % ${Math.floor(FINISHED / 7)} = 0 THEN 'running' ELSE 'succeeded' END, i, 1,
    ('{"id":"e' || i || '","tenant":"t","target":"fake","state":"' ||
      CASE WHEN i % ${Math.floor(FINISHED / 7)} = 0 THEN 'running' ELSE 'succeeded' END || '","updatedAt":' || i || '}')${json}
  FROM ${series}`;

async function openIds(store: Store): Promise<string[]> {
  return (await listActiveEnvelopes(store, { target: 'fake' })).map((e) => e.id);
}

describe('open envelopes', () => {
  it('the written-out predicate is the non-terminal states of core/states.ts', () => {
    expect(isOpenStateSet(OPEN)).toBe(true);
    expect(isOpenStateSet(OPEN.slice(1))).toBe(false);
    expect(isOpenStateSet([...OPEN, 'succeeded'])).toBe(false);
    const listed = [...OPEN_ENVELOPES_SQL.matchAll(/'([a-z_]+)'/g)].map((m) => m[1]);
    expect(listed.sort()).toEqual([...OPEN].sort());
  });

  it('SQLite lists them on envelopes_open', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'tp-open-')), 'plane.db');
    const store = new SqliteStore({ path });
    onTestFinished(() => store.close());
    await store.getEnvelope('none');
    const db = new Database(path);
    db.exec(
      insertSql(
        'envelopes',
        `(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${FINISHED}) SELECT i FROM s)`,
      ),
    );
    const plan = db
      .prepare(
        `EXPLAIN QUERY PLAN SELECT doc, version FROM envelopes WHERE ${OPEN_ENVELOPES_SQL} AND target = ?
         ORDER BY updated_at ASC, id ASC LIMIT ?`,
      )
      .all('fake', 501) as Array<{ detail: string }>;
    db.close();
    expect(plan.map((p) => p.detail).join(' ')).toMatch(/envelopes_open/);
    expect(await openIds(store)).toHaveLength(7);
  }, 60_000);

  it('PostgreSQL lists them on envelopes_open', async () => {
    const schema = freshSchemaName('tp_open');
    const store = await PostgresStore.open({ url: urlForSchema(schema), listen: false });
    onTestFinished(async ({ task }) => {
      await store.close();
      await disposeSchema(schema, task.result?.state === 'fail');
    });
    const plan = await withPgClient(async (pg) => {
      await pg.query(insertSql(`${schema}.envelopes`, `generate_series(1, ${FINISHED}) AS i`, '::jsonb'));
      await pg.query(`ANALYZE ${schema}.envelopes`);
      await pg.query(`SET search_path TO ${schema}`);
      const r = await pg.query(
        `EXPLAIN SELECT doc, version FROM envelopes WHERE ${OPEN_ENVELOPES_SQL} AND target = $1
         ORDER BY updated_at ASC, id ASC LIMIT 501`,
        ['fake'],
      );
      return r.rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
    });
    expect(plan).toMatch(/envelopes_open/);
    expect(await openIds(store)).toHaveLength(7);
  }, 60_000);
});
