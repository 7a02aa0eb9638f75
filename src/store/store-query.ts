import { invalidArgument } from '../core/errors.ts';
import type { AgentScope, AgentTaskQuery } from './store.ts';

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

/** True when (at, id) comes after the keyset in the given order. */
export function afterKeyset(at: number, id: string, keyset: Keyset, order: 'asc' | 'desc'): boolean {
  if (order === 'desc') return at < keyset.at || (at === keyset.at && id < keyset.id);
  return at > keyset.at || (at === keyset.at && id > keyset.id);
}

/**
 * Whether ListTasks' totalSize can be read from agent_task_counts (kept per scope and state by triggers,
 * SQL migration 6) instead of counted: filters by scope and state only. A contextId or
 * statusTimestampAfter filter still counts the matching rows (a conversation is small; a time range is
 * counted on the scope index).
 */
export function countsCover(query: AgentTaskQuery): boolean {
  return query.contextId === undefined && query.statusTimestampAfter === undefined;
}
