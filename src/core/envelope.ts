import type { NormalizedState } from './states.ts';

/**
 * The task control envelope: one durable record per tracked job (docs/a2a-notes.md, "The task
 * control envelope"). All times are epoch milliseconds. No secrets, tokens or credentials in it:
 * push tokens are kept as hashes, API keys never.
 */
export interface Envelope {
  /** Internal id, unguessable and sortable (`tsk_…`). */
  id: string;
  tenant: string;
  actor: string | null;
  /** The API key that created the job (its id, never its secret); null when created in-process. */
  keyId: string | null;
  workflowId: string | null;
  parentId: string | null;

  /** Connector kind: `a2a`, `mcp`, `openai`, `claude`. */
  connector: string;
  /** Configured target name (an agent, an MCP server, a provider account). */
  target: string;
  /** The remote system's id for the job, once known. */
  remoteId: string | null;
  /** A2A contextId / OpenAI conversation / Claude session, as the protocol has it. */
  contextId: string | null;
  /** The idempotent creation key we send (A2A messageId); fixed before the remote call. */
  messageId: string | null;

  requestKind: string;
  /** The request as sent, kept so a lost job can be resubmitted under the same key. */
  input: unknown;
  inputHash: string;
  idempotencyKey: string | null;
  createdAt: number;
  updatedAt: number;

  nativeState: string | null;
  state: NormalizedState;
  /** Remote ordering key of the last applied observation (see core/states.ts). */
  remoteVersion: number | null;
  /** When the remote state was last confirmed by any source. */
  lastConfirmedAt: number | null;
  /** Remote status timestamp of the current state, when the remote gives one. */
  stateTimestamp: number | null;

  streamCursor: string | null;
  lastEventId: string | null;
  /** Delivery ids of webhooks seen for this job (the durable dedup is the deliveries table). */
  webhookIds: string[];
  subscription: Subscription | null;

  pendingInput: PendingInput | null;
  approval: Record<string, unknown> | null;

  artifacts: ArtifactRef[];
  /** Output text or data the remote returned, small enough to keep inline. */
  result: unknown;
  /**
   * Text of the remote's latest status message (A2A `status.message`): once terminal, its final word.
   * Absent on envelopes written before it was kept.
   */
  statusMessage?: string | null;
  error: { code: string; message: string } | null;

  budget: Budget | null;
  usage: Record<string, number> | null;
  timeoutMs: number | null;
  ttlMs: number | null;
  retentionUntil: number | null;
  /** How long the job is expected to run; past it plus a margin it counts as an orphan. */
  expectedDurationMs: number | null;

  cancel: CancelRecord | null;
  reconciliation: ReconciliationRecord | null;

  /**
   * The last failed attempt to reach the remote for this job (a start or a cancel delivery), kept
   * until a later attempt succeeds. Absent on envelopes written before it existed.
   */
  lastError?: AttemptError | null;
  /** Start calls made for this job so far. */
  startAttempts?: number;
  /** When the next start attempt is due while the start is being retried; null otherwise. */
  nextRetryAt?: number | null;
  /**
   * A start request may have reached the remote (any attempt that failed after sending, or in doubt).
   * False while every attempt was refused before anything was sent: only then may the start deadline
   * fail the job as `start_unreachable`.
   */
  startMaybeSent?: boolean;
  acceptance: AcceptanceRecord | null;

  /** Row version for optimistic concurrency; every write bumps it. */
  version: number;
}

export interface Subscription {
  kind: 'push' | 'stream' | 'poll';
  /** Remote push config id, when registered. */
  configId?: string;
  /** SHA-256 of the single-purpose push token; the token itself is never stored. */
  tokenHash?: string;
  registeredAt?: number;
}

export interface PendingInput {
  requestId: string;
  prompt: string;
  schema?: Record<string, unknown>;
  deadlineAt?: number | null;
  askedAt: number;
  answeredAt?: number | null;
  /**
   * The answer as sent, kept with its fixed messageId so that an answer whose delivery is uncertain
   * (the plane crashed mid-call) is sent again with the same messageId and the agent deduplicates it.
   */
  answer?: { messageId: string; value: unknown } | null;
  /** What answering does on the remote, when it has several kinds (`tool_confirmation`, `budget`). */
  method?: string;
  /**
   * Every request the job waits on at once, each answered on its own key (a remote that asks several
   * things together: Claude's blocking tool events). The top-level fields then describe the first
   * unanswered one; `answeredAt` there is set only once all are answered. Absent for one request.
   */
  requests?: PendingRequest[];
}

