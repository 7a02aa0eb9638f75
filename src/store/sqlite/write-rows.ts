import type { Envelope, NewEnvelopeEvent } from '../../core/envelope.ts';
import * as rows from '../sql-rows.ts';
import type { AgentTaskRecord } from '../store.ts';

// Rows as the writes take them: JSON documents as text, taken at the call.
// Tuples in column order, not objects: they cross to the write worker as arrays of strings and numbers,
// which structured clone copies without building an object and its map per row.

/** agent_tasks columns, in the INSERT's order. */
export type TaskRow = [
  owner: string,
  tenant: string,
  contextId: string,
  state: string,
  statusTimestamp: number,
  createdAt: number,
  updatedAt: number,
  version: number,
  task: string,
  executorState: string | null,
  id: string,
];
export const OWNER = 0;
export const TENANT = 1;
export const UPDATED_AT = 6;
export const ID = 10;

export type EventRow = rows.TaskEventColumns;
export type OutboxInsert = rows.OutboxColumns;

/** envelopes columns, in the INSERT's order: rows.envelopeColumns, then id. */
export type EnvelopeRow = [
  tenant: string,
  idempotencyKey: string | null,
  connector: string,
  target: string,
  remoteId: string | null,
  state: string,
  updatedAt: number,
  version: number,
  retentionUntil: number | null,
  doc: string,
  id: string,
];
export const ENVELOPE_ID = 10;

/** envelope_events columns after seq. */
export type EnvelopeEventRow = [envelopeId: string, tenant: string, type: string, at: number, data: string];

export function serializeEnvelope(e: Envelope): EnvelopeRow {
  return [...rows.envelopeColumns(e), e.id] as EnvelopeRow;
}

export function serializeEnvelopeEvent(e: NewEnvelopeEvent): EnvelopeEventRow {
  return [e.envelopeId, e.tenant, e.type, e.at, JSON.stringify(e.data)];
}

export function serializeTask(t: AgentTaskRecord, version: number): TaskRow {
  return [...rows.agentTaskColumns(t, version), t.id];
}
