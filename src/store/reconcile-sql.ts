import { OPEN_ENVELOPES_SQL as OPEN } from './store-query.ts';

/**
 * The reconciliation reads (EnvelopeStore openTargets, openJobsOfTarget, findOpenEnvelopesByRemote,
 * listReconcileDue) in SQL, for either backend, each on an index of migration 12 or envelopes_remote:
 * - targets and tenants by a skip scan of envelopes_open_target (a recursive query that asks the index
 *   for the next value after the last one), so the cost is one probe per value, not per open job;
 * - a tenant's oldest open job is its first entry there;
 * - listed tasks by envelopes_remote (target, remote_id), unstarted jobs by envelopes_unstarted;
 * - due jobs by two ranges, envelopes_reconcile_due and envelopes_default_duration.
 * SQLite statements take named parameters (`@target`: a value used twice), PostgreSQL's positional ones
 * in the order of the names. The open-state predicate is written out as the indexes have it.
 */
export function reconcileSql(style: 'sqlite' | 'pg') {
  const param = (order: readonly string[]) => (name: string) =>
    style === 'sqlite' ? `@${name}` : `$${order.indexOf(name) + 1}`;
  const ids = (p: string) =>
    style === 'sqlite' ? `IN (SELECT value FROM json_each(${p}))` : `= ANY(${p}::text[])`;
  const t = param(['target']);
  const lookup = param(['target', 'ids']);
  const due = param(['target', 'now', 'before']);
  return {
    openTargets: `WITH RECURSIVE t(target) AS (
        SELECT (SELECT target FROM envelopes WHERE ${OPEN} ORDER BY target LIMIT 1)
        UNION ALL
        SELECT (SELECT e.target FROM envelopes e WHERE ${OPEN} AND e.target > t.target
                ORDER BY e.target LIMIT 1)
        FROM t WHERE t.target IS NOT NULL)
      SELECT target FROM t WHERE target IS NOT NULL`,
    /** (target) → rows of tenant and oldest. */
    openJobsOfTarget: `WITH RECURSIVE t(tenant) AS (
        SELECT (SELECT tenant FROM envelopes WHERE ${OPEN} AND target = ${t('target')} ORDER BY tenant LIMIT 1)
        UNION ALL
        SELECT (SELECT e.tenant FROM envelopes e WHERE ${OPEN} AND e.target = ${t('target')}
                AND e.tenant > t.tenant ORDER BY e.tenant LIMIT 1)
        FROM t WHERE t.tenant IS NOT NULL)
      SELECT tenant, (SELECT min(e.created_at) FROM envelopes e
                      WHERE ${OPEN} AND e.target = ${t('target')} AND e.tenant = t.tenant) AS oldest
      FROM t WHERE tenant IS NOT NULL`,
    /** (target, ids: remote ids) */
    byRemote: `SELECT doc, version FROM envelopes WHERE target = ${lookup('target')} AND remote_id IS NOT NULL
        AND remote_id ${ids(lookup('ids'))} AND ${OPEN}`,
    /** (target, ids: context ids) */
    byContext: `SELECT doc, version FROM envelopes WHERE target = ${lookup('target')} AND remote_id IS NULL
        AND ${OPEN} AND ${style === 'sqlite' ? "json_extract(doc, '$.contextId')" : "doc->>'contextId'"}
        ${ids(lookup('ids'))}`,
    /** (target, now, before): two index ranges (a job in both returned once), in updated order. */
    due: `SELECT doc, version FROM envelopes WHERE id IN (
        SELECT id FROM envelopes WHERE target = ${due('target')} AND reconcile_due_at IS NOT NULL
          AND reconcile_due_at <= ${due('now')}
        UNION
        SELECT id FROM envelopes WHERE target = ${due('target')} AND default_duration_from IS NOT NULL
          AND default_duration_from <= ${due('before')})
      ORDER BY updated_at, id`,
  };
}
