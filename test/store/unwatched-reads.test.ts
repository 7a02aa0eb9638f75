import { describe, expect, it, onTestFinished } from 'vitest';
import type { Envelope } from '../../src/core/envelope.ts';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import type { EnvelopeStore } from '../../src/store/store.ts';
import { unwatchedSql } from '../../src/store/unwatched-sql.ts';
import { sqliteFileWithRawConnection } from './sqlite-file.ts';
import { disposeSchema, freshSchemaName, urlForSchema, withPgClient } from '../support/pg.ts';

/**
 * An adoption round's read (listUnwatchedEnvelopes, unwatched-sql.ts) with many open jobs, nearly all
 * leased by live planes: it walks the open-jobs index and probes the leases' key, and reads no row of the
 * table beyond the few free jobs it returns (no scan of envelopes, no read of a leased job's document).
 * The rows are written with SQL, as in reconcile-reads.test.ts.
 */
const ROWS = 20_000;
const NOW = 1_000_000;
/** Jobs whose number ends in 01 (one in a hundred) are free: half without a lease, half expired. */
const FREE = (i: number) => i % 100 === 1 && i % 5 !== 0;

const insertEnvelopes = (table: string, series: string, json: string) => `
  INSERT INTO ${table} (id, tenant, idempotency_key, connector, target, remote_id, state, updated_at, version, doc)
  SELECT 'e' || i, 't', NULL, 'fake', 'fake', 'r' || i,
    CASE WHEN i % 5 = 0 THEN 'succeeded' ELSE 'running' END, i, 1,
    ('{"id":"e' || i || '","updatedAt":' || i || ',"createdAt":' || i || '}')${json}
  FROM ${series}`;

/** Live leases of two planes on all but the free jobs; the free ones: every other one expired, the rest none. */
const insertLeases = (table: string, series: string) => `
  INSERT INTO ${table} (name, owner, expires_at)
  SELECT 'watch:e' || i, CASE WHEN i % 2 = 0 THEN 'plane-a' ELSE 'plane-b' END,
    CASE WHEN i % 100 <> 1 THEN ${NOW + 30_000} ELSE ${NOW} END
  FROM ${series} WHERE i % 100 <> 1 OR i % 200 = 1`;

async function readAll(store: EnvelopeStore, limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await store.listUnwatchedEnvelopes({ now: NOW, limit, ...(cursor ? { cursor } : {}) });
    pages++;
    ids.push(...page.items.map((e: Envelope) => e.id));
    cursor = page.nextCursor;
  } while (cursor);
  return { ids, pages };
}

const expectedFree = () =>
  Array.from({ length: ROWS }, (_, k) => k + 1)
    .filter(FREE)
    .map((i) => `e${i}`);

describe('the adoption read with most open jobs leased', () => {
  it('SQLite walks the open-jobs index and the leases key, never the table', async () => {
    const { store, db } = await sqliteFileWithRawConnection('tp-unwatched-');
    const series = `(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${ROWS}) SELECT i FROM s)`;
    db.exec(insertEnvelopes('envelopes', series, ''));
    db.exec(insertLeases('leases', series));
    db.exec('ANALYZE');
    const plan = (
      db.prepare(`EXPLAIN QUERY PLAN ${unwatchedSql('sqlite')}`).all(0, '', NOW, 1001) as Array<{
        detail: string;
      }>
    )
      .map((p) => p.detail)
      .join(' | ');
    expect(plan).toMatch(/SEARCH e USING INDEX envelopes_open \(\(updated_at,id\)>/);
    expect(plan).toMatch(/SEARCH l USING INDEX sqlite_autoindex_leases_1 \(name=\?\)/);
    // The documents are read by id for the page's free jobs only.
    expect(plan).toMatch(/SEARCH e USING INDEX sqlite_autoindex_envelopes_1 \(id=\?\)/);
    expect(plan).not.toMatch(/SCAN (envelopes|e|l|leases)\b(?! USING)/);
    const { ids, pages } = await readAll(store, 50);
    expect(ids).toEqual(expectedFree());
    expect(pages).toBe(Math.ceil(ids.length / 50));
  }, 60_000);

  it('PostgreSQL walks the open-jobs index and the leases key, never the table', async () => {
    const schema = freshSchemaName('tp_unwatched');
    const store = await PostgresStore.open({ url: urlForSchema(schema), listen: false });
    onTestFinished(async ({ task }) => {
      await store.close();
      await disposeSchema(schema, task.result?.state === 'fail');
    });
    const plans = await withPgClient(async (pg) => {
      const series = `generate_series(1, ${ROWS}) AS i`;
      await pg.query(insertEnvelopes(`${schema}.envelopes`, series, '::jsonb'));
      await pg.query(insertLeases(`${schema}.leases`, series));
      await pg.query(`ANALYZE ${schema}.envelopes`);
      await pg.query(`ANALYZE ${schema}.leases`);
      await pg.query(`SET search_path TO ${schema}`);
      const out: string[] = [];
      for (const [sql, args] of [
        [unwatchedSql('pg'), [0, '', NOW, 1001]],
        [unwatchedSql('pg', true), [0, '', NOW, 1001, 'space']],
      ] as const) {
        const r = await pg.query(`EXPLAIN ${sql}`, [...args]);
        out.push(r.rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n'));
      }
      return out;
    });
    for (const plan of plans) {
      expect(plan).toMatch(/envelopes_open/);
      expect(plan).toMatch(/leases_pkey/);
      expect(plan).toMatch(/Index Scan using envelopes_pkey/);
      expect(plan).not.toMatch(/Seq Scan on (envelopes|leases)/);
    }
    const { ids } = await readAll(store, 50);
    expect(ids).toEqual(expectedFree());
  }, 60_000);
});
