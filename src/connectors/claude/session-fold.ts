import type { NormalizedState } from '../../core/states.ts';
import type { InputRequest, RemoteSnapshot } from '../connector.ts';

/**
 * Claude Managed Agents: a session's persisted event history folded into one snapshot (the state
 * table is in docs/plane.md, "Claude Managed Agents"). The same fold serves `get` (the whole
 * history) and `observe` (the history, then the stream with the ids already seen skipped), so both
 * give the same answer for the same prefix, and the prefix length is the snapshot's remote version.
 *
 * The job is the session's first turn: its first outcome (idle `end_turn`, `retries_exhausted`,
 * `refusal`, or `terminated`) is final; later turns, or archiving after the outcome, change nothing.
 */

/** A session event as the API persists it: `id`, `type`, `processed_at` and the type's own fields. */
export interface SessionEvent {
  id?: string;
  type: string;
  processed_at?: string | null;
  [field: string]: unknown;
}

/** The fields of a session object the fold reads. */
export interface SessionObject {
  id: string;
  status: string;
  metadata?: Record<string, string> | null;
  budget?: { max_list_cost?: { amount?: string } | null } | null;
  usage?: {
    input_tokens?: number;
    output_tokens?: number;
    list_cost?: { amount?: string } | null;
  } | null;
  archived_at?: string | null;
  /** RFC 3339; moves on every status change, which is what reconciliation lists by. */
  updated_at?: string | null;
  /** The agent as the session runs it, with its tools (custom tools carry their input schema). */
  agent?: { tools?: Array<{ type?: string; name?: string; input_schema?: unknown }> } | null;
}

/** Metadata keys taskplane writes on the sessions it creates. */
export const META_ENVELOPE = 'taskplane_envelope';
export const META_CONTEXT = 'taskplane_context';
/** Written just before taskplane archives a session as a cancel, so `terminated` reads as cancelled. */
export const META_CANCEL = 'taskplane_cancel';
/**
 * Written at create when the target archives sessions once their job is terminal: the intent lives
 * with the session, so a plane that crashed before archiving finds it again (claude-connector.ts).
 */
export const META_ARCHIVE = 'taskplane_archive';

/** Events that are never the record: preview deltas and heartbeats. */
const NOT_PERSISTED = new Set(['ping', 'event_start', 'event_delta']);

/** Input request kinds, by the blocking event the session waits on. */
export type RequestMethod = 'tool_confirmation' | 'custom_tool_result' | 'budget';

interface Outcome {
  state: NormalizedState;
  nativeState: string;
  error: { code: string; message: string } | null;
}

export class SessionFold {
  /** Persisted events folded so far (distinct ids): the remote version of the snapshot. */
  position = 0;
  lastEventId: string | null = null;
  private readonly seen = new Set<string>();
  private status: string;
  private idle: SessionEvent | null = null;
  private interrupted = false;
  private outcome: Outcome | null = null;
  private lastError: { type: string; message: string } | null = null;
  private readonly blocking = new Map<string, SessionEvent>();
  private readonly answered = new Set<string>();
  private usage: Record<string, number> | null = null;
  private result: string | null = null;

  constructor(
    public session: SessionObject,
    private readonly contextId: string | null,
  ) {
    this.status = session.status;
    this.usage = usageOf(session.usage);
  }

  /** A fresher copy of the session object (metadata, usage, status) than the one we began with. */
  refresh(session: SessionObject): void {
    this.session = session;
    if (this.position === 0 || session.status === 'terminated') this.status = session.status;
    this.usage = usageOf(session.usage) ?? this.usage;
  }

