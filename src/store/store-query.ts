import type { Envelope } from '../core/envelope.ts';
import { invalidArgument } from '../core/errors.ts';
import { isTerminal } from '../core/states.ts';
import type { AgentScope, AgentTaskQuery, OpenJobsOfTarget, ReconcileDueQuery } from './store.ts';

/**
 * Query rules every backend shares, kept in one pure module (no node: imports: the memory store runs in
 * a browser) so paging, limits and "active" mean the same thing on memory, SQLite and PostgreSQL.
 */

/** A2A 1.0 task states after which a task never changes (spec: completed, canceled, failed, rejected). */
export const TERMINAL_AGENT_TASK_STATES: readonly string[] = [
  'TASK_STATE_COMPLETED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_FAILED',
  'TASK_STATE_REJECTED',
];

/**
 * TERMINAL_AGENT_TASK_STATES as an SQL list, word for word the predicate of the `agent_tasks_finished`
 * partial index (migration 9): SQLite uses a partial index only for a query that repeats its terms.
 */
export const TERMINAL_AGENT_TASK_STATES_SQL = `(${TERMINAL_AGENT_TASK_STATES.map((s) => `'${s}'`).join(', ')})`;

export function isTerminalAgentTaskState(state: string): boolean {
  return TERMINAL_AGENT_TASK_STATES.includes(state);
}

/** True when `record` belongs to `scope`: owner and tenant each equal, compared as separate values. */
export function inScope(record: AgentScope, scope: AgentScope): boolean {
  return record.owner === scope.owner && record.tenant === scope.tenant;
}

/** EnvelopeQuery.limit: default 50, at most 500 (documented on the port). */
export function envelopeLimit(limit: number | undefined): number {
  return clampLimit(limit, 50, 500, 'limit');
}

/** UnwatchedQuery.limit: default 500, at most 1000 (a page of the adoption round, one acquireLeases call). */
export function unwatchedLimit(limit: number | undefined): number {
  return clampLimit(limit, 500, 1000, 'limit');
}

/** EventQuery.limit: default 500; 5000 caps one read so a replay from seq 0 is paged, not one giant array. */
export function eventLimit(limit: number | undefined): number {
  return clampLimit(limit, 500, 5000, 'limit');
}

/** AgentTaskQuery.pageSize: default 50; A2A ListTasks allows at most 100, we tolerate up to 1000. */
export function agentTaskPageSize(pageSize: number | undefined): number {
  return clampLimit(pageSize, 50, 1000, 'pageSize');
}

/** listOutbox limit: default 100, at most 1000. */
export function outboxLimit(limit: number | undefined): number {
  return clampLimit(limit, 100, 1000, 'limit');
}

function clampLimit(value: number | undefined, fallback: number, max: number, field: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) throw invalidArgument(field, 'must be a positive integer');
  return Math.min(value, max);
}

/** A keyset position: the sort time and the id of the last row of the previous page. */
export interface Keyset {
  at: number;
  id: string;
}

/**
 * The lease a plane holds while it watches a job (plane/watch-leases.ts); the stores read it to list the
 * jobs nobody watches and purge it with its envelope.
 */
export function watchLeaseName(envelopeId: string): string {
  return `watch:${envelopeId}`;
}

/** Before every row: the keyset of a first page (ids are never empty, times are past this). */
export const START_KEYSET: Keyset = { at: Number.MIN_SAFE_INTEGER, id: '' };

/**
 * Cursors are opaque to callers but plain inside: `<time>.<id>`. Keyset paging (not offsets) so a page
 * stays stable while rows are inserted or updated ahead of it.
 */
export function encodeCursor(at: number, id: string): string {
  return `${at}.${id}`;
}

export function decodeCursor(cursor: string | undefined, field = 'cursor'): Keyset | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  const match = /^(-?\d+)\.(.+)$/.exec(cursor);
  if (!match) throw invalidArgument(field, 'is not a cursor this server issued');
  return { at: Number(match[1]), id: match[2]! };
}

