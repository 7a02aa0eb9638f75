import type { ContentPart } from '../../core/envelope.ts';
import type { NormalizedState } from '../../core/states.ts';
import type { RemoteArtifact, RemoteSnapshot } from '../connector.ts';

/**
 * An OpenAI Response object (or a stream event) → one normalized snapshot (docs/plane.md, "OpenAI
 * background responses"). The mapping follows the provider digest's table:
 *
 * | status        | normalized                                                        |
 * | ------------- | ----------------------------------------------------------------- |
 * | `queued`      | `accepted`                                                        |
 * | `in_progress` | `running`                                                         |
 * | `completed`   | `succeeded`                                                       |
 * | `failed`      | `failed` (error code and message kept)                            |
 * | `incomplete`  | `failed` with `incomplete:<reason>`, or `succeeded` when accepted |
 * | `cancelled`   | `cancelled`                                                       |
 * | anything else | `unknown` (never guessed)                                         |
 * | `queued` past the staleness limit (retrieve only) | `unknown`, reason `queued_stale` (staleQueued) |
 *
 * Ordering key: a response's status only moves forward (queued → in_progress → one terminal status),
 * so its rank is the version every source shares. Stream sequence numbers are the resume cursor, not
 * the version: a retrieve has no sequence number, and mixing the two keys would make one source's
 * answers look stale to the other's.
 */

/** What an incomplete response counts as: `failed` (default) or `succeeded` for callers that accept truncation. */
export type IncompletePolicy = 'failed' | 'succeeded';

/** Cost of tokens in one unit (e.g. `usd_micros`, `cents`), per million tokens. */
export interface PriceTable {
  unit: string;
  inputPerMillionTokens: number;
  outputPerMillionTokens: number;
  /** Cached input tokens; @default inputPerMillionTokens */
  cachedInputPerMillionTokens?: number;
}

export interface SnapshotOptions {
  incomplete: IncompletePolicy;
  prices: PriceTable | null;
}

/** The response fields read here (the SDK's `Response`, loosely: the wire may carry more or less). */
export interface WireResponse {
  id: string;
  status?: string | null;
  created_at?: number | null;
  completed_at?: number | null;
  error?: { code?: string | null; message?: string | null } | null;
  incomplete_details?: { reason?: string | null } | null;
  output?: unknown[] | null;
  usage?: WireUsage | null;
  metadata?: Record<string, string> | null;
}

export interface WireUsage {
  input_tokens?: number;
  output_tokens?: number;
  total_tokens?: number;
  input_tokens_details?: { cached_tokens?: number } | null;
  output_tokens_details?: { reasoning_tokens?: number } | null;
}

/** The metadata key carrying our envelope id on every response we create. */
export const CORRELATION_KEY = 'taskplane';
/** The metadata key carrying the contextId we chose (OpenAI has no conversation id of its own here). */
export const CONTEXT_KEY = 'taskplane_context';

const RANK: Record<string, number> = {
  queued: 1,
  in_progress: 3,
  completed: 4,
  failed: 4,
  incomplete: 4,
  cancelled: 4,
};
/**
 * A response judged stale in `queued` (staleQueued): after every `queued` report, so it replaces them and
 * a replayed `response.queued` event cannot undo it, and before `in_progress`, so a response that does
 * start after all is followed again. (in_progress was 2 before this rank existed: an envelope stored
 * then at 2 still outranks a stale judgement at the same number, because `unknown` ranks lowest.)
 */
const QUEUED_STALE_RANK = 2;

export const TERMINAL_STATUSES: ReadonlySet<string> = new Set([
  'completed',
  'failed',
  'incomplete',
  'cancelled',
]);

export function normalizeStatus(status: string, incomplete: IncompletePolicy): NormalizedState {
  switch (status) {
    case 'queued':
      return 'accepted';
    case 'in_progress':
      return 'running';
    case 'completed':
      return 'succeeded';
    case 'failed':
      return 'failed';
    case 'incomplete':
      return incomplete;
    case 'cancelled':
      return 'cancelled';
    default:
      return 'unknown';
  }
}

/** Tokens from `usage`, and the cost in the price table's unit (rounded up: a budget never under-counts). */
export function usageOf(
  usage: WireUsage | null | undefined,
  prices: PriceTable | null,
): Record<string, number> | null {
  if (!usage) return null;
  const input = num(usage.input_tokens);
  const output = num(usage.output_tokens);
  const cached = num(usage.input_tokens_details?.cached_tokens);
  const out: Record<string, number> = {
    input_tokens: input,
    output_tokens: output,
    total_tokens: usage.total_tokens !== undefined ? num(usage.total_tokens) : input + output,
    cached_tokens: cached,
    reasoning_tokens: num(usage.output_tokens_details?.reasoning_tokens),
  };
  if (prices) {
    const cachedPrice = prices.cachedInputPerMillionTokens ?? prices.inputPerMillionTokens;
    const cost =
      (Math.max(0, input - cached) * prices.inputPerMillionTokens +
        Math.min(cached, input) * cachedPrice +
        output * prices.outputPerMillionTokens) /
      1_000_000;
    out[prices.unit] = Math.ceil(cost - 1e-9);
  }
  return out;
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0;
}

/** The text of every `output_text` part of every message item, in order (what the SDK's `output_text` is). */
export function outputText(output: unknown[]): string {
  let text = '';
  for (const item of output) {
    const i = item as { type?: unknown; content?: unknown };
    if (i?.type !== 'message' || !Array.isArray(i.content)) continue;
    for (const part of i.content as Array<{ type?: unknown; text?: unknown }>)
      if (part?.type === 'output_text' && typeof part.text === 'string') text += part.text;
  }
  return text;
}

