import type Database from 'better-sqlite3';

/** What an op needs of a connection: cached prepared statements. */
export interface SqlConn {
  q(sql: string): Database.Statement;
}

/** A connection's statements, prepared once per text: the hot paths prepare once per store. */
export function statementCache(db: Database.Database): SqlConn {
  const statements = new Map<string, Database.Statement>();
  return {
    q(sql) {
      let statement = statements.get(sql);
      if (!statement) statements.set(sql, (statement = db.prepare(sql)));
      return statement;
    },
  };
}