/**
 * A page of up to `limit` rows out of `found`, read with a LIMIT of limit + 1: the extra row says that
 * more follow, and the cursor continues after the page's last row (updatedAt, id).
 */
export function keysetPage<T extends { updatedAt: number; id: string }>(
  found: readonly T[],
  limit: number,
): { items: T[]; nextCursor?: string } {
  const items = found.slice(0, limit);
  const last = items[items.length - 1];
  return found.length > limit && last
    ? { items, nextCursor: encodeCursor(last.updatedAt, last.id) }
    : { items };
}

/** True when (at, id) comes after the keyset in the given order. */
export function afterKeyset(at: number, id: string, keyset: Keyset, order: 'asc' | 'desc'): boolean {
  if (order === 'desc') return at < keyset.at || (at === keyset.at && id < keyset.id);
  return at > keyset.at || (at === keyset.at && id > keyset.id);
}

/**
 * The open (non-terminal) envelope states, written out: the predicate of the partial index
 * envelopes_open (SQL migration 8) and, word for word, of every listing of open jobs (SQLite uses a
 * partial index only for a query whose WHERE holds the index's own terms; PostgreSQL must be able to
 * prove the predicate, which a bound array parameter does not let it). With it a lease round, an
 * adoption pass or a reconciliation pass reads the open jobs alone, however many finished ones are
 * stored. test/store/open-envelopes.test.ts checks it against core/states.ts.
 */
export const OPEN_ENVELOPES_SQL =
  "state IN ('accepted', 'running', 'waiting_for_input', 'cancel_requested', 'unknown')";
const OPEN_STATES = ['accepted', 'running', 'waiting_for_input', 'cancel_requested', 'unknown'];

/**
 * The earliest time an open envelope may need a reconciliation round, from its own fields alone, before
 * the round's configured margins (plane/reconciler.ts `reconcileJob` applies those and decides): its
 * creation when its start is unconfirmed (no remote id), when its cancel is not acknowledged or when an
 * answer to it is recorded; its creation plus its timeout (unless a cancel is already requested) or plus
 * its expected duration (once started). Null when none applies: a started job quietly within its
 * deadlines, which only the list (or the default expected duration, below) concerns. The SQL backends
 * keep it as the generated column `reconcile_due_at` (migration 12), the memory store calls this.
 */
export function reconcileDueAt(env: Envelope): number | null {
  if (isTerminal(env.state)) return null;
  const at: number[] = [];
  const created = env.createdAt;
  if (env.remoteId === null) at.push(created);
  if (env.timeoutMs !== null && env.state !== 'cancel_requested') at.push(created + env.timeoutMs);
  if (
    env.state === 'cancel_requested' &&
    env.remoteId !== null &&
    env.cancel &&
    env.cancel.acknowledgedAt === null
  )
    at.push(created);
  if (env.state === 'waiting_for_input' && answerRecorded(env)) at.push(created);
  if (env.remoteId !== null && env.expectedDurationMs !== null) at.push(created + env.expectedDurationMs);
  return at.length ? Math.min(...at) : null;
}

/** An answer recorded on the pending input or on one of its requests (an answer maybe in doubt). */
function answerRecorded(env: Envelope): boolean {
  const p = env.pendingInput;
  return !!p && [p, ...(p.requests ?? [])].some((r) => typeof r.answeredAt === 'number');
}

/**
 * Whether listReconcileDue returns an envelope: open, and its own deadline has come, or it is a started
 * job with no expected duration created before the default orphan margin. The same rule on every backend.
 */
export function isReconcileDue(env: Envelope, query: ReconcileDueQuery): boolean {
  if (isTerminal(env.state)) return false;
  const due = reconcileDueAt(env);
  if (due !== null && due <= query.now) return true;
  return (
    env.remoteId !== null &&
    env.expectedDurationMs === null &&
    env.createdAt <= query.defaultOrphanCreatedBefore
  );
}

/** openJobsOfTarget's answer from rows of (tenant, its oldest open job's createdAt). */
export function openJobsSummary(found: Array<{ tenant: string; oldest: number | null }>): OpenJobsOfTarget {
  const times = found.flatMap((r) => (r.oldest === null ? [] : [Number(r.oldest)]));
  return {
    tenants: found.map((r) => r.tenant),
    oldestCreatedAt: times.length ? Math.min(...times) : null,
  };
}