/** The output as two artifacts: the text (what most callers read) and the items as the API gave them. */
export function outputArtifacts(output: unknown[] | null | undefined): RemoteArtifact[] | undefined {
  if (!output || output.length === 0) return undefined;
  const text = outputText(output);
  const textParts: ContentPart[] = [{ kind: 'text', text, mediaType: 'text/plain' }];
  const itemParts: ContentPart[] = [{ kind: 'data', data: output, mediaType: 'application/json' }];
  return [
    {
      artifactId: 'output_text',
      name: 'output_text',
      mediaType: 'text/plain',
      content: text,
      parts: textParts,
    },
    {
      artifactId: 'output',
      name: 'output',
      mediaType: 'application/json',
      content: output,
      parts: itemParts,
    },
  ];
}

/** One Response object → a snapshot. */
export function responseSnapshot(r: WireResponse, o: SnapshotOptions, cursor?: number): RemoteSnapshot {
  const status = typeof r.status === 'string' ? r.status : 'unknown';
  const state = normalizeStatus(status, o.incomplete);
  const snap: RemoteSnapshot = {
    remoteId: r.id,
    contextId: typeof r.metadata?.[CONTEXT_KEY] === 'string' ? r.metadata[CONTEXT_KEY] : null,
    state,
    nativeState: status === 'incomplete' ? `incomplete:${r.incomplete_details?.reason ?? 'unknown'}` : status,
    remoteVersion: RANK[status] ?? null,
    stateTimestamp:
      status === 'completed' && typeof r.completed_at === 'number'
        ? r.completed_at * 1000
        : status === 'queued' && typeof r.created_at === 'number'
          ? r.created_at * 1000
          : null,
  };
  if (cursor !== undefined) snap.cursor = String(cursor);
  const correlation = r.metadata?.[CORRELATION_KEY];
  if (typeof correlation === 'string') snap.correlationId = correlation;
  if (status === 'failed')
    snap.error = {
      code: r.error?.code ?? 'failed',
      message: (r.error?.message ?? 'the response failed').slice(0, 1000),
    };
  if (status === 'incomplete') {
    const reason = `incomplete:${r.incomplete_details?.reason ?? 'unknown'}`;
    snap.statusMessage = reason;
    if (state === 'failed') snap.error = { code: reason, message: 'the response ended incomplete' };
  }
  if (state === 'unknown') snap.statusMessage = `unrecognised response status '${status.slice(0, 64)}'`;
  // A live response has no message: one left by an earlier judgement (staleQueued) no longer holds.
  if (status === 'queued' || status === 'in_progress') snap.statusMessage = null;
  const usage = usageOf(r.usage, o.prices);
  if (usage) snap.usage = usage;
  const artifacts = outputArtifacts(r.output);
  if (artifacts) snap.artifacts = artifacts;
  return snap;
}

/**
 * The staleness rule for `queued` (provider digest: a background+stream+store response whose stream was
 * cut at its first event can stay `queued` indefinitely, so the adapter needs a staleness limit): a
 * response still `queued` `staleAfterMs` after its `created_at` is `unknown` with reason `queued_stale`,
 * because we can no longer tell whether it will ever start; it is not `failed` (OpenAI said no such
 * thing). Reconciliation keeps asking, and a response that starts after all is followed again. Applied
 * to a retrieved response only: a replayed stream event says what was, not what is.
 */
export function staleQueued(
  snap: RemoteSnapshot,
  r: WireResponse,
  nowMs: number,
  staleAfterMs: number,
): RemoteSnapshot {
  if (r.status !== 'queued' || typeof r.created_at !== 'number') return snap;
  if (nowMs - r.created_at * 1000 < staleAfterMs) return snap;
  return {
    ...snap,
    state: 'unknown',
    reason: 'queued_stale',
    remoteVersion: QUEUED_STALE_RANK,
    // The same text on every retrieve, so a stale response costs no write per reconciliation round.
    statusMessage: `still queued ${staleAfterMs} ms after it was created: it may never start`,
  };
}

/**
 * A stream event → a snapshot, given the last response seen on this stream (null on a resume before
 * the first event that carries one). Events that carry the response (`response.created`, `.queued`,
 * `.in_progress`, `.completed`, `.failed`, `.incomplete`, and the emulator's `.cancelled`) give it
 * whole; every other event (output items, text deltas, reasoning, tools) happens only while the
 * response runs, so it reports `in_progress` with the event's sequence number as the cursor.
 */
export function eventSnapshot(
  event: { type: string; sequence_number: number; response?: unknown },
  remoteId: string,
  o: SnapshotOptions,
): { snapshot: RemoteSnapshot; response: WireResponse | null; terminal: boolean } {
  const response =
    event.response &&
    typeof event.response === 'object' &&
    typeof (event.response as WireResponse).id === 'string'
      ? (event.response as WireResponse)
      : null;
  if (response) {
    const snapshot = responseSnapshot(response, o, event.sequence_number);
    return { snapshot, response, terminal: TERMINAL_STATUSES.has(response.status ?? '') };
  }
  const snapshot = responseSnapshot({ id: remoteId, status: 'in_progress' }, o, event.sequence_number);
  return { snapshot, response: null, terminal: false };
}