/** One of several keyed requests pending at once. */
export type PendingInputRequest = PendingRequest;

/** One of several keyed requests pending at once. */
export interface PendingRequest {
  requestId: string;
  prompt: string;
  schema?: Record<string, unknown>;
  method?: string;
  askedAt: number;
  answeredAt?: number | null;
  answer?: { messageId: string; value: unknown } | null;
}

/**
 * The pending input with one request marked answered (or, with `answer` null, reopened). The
 * top-level fields follow the first request still unanswered.
 */
export function withAnswer(
  pending: PendingInput,
  requestId: string,
  at: number | null,
  answer: { messageId: string; value: unknown } | null,
): PendingInput {
  if (!pending.requests) return { ...pending, answeredAt: at, answer };
  const requests = pending.requests.map((r) =>
    r.requestId === requestId ? { ...r, answeredAt: at, answer } : r,
  );
  return summarise(pending, requests);
}

/** Top-level fields of a pending input from its requests (the first unanswered one leads). */
export function summarise(
  base: Pick<PendingInput, 'askedAt' | 'deadlineAt'>,
  requests: PendingRequest[],
): PendingInput {
  const open = requests.find((r) => !r.answeredAt);
  const lead = open ?? requests[requests.length - 1]!;
  const out: PendingInput = {
    requestId: lead.requestId,
    prompt: lead.prompt,
    askedAt: base.askedAt,
    deadlineAt: base.deadlineAt ?? null,
    answeredAt: open ? null : Math.max(...requests.map((r) => r.answeredAt ?? 0)),
    requests,
  };
  if (lead.schema) out.schema = lead.schema;
  if (lead.method) out.method = lead.method;
  return out;
}

export interface ArtifactRef {
  artifactId: string;
  name?: string;
  mediaType?: string;
  /** `sha256:<hex>` of the canonical artifact parts. */
  hash: string;
  /** Content size in bytes (see `contentBytes`). */
  size?: number;
  /**
   * The content itself, when it fitted the result caps (PlaneOptions `results`); absent above them, and
   * then read through from the remote while it still has the job.
   */
  parts?: ContentPart[];
  /** Where it came from: connector, remote id, source of the observation. */
  provenance: { source: ObservationSource; remoteId: string | null; at: number };
}

/**
 * One piece of output content, whatever the protocol: text, structured data, or a file given inline
 * (`bytes`, base64) or by `url`. A file's `size` is of its decoded bytes, when known.
 */
export type ContentPart =
  | { kind: 'text'; text: string; mediaType?: string }
  | { kind: 'data'; data: unknown; mediaType?: string }
  | { kind: 'file'; name?: string; mediaType?: string; size?: number; bytes?: string; url?: string };

const utf8 = new TextEncoder();

/** Decoded length of base64 text, without decoding it. */
function base64Bytes(b64: string): number {
  const clean = b64.replace(/[^A-Za-z0-9+/_-]/g, '');
  return Math.floor((clean.length * 3) / 4);
}

/**
 * Bytes of content a part holds: UTF-8 text, data as JSON, a file's decoded bytes (or its URL when it
 * is only referenced). What the result caps count.
 */
export function contentBytes(parts: ContentPart[]): number {
  let n = 0;
  for (const p of parts) {
    if (p.kind === 'text') n += utf8.encode(p.text).length;
    else if (p.kind === 'data') n += utf8.encode(JSON.stringify(p.data) ?? 'null').length;
    else if (p.bytes !== undefined) n += base64Bytes(p.bytes);
    else n += utf8.encode(p.url ?? '').length;
  }
  return n;
}

export interface Budget {
  /** Spend cap in the connector's unit (cents, tokens). */
  limit: number;
  unit: string;
}