/** findOpenEnvelopesByRemote: at most this many ids of each kind per call (a list page's worth). */
export const REMOTE_LOOKUP_LIMIT = 500;

export function checkRemoteLookup(remoteIds: readonly string[], contextIds: readonly string[]): void {
  if (remoteIds.length > REMOTE_LOOKUP_LIMIT)
    throw invalidArgument('remoteIds', `at most ${REMOTE_LOOKUP_LIMIT} per call`);
  if (contextIds.length > REMOTE_LOOKUP_LIMIT)
    throw invalidArgument('contextIds', `at most ${REMOTE_LOOKUP_LIMIT} per call`);
}

/** Whether `states` is exactly the open set (so OPEN_ENVELOPES_SQL may stand for it). */
export function isOpenStateSet(states: readonly string[]): boolean {
  const set = new Set(states);
  return set.size === OPEN_STATES.length && OPEN_STATES.every((s) => set.has(s));
}

/**
 * Whether ListTasks' totalSize can be read from agent_task_counts (kept per scope and state by triggers,
 * SQL migration 6) instead of counted: filters by scope and state only.
 */
export function countsCover(query: AgentTaskQuery): boolean {
  return query.contextId === undefined && query.statusTimestampAfter === undefined;
}

/**
 * ListTasks counts matching rows exactly up to this many; past it, totalSize is an estimate
 * (docs/host.md, "ListTasks"), so a page never costs more than this many index entries whatever is
 * stored.
 */
export const EXACT_COUNT_LIMIT = 10_000;

/** The reads countListed needs; each SQL store answers them from its indexes. */
export interface ListCountReads {
  /** agent_task_counts for the query's scope and state (ignoring contextId and time). */
  scopeTotal(): Promise<number>;
  /**
   * The newest `limit` matching rows, counted: how many (≤ limit) and the oldest and newest
   * status_timestamp among them.
   */
  head(limit: number): Promise<{ n: number; oldestAt: number | null; newestAt: number | null }>;
  /** Rows of the scope and state older than statusTimestampAfter, counted up to `limit`. */
  olderThanAfter(limit: number): Promise<number>;
  /** The oldest status_timestamp in the scope (and context, when filtered): one index probe. */
  oldestInScope(): Promise<number | null>;
}

/**
 * ListTasks' totalSize at a cost bounded by EXACT_COUNT_LIMIT index entries:
 * - scope and state only: the incremental counts (O(1));
 * - otherwise the matching rows are counted up to the limit, exact below it;
 * - a time filter alone: past the limit, the rows it leaves out are counted instead (exact when
 *   those are fewer: total minus them);
 * - past both, an estimate: the matching rows are taken to be spread over their time range as the
 *   newest `limit` of them are, capped by the scope's count for the state.
 */
export async function countListed(
  query: AgentTaskQuery,
  reads: ListCountReads,
  limit = EXACT_COUNT_LIMIT,
): Promise<{ total: number; exact: boolean }> {
  if (countsCover(query)) return { total: await reads.scopeTotal(), exact: true };
  const head = await reads.head(limit);
  if (head.n < limit) return { total: head.n, exact: true };
  const total = await reads.scopeTotal();
  if (query.contextId === undefined && query.statusTimestampAfter !== undefined) {
    const older = await reads.olderThanAfter(limit);
    if (older < limit) return { total: total - older, exact: true };
  }
  const oldest = await reads.oldestInScope();
  const newestAt = head.newestAt ?? 0;
  const headSpan = Math.max(1, newestAt - (head.oldestAt ?? newestAt));
  const lower = Math.max(query.statusTimestampAfter ?? -Infinity, oldest ?? newestAt);
  const estimate = Math.round((limit * Math.max(headSpan, newestAt - lower)) / headSpan);
  return { total: Math.max(limit, Math.min(total, estimate)), exact: false };
}
