import type { EnvelopeEvent } from '../core/envelope.ts';
import { TaskplaneError } from '../core/errors.ts';
import { isTerminal, type NormalizedState } from '../core/states.ts';
import type { WireDialect } from './wire-facts.ts';
import type { WireCall } from './wire-proxy.ts';

/** What the row kit reads off the engine's events and the wire: backward moves, descriptions. */

/** The agent answered, refusing the credentials (401/403, or the protocol's own code for it). */
export function refusesCredentials(err: unknown): boolean {
  if (!(err instanceof TaskplaneError)) return false;
  const http = err.details?.httpStatus;
  return err.code === 'unauthenticated' || err.code === 'permission_denied' || http === 401 || http === 403;
}

export function firstAt(events: EnvelopeEvent[], pred: (e: EnvelopeEvent) => boolean): number | null {
  return events.find(pred)?.at ?? null;
}

function rankOf(state: NormalizedState): number {
  if (isTerminal(state)) return 2;
  return state === 'accepted' || state === 'unknown' ? 0 : 1;
}

/** The first backward move in the engine's transitions, or null. */
export function engineBackward(changes: EnvelopeEvent[]): string | null {
  let best = 0;
  for (const e of changes) {
    const to = e.data.to as NormalizedState;
    if (to === 'unknown' || to === 'lost') continue;
    const r = rankOf(to);
    if (best === 2) return `engine moved from a final state to ${to}`;
    if (r < best) return `engine moved back to ${to}`;
    best = Math.max(best, r);
  }
  return null;
}

/** The first backward move in what the agent reported for these tasks, ordered by its own timestamps. */
export function wireBackward(calls: WireCall[], tasks: Set<string>, dialect: WireDialect): string | null {
  const seen = calls
    .flatMap((c) => c.states)
    .filter((s) => tasks.has(s.taskId) && s.timestampMs !== null)
    .sort((a, b) => a.timestampMs! - b.timestampMs!);
  const last = new Map<string, string>();
  for (const s of seen) {
    const prev = last.get(s.taskId);
    if (prev && dialect.isTerminal(prev) && s.state !== prev)
      return `the agent reported task ${s.taskId} ${s.state} after ${prev}`;
    if (prev && dialect.rank(s.state) < dialect.rank(prev))
      return `the agent reported task ${s.taskId} ${s.state} after ${prev}`;
    last.set(s.taskId, s.state);
  }
  return null;
}

export function describeCall(c: WireCall): string {
  const what = c.taskId ? ` task ${c.taskId}` : c.contextId ? ` context ${c.contextId}` : '';
  return `${c.method}${what}`;
}

export function describeEvent(e: EnvelopeEvent): string {
  const d = e.data;
  switch (e.type) {
    case 'state_changed':
      return `state ${String(d.from)} → ${String(d.to)}${d.source ? ` (${String(d.source)})` : ''}`;
    case 'bound':
      return `bound to remote task ${String(d.remoteId ?? '')}`;
    default:
      return e.type + (d.reason ? ` (${String(d.reason)})` : '');
  }
}