export interface CancelRecord {
  requestedAt: number;
  requestedBy: string | null;
  acknowledgedAt: number | null;
  /** What the remote actually ended in, including `succeeded` when it finished despite the request. */
  outcome: NormalizedState | null;
  /**
   * What the cancel still waits for: `remote_id` (the start has not answered, CancelTask is sent as
   * soon as it does), `delivery` (CancelTask not acknowledged yet; retried by recovery and
   * reconciliation), `outcome` (acknowledged, the final state not seen yet); null once settled.
   */
  pending?: 'remote_id' | 'delivery' | 'outcome' | null;
  /** CancelTask calls made so far. */
  attempts?: number;
}

export interface AttemptError {
  code: string;
  message: string;
  at: number;
  /** What was being attempted. */
  during: 'start' | 'cancel';
}

export interface ReconciliationRecord {
  result: 'ok' | 'lost' | 'resubmitted' | 'escalated';
  at: number;
  attempts: number;
  note?: string;
}

export interface AcceptanceRecord {
  status: 'pending' | 'accepted' | 'rejected';
  reasons: string[];
  schema?: Record<string, unknown>;
  /** Artifact id (or name) → the `sha256:<hex>` it must hash to. */
  artifactHashes?: Record<string, string>;
  /** A receipt the output must carry: the JSON Pointer (RFC 6901) of its id in the output. */
  receipt?: { pointer: string };
  /** The receipt id found, once the receipt check passed. */
  receiptId?: string;
  /** The checks run, in order, each with its verdict and reasons; a person's decision is the last. */
  checks?: AcceptanceCheck[];
  /** Who decided, when a person did (the API key id, and the actor they gave). */
  decidedBy?: { keyId: string | null; actor: string | null };
  decidedAt?: number | null;
}

export interface AcceptanceCheck {
  check: 'schema' | 'artifact_hash' | 'receipt' | 'person';
  verdict: 'passed' | 'failed';
  reasons: string[];
}

export type ObservationSource = 'create' | 'stream' | 'push' | 'poll' | 'reconcile' | 'api' | 'local';

/**
 * Every type the event log holds: the SSE event names, the OpenAPI `Event.type` enum and the list the
 * dashboard subscribes to all come from here, so a new type cannot be written without them seeing it.
 */
export const ENVELOPE_EVENT_TYPES = [
  'created',
  'bound',
  'state_changed',
  'status_message',
  'artifact',
  'acceptance',
  'input_requested',
  'input_answered',
  'input_answer_failed',
  'cancel_requested',
  'cancel_acknowledged',
  'cancel_outcome',
  'lost',
  'resubmitted',
  'budget_refused',
  'card_changed',
  'actor_revoked',
] as const;

export type EnvelopeEventType = (typeof ENVELOPE_EVENT_TYPES)[number];

/** One entry of the append-only event log; `seq` is global and monotonic (SSE `Last-Event-ID`). */
export interface EnvelopeEvent {
  seq: number;
  envelopeId: string;
  tenant: string;
  type: EnvelopeEventType;
  at: number;
  data: Record<string, unknown>;
}

export type NewEnvelopeEvent = Omit<EnvelopeEvent, 'seq'>;

/** What a caller must say about a new job; everything else starts empty. */
export type NewEnvelopeFields = Pick<
  Envelope,
  'id' | 'tenant' | 'connector' | 'target' | 'requestKind' | 'input' | 'inputHash' | 'createdAt'
> &
  Partial<Envelope>;

/** A fresh envelope in state `accepted` at version 1: the one place that lists every field's start value. */
export function newEnvelope(fields: NewEnvelopeFields): Envelope {
  return {
    actor: null,
    keyId: null,
    workflowId: null,
    parentId: null,
    remoteId: null,
    contextId: null,
    messageId: null,
    idempotencyKey: null,
    updatedAt: fields.createdAt,
    nativeState: null,
    state: 'accepted',
    remoteVersion: null,
    lastConfirmedAt: null,
    stateTimestamp: null,
    streamCursor: null,
    lastEventId: null,
    webhookIds: [],
    subscription: null,
    pendingInput: null,
    approval: null,
    artifacts: [],
    result: null,
    statusMessage: null,
    error: null,
    budget: null,
    usage: null,
    timeoutMs: null,
    ttlMs: null,
    retentionUntil: null,
    expectedDurationMs: null,
    cancel: null,
    reconciliation: null,
    lastError: null,
    startAttempts: 0,
    nextRetryAt: null,
    startMaybeSent: false,
    acceptance: null,
    version: 1,
    ...fields,
  };
}
