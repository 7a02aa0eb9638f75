import { TaskplaneError } from '../../core/errors.ts';
import type { InputRequest } from '../connector.ts';

/**
 * What taskplane sends to and reads from Claude Managed Agents besides sessions themselves: the job's
 * input as a `user.message`, answers as `user.tool_confirmation` / `user.custom_tool_result` (field
 * names as the API has them: `tool_use_id`, `custom_tool_use_id`), a budget raise, and the thin
 * webhook payload.
 */

type ContentBlock = { type: 'text'; text: string } | Record<string, unknown>;

/** A job's input as message content: a string, `{text}`, `{content: [...]}`, or anything else as JSON text. */
export function userContent(input: unknown): ContentBlock[] {
  if (typeof input === 'string') return [{ type: 'text', text: input }];
  if (input && typeof input === 'object') {
    const o = input as { text?: unknown; content?: unknown };
    if (typeof o.text === 'string') return [{ type: 'text', text: o.text }];
    if (Array.isArray(o.content) && o.content.length > 0) return o.content as ContentBlock[];
  }
  return [{ type: 'text', text: JSON.stringify(input ?? null) }];
}

const badValue = (message: string) =>
  new TaskplaneError('invalid_argument', `value: ${message}`, { field: 'value' });

/** The event answering one blocking request, from the caller's `value`. */
export function answerEvent(request: InputRequest, value: unknown): Record<string, unknown> {
  if (request.method === 'tool_confirmation') {
    const v = (typeof value === 'string' ? { result: value } : value) as {
      result?: unknown;
      deny_message?: unknown;
    } | null;
    if (!v || (v.result !== 'allow' && v.result !== 'deny'))
      throw badValue('must be "allow", "deny" or {result: "allow"|"deny", deny_message?}');
    return {
      type: 'user.tool_confirmation',
      tool_use_id: request.requestId,
      result: v.result,
      ...(v.result === 'deny' && typeof v.deny_message === 'string' ? { deny_message: v.deny_message } : {}),
    };
  }
  if (typeof value === 'string')
    return {
      type: 'user.custom_tool_result',
      custom_tool_use_id: request.requestId,
      content: [{ type: 'text', text: value }],
    };
  const v = value as { content?: unknown; is_error?: unknown } | null;
  if (!v || typeof v !== 'object' || (v.content !== undefined && !Array.isArray(v.content)))
    throw badValue('must be text or {content: [blocks], is_error?}');
  return {
    type: 'user.custom_tool_result',
    custom_tool_use_id: request.requestId,
    ...(v.content !== undefined ? { content: v.content } : {}),
    ...(typeof v.is_error === 'boolean' ? { is_error: v.is_error } : {}),
  };
}

/** A budget raise: whole US cents, as a number or `{limit}`. */
export function budgetLimit(value: unknown): number {
  const n = typeof value === 'number' ? value : (value as { limit?: unknown } | null)?.limit;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1)
    throw badValue('must be the new budget in whole US cents (an integer >= 1, or {limit})');
  return n;
}

/**
 * Webhook event names differ from stream event names (docs/plane.md, "Claude Managed Agents"): the
 * webhook says `session.status_idled` where the stream says `session.status_idle`. Every session event
 * is only a wake-up; the name tells which stream event it stands for (for logs and readers).
 */
export const WEBHOOK_TO_STREAM: Readonly<Record<string, string>> = {
  'session.status_run_started': 'session.status_running',
  'session.status_idled': 'session.status_idle',
  'session.status_rescheduled': 'session.status_rescheduled',
  'session.status_terminated': 'session.status_terminated',
  'session.budget_reached': 'session.status_idle',
  'session.requires_action': 'session.status_idle',
  'session.archived': 'session.status_terminated',
  'session.deleted': 'session.deleted',
  'session.updated': 'session.updated',
  'session.thread_created': 'session.thread_created',
  'session.thread_idled': 'session.thread_status_idle',
  'session.thread_terminated': 'session.thread_status_terminated',
  'session.outcome_evaluation_ended': 'span.outcome_evaluation_end',
};

/**
 * The thin payload `{type:"event", id, created_at, data:{type, id, …}}`: the session it is about, or
 * null for events about other objects (vaults, agents, environments), which are ignored.
 */
export function sessionWebhook(rawBody: string): { type: string; sessionId: string | null } {
  let body: unknown;
  try {
    body = JSON.parse(rawBody);
  } catch {
    throw new TaskplaneError('invalid_argument', 'body: not JSON', { field: 'body' });
  }
  const data = (body as { data?: { type?: unknown; id?: unknown } } | null)?.data;
  if (!data || typeof data.type !== 'string')
    throw new TaskplaneError('invalid_argument', 'body.data.type: required', { field: 'body.data.type' });
  // Any session event wakes the job, including names this table does not list yet: a fetch costs
  // one read, a missed wake-up costs a reconciliation interval.
  const about = data.type.startsWith('session.') && typeof data.id === 'string';
  return { type: data.type, sessionId: about ? (data.id as string) : null };
}