  /** Folds one event; false when it is not persisted or was already seen (its id, not its copy). */
  add(event: SessionEvent): boolean {
    if (!event || typeof event.type !== 'string' || NOT_PERSISTED.has(event.type)) return false;
    const key = event.id || `${event.type}@${event.processed_at ?? ''}@${this.position}`;
    if (this.seen.has(key)) return false;
    this.seen.add(key);
    this.position++;
    this.lastEventId = event.id || this.lastEventId;
    if (this.outcome) return true;
    switch (event.type) {
      case 'session.status_running':
      case 'session.status_rescheduled':
        this.status = event.type === 'session.status_running' ? 'running' : 'rescheduling';
        this.idle = null;
        break;
      case 'session.status_idle':
        this.status = 'idle';
        this.idle = event;
        this.settleIdle(event);
        break;
      case 'session.status_terminated':
        this.status = 'terminated';
        this.outcome = this.terminated();
        break;
      case 'session.error': {
        const e = (event['error'] ?? {}) as { type?: unknown; message?: unknown };
        this.lastError = {
          type: typeof e.type === 'string' ? e.type : 'unknown_error',
          message: typeof e.message === 'string' ? e.message.slice(0, 500) : '',
        };
        break;
      }
      case 'session.usage': {
        const u = usageOf(event as SessionObject['usage']);
        if (u) this.usage = u;
        break;
      }
      case 'user.interrupt':
        this.interrupted = true;
        break;
      case 'agent.tool_use':
      case 'agent.custom_tool_use':
        if (event.id) this.blocking.set(event.id, event);
        break;
      case 'user.tool_confirmation':
        if (typeof event['tool_use_id'] === 'string') this.answered.add(event['tool_use_id']);
        break;
      case 'user.custom_tool_result':
        if (typeof event['custom_tool_use_id'] === 'string') this.answered.add(event['custom_tool_use_id']);
        break;
      case 'agent.message': {
        const text = textOf(event['content']);
        if (text) this.result = text;
        break;
      }
    }
    return true;
  }

  /** An idle that ends the turn fixes the outcome; `requires_action` and `budget_reached` wait. */
  private settleIdle(event: SessionEvent): void {
    const stop = stopReason(event);
    if (stop === 'end_turn') {
      // Interrupted turns also report end_turn: only the interrupt in the history tells them apart.
      this.outcome = this.interrupted
        ? { state: 'cancelled', nativeState: 'idle/end_turn/interrupted', error: null }
        : { state: 'succeeded', nativeState: 'idle/end_turn', error: null };
    } else if (stop === 'retries_exhausted') {
      this.outcome = {
        state: 'failed',
        nativeState: 'idle/retries_exhausted',
        error: this.lastError
          ? { code: this.lastError.type, message: this.lastError.message }
          : { code: 'retries_exhausted', message: 'the turn failed after repeated errors' },
      };
    } else if (stop === 'refusal') {
      const d = (event['stop_details'] ?? {}) as { category?: unknown; explanation?: unknown };
      this.outcome = {
        state: 'failed',
        nativeState: 'idle/refusal',
        error: {
          code: `refusal${typeof d.category === 'string' ? `:${d.category}` : ''}`,
          message: typeof d.explanation === 'string' ? d.explanation.slice(0, 500) : 'the model refused',
        },
      };
    }
  }

  private terminated(): Outcome {
    if (this.session.metadata?.[META_CANCEL])
      return { state: 'cancelled', nativeState: 'terminated/archived', error: null };
    return {
      state: 'failed',
      nativeState: 'terminated',
      error: this.lastError
        ? { code: this.lastError.type, message: this.lastError.message }
        : { code: 'terminated', message: 'the session was terminated' },
    };
  }

  /** Blocking events of the last `requires_action` idle that no answer in the history settled. */
  private unanswered(): SessionEvent[] {
    const ids = ((this.idle?.['stop_reason'] as { event_ids?: unknown } | undefined)?.event_ids ??
      []) as unknown[];
    return ids
      .filter((id): id is string => typeof id === 'string' && !this.answered.has(id))
      .map((id) => this.blocking.get(id) ?? { id, type: 'agent.custom_tool_use' });
  }

  snapshot(): RemoteSnapshot {
    const base = {
      remoteId: this.session.id,
      contextId: this.contextId,
      remoteVersion: this.position,
      stateTimestamp: null,
      cursor: this.lastEventId,
      eventId: this.lastEventId,
      usage: this.usage,
      ...(this.result !== null ? { result: this.result } : {}),
    };
    if (!this.outcome && this.status === 'terminated') this.outcome = this.terminated();
    if (this.outcome)
      return {
        ...base,
        state: this.outcome.state,
        nativeState: this.outcome.nativeState,
        error: this.outcome.error,
      };
    if (this.status === 'idle' && this.idle) {
      const stop = stopReason(this.idle);
      if (stop === 'requires_action') {
        const open = this.unanswered();
        // Every blocking event answered: the session takes the answers up again.
        if (open.length === 0)
          return { ...base, state: 'running', nativeState: 'idle/requires_action/answered' };
        const inputRequests = open.map((e) => requestFor(e, this.session));
        return {
          ...base,
          state: 'waiting_for_input',
          nativeState: 'idle/requires_action',
          inputRequest: inputRequests[0]!,
          inputRequests,
        };
      }
      if (stop === 'budget_reached') {
        const request = budgetRequest(this.idle, this.session, this.usage);
        return {
          ...base,
          state: 'waiting_for_input',
          nativeState: 'idle/budget_reached',
          statusMessage: 'budget',
          inputRequest: request,
          inputRequests: [request],
        };
      }
      return { ...base, state: 'unknown', nativeState: `idle/${stop ?? 'none'}` };
    }
    // Rescheduling is the service retrying after a transient failure of its own: still running, nothing
    // asked of us, flagged so a reader sees why no progress shows. A plain running clears the flag.
    if (this.status === 'rescheduling')
      return { ...base, state: 'running', nativeState: 'rescheduling', statusMessage: 'retrying' };
    if (this.status === 'running')
      return { ...base, state: 'running', nativeState: 'running', statusMessage: null };
    if (this.status === 'idle') return { ...base, state: 'accepted', nativeState: 'idle' };
    return { ...base, state: 'unknown', nativeState: this.status };
  }
}

