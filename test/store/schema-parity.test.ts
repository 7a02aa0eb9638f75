import Database from 'better-sqlite3';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openStore } from '../../src/store/open-store.ts';
import { disposeSchema, freshSchemaName, urlForSchema, withPgClient } from '../support/pg.ts';
import { tempDb } from './support/temp-db.ts';

/**
 * The two SQL backends are written by hand, migration by migration, in two dialects. Both must end at
 * the same tables, columns, nullability and index names, or a feature tested on one silently lacks a
 * column or an index on the other. Types are left out on purpose: INTEGER/BIGINT and TEXT/JSONB differ
 * by design.
 */
interface Shape {
  columns: string[];
  indexes: string[];
}

/** Tables that exist for one backend's own bookkeeping only. */
const BACKEND_ONLY = new Set(['sqlite_sequence']);

async function sqliteShape(): Promise<Shape> {
  const path = tempDb('taskplane-parity-');
  const store = await openStore(`sqlite:${path}`);
  await store.close();
  const db = new Database(path, { readonly: true });
  try {
    const tables = (
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]
    )
      .map((t) => t.name)
      .filter((t) => !BACKEND_ONLY.has(t));
    const columns: string[] = [];
    for (const table of tables) {
      // table_xinfo: generated columns too (table_info leaves them out).
      const info = db.prepare(`PRAGMA table_xinfo(${table})`).all() as {
        name: string;
        notnull: number;
        pk: number;
      }[];
      // SQLite reports a PRIMARY KEY column as nullable unless declared NOT NULL; PostgreSQL never does.
      for (const c of info) columns.push(`${table}.${c.name}${c.notnull || c.pk ? ' not null' : ''}`);
    }
    const indexes = (
      db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex%'")
        .all() as { name: string }[]
    ).map((i) => i.name);
    return { columns: columns.sort(), indexes: indexes.sort() };
  } finally {
    db.close();
  }
}

async function postgresShape(): Promise<Shape> {
  const schema = freshSchemaName('tp_parity');
  onTestFinished(({ task }) => disposeSchema(schema, task.result?.state === 'fail'));
  const store = await openStore(urlForSchema(schema));
  await store.close();
  return withPgClient(async (client) => {
    const cols = await client.query<{ table_name: string; column_name: string; is_nullable: string }>(
      `SELECT table_name, column_name, is_nullable FROM information_schema.columns WHERE table_schema = $1`,
      [schema],
    );
    const idx = await client.query<{ indexname: string }>(
      // Primary keys and UNIQUE columns get indexes named by the backend (SQLite's sqlite_autoindex_*,
      // left out above); only the indexes we create by name count.
      `SELECT i.indexname FROM pg_indexes i WHERE i.schemaname = $1 AND NOT EXISTS (
         SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname AND c.connamespace = $1::regnamespace)`,
      [schema],
    );
    return {
      columns: cols.rows
        .map((c) => `${c.table_name}.${c.column_name}${c.is_nullable === 'NO' ? ' not null' : ''}`)
        .sort(),
      indexes: idx.rows.map((i) => i.indexname).sort(),
    };
  });
}

describe('SQLite and PostgreSQL schemas', () => {
  it('end at the same tables, columns, nullability and named indexes', async () => {
    const [sqlite, postgres] = await Promise.all([sqliteShape(), postgresShape()]);
    expect(sqlite.columns).toEqual(postgres.columns);
    expect(sqlite.indexes).toEqual(postgres.indexes);
  });
});
