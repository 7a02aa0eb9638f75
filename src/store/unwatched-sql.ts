import { OPEN_ENVELOPES_SQL as OPEN } from './store-query.ts';

/**
 * EnvelopeStore.listUnwatchedEnvelopes in SQL, for either backend: the open jobs in envelopes_open order
 * (updated_at, id) after the page's keyset, less those whose `watch:<id>` lease a live owner holds, found
 * by the leases' primary key. The inner query reads only what that index holds (id, updated_at), so a
 * leased job costs an index entry and a key probe, never a read of its row or document; only the page's
 * free jobs are joined back for their documents.
 *
 * Parameters, in this order: keyset time, keyset id, now, limit; on PostgreSQL with `deadOwners` also the
 * owners' lock space (PostgresStore.ownerLockSpace). `deadOwners`: a lease held by an owner whose
 * liveness lock can be taken (its process is gone, as deadLeaseOwners and acquireLeases tell it) is free
 * too. The try-lock is transaction-scoped, so released when the statement ends, and tried once per bound
 * owner, not once per lease.
 */
export function unwatchedSql(style: 'sqlite' | 'pg', deadOwners = false): string {
  const p = style === 'sqlite' ? (_: number) => '?' : (n: number) => `$${n}`;
  // An array computed once (an InitPlan), not a join: joined, PostgreSQL plans the anti-join as a hash
  // of every lease against a scan of every envelope.
  const alive =
    style === 'pg' && deadOwners
      ? ` AND l.owner <> ALL (ARRAY(SELECT owner FROM lease_owners
            WHERE pg_try_advisory_xact_lock(hashtext(${p(5)}), lock_key)))`
      : '';
  return `WITH free AS (
      SELECT id, updated_at FROM envelopes e
      WHERE ${OPEN} AND (updated_at, id) > (${p(1)}, ${p(2)})
        AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.name = 'watch:' || e.id AND l.expires_at > ${p(3)}${alive})
      ORDER BY updated_at, id LIMIT ${p(4)})
    ${
      style === 'sqlite'
        ? 'SELECT e.doc, e.version FROM free f JOIN envelopes e ON e.id = f.id ORDER BY f.updated_at, f.id'
        : // Joined, PostgreSQL may hash the whole table to fetch a page of 1,000 documents.
          'SELECT doc, version FROM envelopes WHERE id = ANY (ARRAY(SELECT id FROM free)) ORDER BY updated_at, id'
    }`;
}