function stopReason(idle: SessionEvent): string | null {
  const s = idle['stop_reason'] as { type?: unknown } | undefined;
  return typeof s?.type === 'string' ? s.type : null;
}

/** Usage in generic units: `cents` (list cost), `input_tokens`, `output_tokens`. */
export function usageOf(u: SessionObject['usage'] | undefined): Record<string, number> | null {
  if (!u) return null;
  const out: Record<string, number> = {};
  const cents = Number(u.list_cost?.amount);
  if (Number.isFinite(cents)) out.cents = cents;
  if (typeof u.input_tokens === 'number') out.input_tokens = u.input_tokens;
  if (typeof u.output_tokens === 'number') out.output_tokens = u.output_tokens;
  return Object.keys(out).length > 0 ? out : null;
}

function textOf(content: unknown): string | null {
  if (!Array.isArray(content)) return null;
  const parts = content
    .map((b) =>
      b && typeof b === 'object' && typeof (b as { text?: unknown }).text === 'string'
        ? (b as { text: string }).text
        : '',
    )
    .filter(Boolean);
  return parts.length > 0 ? parts.join('') : null;
}

const TOOL_CONFIRMATION_SCHEMA = {
  oneOf: [
    { enum: ['allow', 'deny'] },
    {
      type: 'object',
      required: ['result'],
      properties: { result: { enum: ['allow', 'deny'] }, deny_message: { type: 'string' } },
    },
  ],
};

/** One keyed request per blocking event: its id is the event id the answer must name. */
function requestFor(event: SessionEvent, session: SessionObject): InputRequest {
  const id = event.id ?? '';
  const name = typeof event['name'] === 'string' ? event['name'] : 'tool';
  const input = JSON.stringify(event['input'] ?? {}).slice(0, 500);
  if (event.type === 'agent.tool_use')
    return {
      requestId: id,
      prompt: `Allow tool ${name} with input ${input}? (allow or deny)`,
      schema: TOOL_CONFIRMATION_SCHEMA,
      method: 'tool_confirmation',
    };
  // The tool's own definition on the session's agent says what its input looks like.
  const inputSchema = session.agent?.tools?.find((t) => t.type === 'custom' && t.name === name)?.input_schema;
  return {
    requestId: id,
    prompt: `Result of custom tool ${name} for input ${input}`,
    schema: {
      description: `the result of custom tool ${name}: text, or {content, is_error}`,
      oneOf: [
        { type: 'string' },
        {
          type: 'object',
          properties: { content: { type: 'array' }, is_error: { type: 'boolean' } },
        },
      ],
      'x-tool-input': event['input'] ?? {},
      ...(inputSchema && typeof inputSchema === 'object' ? { 'x-tool-input-schema': inputSchema } : {}),
    },
    method: 'custom_tool_result',
  };
}

/** The budget pause as a request: answering it with a higher limit in cents raises the session's budget. */
function budgetRequest(
  idle: SessionEvent,
  session: SessionObject,
  usage: Record<string, number> | null,
): InputRequest {
  const limit = session.budget?.max_list_cost?.amount ?? '?';
  return {
    requestId: `budget:${idle.id ?? ''}`,
    prompt: `Paused at its budget of ${limit} cents (used ${usage?.cents ?? '?'}); answer with a higher limit in cents to resume`,
    schema: {
      oneOf: [
        { type: 'integer', minimum: 1 },
        { type: 'object', required: ['limit'], properties: { limit: { type: 'integer', minimum: 1 } } },
      ],
    },
    method: 'budget',
  };
}
