/**
 * A WHERE clause builder shared by the SQL backends: `$?` in a fragment becomes `?` (SQLite) or the next
 * `$n` (PostgreSQL), so filters are written once per query, never by string-pasting values.
 */
export interface WhereBuilder {
  add(fragment: string, ...values: unknown[]): void;
  /** `WHERE a AND b`, or '' when nothing was added. */
  sql(): string;
  params: unknown[];
}

export function where(style: 'sqlite' | 'pg'): WhereBuilder {
  const parts: string[] = [];
  const params: unknown[] = [];
  return {
    params,
    add(fragment, ...values) {
      let i = 0;
      parts.push(fragment.replace(/\$\?/g, () => (style === 'pg' ? `$${params.length + ++i}` : '?')));
      params.push(...values);
    },
    sql: () => (parts.length ? `WHERE ${parts.join(' AND ')}` : ''),
  };
}
