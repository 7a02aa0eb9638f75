import { table } from './cli-options.ts';

/**
 * How `taskplane tasks` shows a task to a person: times as local time or "3 min ago", an age that stops
 * at the terminal state, and the cancel, reconciliation and acceptance records as sentences instead of
 * JSON with epoch milliseconds (`--json` keeps the API's shape for scripts).
 */
export interface TaskRow {
  id: string;
  state: string;
  target: string;
  nativeState: string | null;
  createdAt: number;
  updatedAt: number;
  pendingInput: { requestId: string; prompt: string; answeredAt?: number | null } | null;
  statusMessage?: string | null;
  error?: { code: string; message: string } | null;
  output?: OutputSummary;
  lastError?: { code: string; message: string; at: number; during: string } | null;
  startAttempts?: number;
  nextRetryAt?: number | null;
  cancel?: CancelView | null;
  reconciliation?: { result: string; at: number; attempts: number; note?: string } | null;
  acceptance?: AcceptanceView | null;
  [k: string]: unknown;
}

export interface AcceptanceView {
  status: string;
  reasons: string[];
  decidedAt?: number | null;
  receiptId?: string;
  checks?: Array<{ check: string; verdict: string; reasons: string[] }>;
  decidedBy?: { keyId: string | null; actor: string | null };
}

interface CancelView {
  requestedAt: number;
  requestedBy: string | null;
  acknowledgedAt: number | null;
  outcome: string | null;
  pending?: 'remote_id' | 'delivery' | 'outcome' | null;
  attempts?: number;
}

export interface OutputSummary {
  text: string | null;
  data: unknown[];
  files: Array<{ artifactId: string; name: string | null; mediaType: string | null; size: number | null }>;
  remoteOnly: string[];
  truncated: boolean;
}

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired', 'lost']);

/** A span of time the way people say it: `45 s`, `3 min`, `2 h 5 min`, `3 d 4 h`. */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

