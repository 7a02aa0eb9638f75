import { describe, expect, it, onTestFinished } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { reconcileSql } from '../../src/store/reconcile-sql.ts';
import { sqliteFileWithRawConnection } from './sqlite-file.ts';
import { disposeSchema, freshSchemaName, urlForSchema, withPgClient } from '../support/pg.ts';

/**
 * A reconciliation round's reads (reconcile-sql.ts) each stay on an index, with many quiet open jobs
 * stored (running, started, within an expected duration that has not passed) and many finished ones:
 * no statement reads the table or walks every open job. The rows are written with SQL (the point is
 * what is stored, and the generated columns computed from it).
 */
const ROWS = 20_000;
const NOW = 1_000_000;

/** Quiet jobs over two targets and three tenants; every fifth one finished. */
const insertSql = (table: string, series: string, json: string) => `
  INSERT INTO ${table} (id, tenant, idempotency_key, connector, target, remote_id, state, updated_at, version, doc)
  SELECT 'e' || i, 't' || (i % 3), NULL, 'fake', 'fake' || (i % 2), 'r' || i,
    CASE WHEN i % 5 = 0 THEN 'succeeded' ELSE 'running' END, i, 1,
    ('{"id":"e' || i || '","createdAt":' || (${NOW} - i) || ',"expectedDurationMs":100000000,"timeoutMs":null}')${json}
  FROM ${series}`;

const EXPECTED: Record<keyof ReturnType<typeof reconcileSql>, RegExp[]> = {
  openTargets: [/envelopes_open_target/],
  openJobsOfTarget: [/envelopes_open_target/],
  byRemote: [/envelopes_remote/],
  byContext: [/envelopes_unstarted/],
  due: [/envelopes_reconcile_due/, /envelopes_default_duration/],
};

describe('reconciliation reads', () => {
  it('SQLite answers each from its index', async () => {
    const { store, db } = await sqliteFileWithRawConnection('tp-reconcile-');
    db.exec(
      insertSql(
        'envelopes',
        `(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${ROWS}) SELECT i FROM s)`,
        '',
      ),
    );
    db.exec('ANALYZE');
    const params = { target: 'fake1', ids: JSON.stringify(['r1', 'r3']), now: NOW, before: NOW - 900_000 };
    for (const [name, sql] of Object.entries(reconcileSql('sqlite'))) {
      const used = Object.keys(params).filter((k) => sql.includes(`@${k}`));
      const plan = (
        db
          .prepare(`EXPLAIN QUERY PLAN ${sql}`)
          .all(Object.fromEntries(used.map((k) => [k, params[k as keyof typeof params]]))) as Array<{
          detail: string;
        }>
      )
        .map((p) => p.detail)
        .join(' | ');
      for (const index of EXPECTED[name as keyof typeof EXPECTED]) expect(plan, name).toMatch(index);
      // A read of the table is a SCAN without an index (an ordered index scan stops at its LIMIT 1).
      expect(plan, name).not.toMatch(/SCAN (envelopes|e)\b(?! USING)/);
    }
    // And the answers: nothing here is due, both targets have open jobs of all three tenants.
    expect((await store.openTargets()).sort()).toEqual(['fake0', 'fake1']);
    expect(await store.openJobsOfTarget('fake1')).toMatchObject({ oldestCreatedAt: NOW - (ROWS - 1) });
    expect(
      await store.listReconcileDue('fake1', { now: NOW, defaultOrphanCreatedBefore: NOW - 900_000 }),
    ).toEqual([]);
    expect((await store.findOpenEnvelopesByRemote('fake1', ['r1', 'r3', 'r5'], [])).length).toBe(2);
  }, 60_000);

  it('PostgreSQL answers each from its index', async () => {
    const schema = freshSchemaName('tp_reconcile');
    const store = await PostgresStore.open({ url: urlForSchema(schema), listen: false });
    onTestFinished(async ({ task }) => {
      await store.close();
      await disposeSchema(schema, task.result?.state === 'fail');
    });
    const args: Record<string, unknown[]> = {
      openTargets: [],
      openJobsOfTarget: ['fake1'],
      byRemote: ['fake1', ['r1', 'r3']],
      byContext: ['fake1', ['c1']],
      due: ['fake1', NOW, NOW - 900_000],
    };
    const plans = await withPgClient(async (pg) => {
      await pg.query(insertSql(`${schema}.envelopes`, `generate_series(1, ${ROWS}) AS i`, '::jsonb'));
      await pg.query(`ANALYZE ${schema}.envelopes`);
      await pg.query(`SET search_path TO ${schema}`);
      const out: Record<string, string> = {};
      for (const [name, sql] of Object.entries(reconcileSql('pg'))) {
        const r = await pg.query(`EXPLAIN ${sql}`, args[name]);
        out[name] = r.rows.map((row: Record<string, string>) => row['QUERY PLAN']).join('\n');
      }
      return out;
    });
    for (const [name, plan] of Object.entries(plans)) {
      for (const index of EXPECTED[name as keyof typeof EXPECTED]) expect(plan, name).toMatch(index);
      expect(plan, name).not.toMatch(/Seq Scan on envelopes/);
    }
    expect((await store.openTargets()).sort()).toEqual(['fake0', 'fake1']);
    expect(await store.openJobsOfTarget('fake1')).toMatchObject({ oldestCreatedAt: NOW - (ROWS - 1) });
    expect(
      await store.listReconcileDue('fake1', { now: NOW, defaultOrphanCreatedBefore: NOW - 900_000 }),
    ).toEqual([]);
  }, 60_000);
});
