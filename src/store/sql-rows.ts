import type { Envelope, EnvelopeEvent, EnvelopeEventType } from '../core/envelope.ts';
import type {
  AgentTaskEvent,
  ApiKeyRecord,
  AgentTaskRecord,
  NewAgentTaskEvent,
  NewOutboxRow,
  OutboxRow,
  OutboxStatus,
  PushConfigRecord,
} from './store.ts';

/**
 * Row shapes of the SQL backends and their mapping to the port's records. SQLite hands JSON back as text,
 * PostgreSQL (jsonb) as parsed values; `json` accepts both so one mapping serves both backends.
 */

type Json = string | Record<string, unknown>;

function json<T>(value: Json): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

export interface EnvelopeRow {
  doc: Json;
  version: number;
}

export interface EventRow {
  seq: number;
  envelope_id: string;
  tenant: string;
  type: string;
  at: number;
  data: Json;
}

export interface AgentTaskRow {
  id: string;
  owner: string;
  tenant: string;
  context_id: string;
  state: string;
  status_timestamp: number;
  created_at: number;
  updated_at: number;
  version: number;
  task: Json;
  executor_state: Json | null;
}

export interface TaskEventRow {
  seq: number;
  task_id: string;
  at: number;
  payload: Json;
}

export interface PushConfigRow {
  task_id: string;
  id: string;
  owner: string;
  tenant: string;
  url: string;
  token: string | null;
  authentication: Json | null;
  created_at: number;
  protocol_version: string;
}

export interface OutboxDbRow {
  id: number;
  task_id: string;
  config_id: string;
  delivery_id: string;
  payload: Json;
  status: string;
  attempts: number;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  last_error: string | null;
  created_at: number;
  delivered_at: number | null;
}

/**
 * The envelope's indexed columns then its JSON document, in the order both SQL backends' INSERT and
 * UPDATE statements list them (tenant, idempotency_key, connector, target, remote_id, state,
 * updated_at, version, retention_until, doc).
 */
export function envelopeColumns(e: Envelope): unknown[] {
  return [
    e.tenant,
    e.idempotencyKey,
    e.connector,
    e.target,
    e.remoteId,
    e.state,
    e.updatedAt,
    e.version,
    e.retentionUntil ?? null,
    envelopeDoc(e),
  ];
}

/**
 * PostgreSQL's jsonb cannot hold U+0000, and an envelope carries text from outside (input, artifact
 * content, status and error messages) that may. A document that has one is stored with its strings
 * escaped, losslessly, and marked: U+0000 → ESC '0', ESC → ESC ESC, ESC being U+E000 (private use).
 * Documents without one, nearly all, are stored as they are. Both SQL backends share the encoding, so
 * a database moves between them unchanged.
 */
const NUL_MARK = '\uE000nul';
const ESC = '\uE000';

function mapStrings(value: unknown, f: (s: string) => string): unknown {
  if (typeof value === 'string') return f(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, f));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[f(k)] = mapStrings(v, f);
    return out;
  }
  return value;
}

const escapeNul = (s: string) =>
  s.replace(/[\u0000\uE000]/g, (c) => (c === '\u0000' ? `${ESC}0` : ESC + ESC));
const unescapeNul = (s: string) =>
  s.replace(/\uE000([0\uE000])/g, (_, c: string) => (c === '0' ? '\u0000' : ESC));

/** The envelope as JSON text for the `doc` column. */
export function envelopeDoc(e: Envelope): string {
  const text = JSON.stringify(e);
  // JSON.stringify writes U+0000 as the escape `\u0000`; a false positive (a literal backslash-u0000)
  // only costs an encoding that decodes back to the same document.
  if (!text.includes('\\u0000')) return text;
  return JSON.stringify({ ...(mapStrings(e, escapeNul) as object), [NUL_MARK]: 1 });
}

function fromDoc(doc: Record<string, unknown>): Envelope {
  if (!(NUL_MARK in doc)) return doc as unknown as Envelope;
  const { [NUL_MARK]: _mark, ...rest } = doc;
  return mapStrings(rest, unescapeNul) as Envelope;
}