/** `3 min ago`, `just now`, or `in 20 s` for a time still to come. */
export function relative(at: number, now: number): string {
  const diff = now - at;
  if (Math.abs(diff) < 1000) return 'just now';
  return diff > 0 ? `${duration(diff)} ago` : `in ${duration(-diff)}`;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** Local wall time, `2026-12-01 14:03:07`: what the clock on the operator's wall says. */
export function localTime(at: number): string {
  const d = new Date(at);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** `2026-12-01 14:03:07 (3 min ago)` */
export function when(at: number, now: number): string {
  return `${localTime(at)} (${relative(at, now)})`;
}

/** `when`, or empty where there is no time (never revoked, not yet delivered). */
export function whenOrEmpty(at: number | null, now = Date.now()): string {
  return at === null ? '' : when(at, now);
}

/** How long the task has run: until now, or until its last change once it is terminal (it stops). */
export function taskAge(t: TaskRow, now: number): string {
  return duration((TERMINAL.has(t.state) ? t.updatedAt : now) - t.createdAt);
}

/** The one thing to know about a task in a list: the question it waits on, why it failed, its cancel. */
function note(t: TaskRow, now: number): string {
  if (t.pendingInput && !t.pendingInput.answeredAt)
    return `asks (${t.pendingInput.requestId}): ${t.pendingInput.prompt}`;
  if (t.error) return `${t.error.code}: ${t.error.message}`.split('\n')[0]!.slice(0, 100);
  if (t.cancel && !TERMINAL.has(t.state)) return cancelText(t.cancel, now).split(';')[0]!;
  return '';
}

export function taskRows(tasks: TaskRow[], now = Date.now()): string {
  const rows = [['ID', 'STATE', 'TARGET', 'NATIVE', 'CREATED', 'AGE', 'NOTE']];
  for (const t of tasks)
    rows.push([
      t.id,
      t.state,
      t.target,
      t.nativeState ?? '',
      relative(t.createdAt, now),
      taskAge(t, now),
      note(t, now),
    ]);
  return table(rows);
}

const WAITING_FOR: Record<string, string> = {
  remote_id: 'the start to answer (the cancel is sent as soon as it does)',
  delivery: 'the remote to acknowledge (retried)',
  outcome: "the remote's final state",
};

/** The cancel record in words. */
export function cancelText(c: CancelView, now: number): string {
  const parts = [`requested ${relative(c.requestedAt, now)}${c.requestedBy ? ` by ${c.requestedBy}` : ''}`];
  if (c.acknowledgedAt !== null) parts.push(`acknowledged ${relative(c.acknowledgedAt, now)}`);
  if (c.pending) parts.push(`waiting for ${WAITING_FOR[c.pending] ?? c.pending}`);
  if (c.attempts) parts.push(`${c.attempts} cancel call${c.attempts === 1 ? '' : 's'}`);
  if (c.outcome)
    parts.push(
      c.outcome === 'cancelled' ? 'the remote cancelled it' : `the remote ended it as ${c.outcome} anyway`,
    );
  return parts.join('; ');
}

const RECONCILE_WORDS: Record<string, string> = {
  ok: 'the agent still knows it',
  lost: 'the agent no longer knows it (lost)',
  resubmitted: 'the agent no longer knew it; resubmitted under the same idempotency key',
  escalated: 'the agent no longer knew it; escalated to a person',
};

/** The detail lines of `tasks get` beyond the table row. */
export function detailLines(t: TaskRow, now = Date.now()): string[] {
  const lines = [`created:     ${when(t.createdAt, now)}`, `updated:     ${when(t.updatedAt, now)}`];
  if (t.error) lines.push(`failure:     ${t.error.code}: ${indent(t.error.message)}`);
  if (t.statusMessage) lines.push(`message:     ${indent(t.statusMessage)}`);
  if (t.pendingInput)
    lines.push(
      t.pendingInput.answeredAt
        ? `input:       "${t.pendingInput.prompt}" answered ${relative(t.pendingInput.answeredAt, now)}`
        : `input:       waiting on ${t.pendingInput.requestId}: ${indent(t.pendingInput.prompt)}`,
    );
  if (t.lastError)
    lines.push(
      `last error:  ${t.lastError.during}, ${relative(t.lastError.at, now)}: ${t.lastError.code}: ${indent(t.lastError.message)}`,
    );
  if (t.lastError || (t.startAttempts ?? 0) > 1) lines.push(`start calls: ${t.startAttempts ?? 0}`);
  if (t.nextRetryAt) lines.push(`next retry:  ${when(t.nextRetryAt, now)}`);
  if (t.cancel) lines.push(`cancel:      ${cancelText(t.cancel, now)}`);
  const r = t.reconciliation;
  if (r)
    lines.push(
      `reconcile:   ${RECONCILE_WORDS[r.result] ?? r.result}, checked ${relative(r.at, now)}${r.note ? ` (${r.note})` : ''}`,
    );
  if (t.acceptance) lines.push(...acceptanceLines(t.acceptance, now));
  return lines;
}

/** The acceptance verdict (who decided, when), then each check run with its verdict and reasons. */
export function acceptanceLines(a: AcceptanceView, now = Date.now()): string[] {
  const by = a.decidedBy ? ` by ${a.decidedBy.actor ?? a.decidedBy.keyId ?? 'anonymous'}` : '';
  const at = a.decidedAt ? ` (${relative(a.decidedAt, now)})` : '';
  const checks = a.checks ?? [];
  // Without checks (a verdict from before they were recorded), the reasons follow the verdict.
  const why = !checks.length && a.reasons.length ? `: ${indent(a.reasons.join('; '))}` : '';
  const receipt = a.receiptId ? ` (receipt ${a.receiptId})` : '';
  const lines = [`acceptance:  ${a.status}${by}${why}${at}${receipt}`];
  for (const c of checks)
    lines.push(
      `  ${c.check.padEnd(13)} ${c.verdict}${c.reasons.length ? `: ${indent(c.reasons.join('; '))}` : ''}`,
    );
  return lines;
}

export const DETAIL_INDENT = ' '.repeat('output:      '.length);

/** Continuation lines of a multi-line value line up under the first. */
export function indent(text: string): string {
  return text.replace(/\n/g, `\n${DETAIL_INDENT}`);
}