/**
 * An agent task's columns in the order both SQL backends' INSERT lists them and UPDATE sets them after the
 * scope (owner, tenant, context_id, state, status_timestamp, created_at, updated_at, version, task,
 * executor_state), its documents as JSON text: the copy taken at the call.
 */
export function agentTaskColumns(
  t: AgentTaskRecord,
  version = t.version,
): [string, string, string, string, number, number, number, number, string, string | null] {
  return [
    t.owner,
    t.tenant,
    t.contextId,
    t.state,
    t.statusTimestamp,
    t.createdAt,
    t.updatedAt,
    version,
    JSON.stringify(t.task),
    jsonOrNull(t.executorState),
  ];
}

/** An agent-task event's columns after seq (task_id, at, payload), its payload as JSON text. */
export type TaskEventColumns = [taskId: string, at: number, payload: string];

export function taskEventColumns(e: NewAgentTaskEvent): TaskEventColumns {
  return [e.taskId, e.at, JSON.stringify(e.payload)];
}

/** The outbox columns a new row sets (status, attempts and created_at aside), its payload as JSON text. */
export type OutboxColumns = [
  taskId: string,
  configId: string,
  deliveryId: string,
  payload: string,
  nextAttemptAt: number,
];

export function outboxColumns(r: NewOutboxRow): OutboxColumns {
  return [r.taskId, r.configId, r.deliveryId, JSON.stringify(r.payload), r.nextAttemptAt];
}

export function jsonOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

export function toEnvelope(row: EnvelopeRow): Envelope {
  // The version column is authoritative: it is what the CAS UPDATE checks.
  return { ...fromDoc(json<Record<string, unknown>>(row.doc)), version: row.version };
}

export function toEvent(row: EventRow): EnvelopeEvent {
  return {
    seq: row.seq,
    envelopeId: row.envelope_id,
    tenant: row.tenant,
    type: row.type as EnvelopeEventType,
    at: row.at,
    data: json<Record<string, unknown>>(row.data),
  };
}

export function toAgentTask(row: AgentTaskRow): AgentTaskRecord {
  return {
    id: row.id,
    owner: row.owner,
    tenant: row.tenant,
    contextId: row.context_id,
    state: row.state,
    statusTimestamp: row.status_timestamp,
    task: json<Record<string, unknown>>(row.task),
    executorState: row.executor_state === null ? null : json<Record<string, unknown>>(row.executor_state),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    version: row.version,
  };
}

export function toTaskEvent(row: TaskEventRow): AgentTaskEvent {
  return {
    seq: row.seq,
    taskId: row.task_id,
    at: row.at,
    payload: json<Record<string, unknown>>(row.payload),
  };
}

export function toPushConfig(row: PushConfigRow): PushConfigRecord {
  return {
    id: row.id,
    taskId: row.task_id,
    owner: row.owner,
    tenant: row.tenant,
    url: row.url,
    token: row.token,
    authentication:
      row.authentication === null ? null : json<PushConfigRecord['authentication']>(row.authentication),
    createdAt: row.created_at,
    ...(row.protocol_version && row.protocol_version !== '1.0'
      ? { protocolVersion: row.protocol_version }
      : {}),
  };
}

export function toOutbox(row: OutboxDbRow): OutboxRow {
  return {
    id: row.id,
    taskId: row.task_id,
    configId: row.config_id,
    deliveryId: row.delivery_id,
    payload: json<Record<string, unknown>>(row.payload),
    status: row.status as OutboxStatus,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    lastError: row.last_error,
    createdAt: row.created_at,
    deliveredAt: row.delivered_at,
  };
}

export interface ApiKeyRow {
  id: string;
  tenant: string;
  hash: string;
  read_only: number | boolean;
  name: string | null;
  created_at: number;
  revoked_at: number | null;
}

export function toApiKey(row: ApiKeyRow): ApiKeyRecord {
  return {
    id: row.id,
    tenant: row.tenant,
    hash: row.hash,
    readOnly: row.read_only === true || row.read_only === 1,
    name: row.name,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  };
}
