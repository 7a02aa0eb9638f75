/**
 * Terminology (docs/a2a-notes.md, "Terms and normalized states"):
 *
 * - native state: the remote system's own word for where a job is (`TASK_STATE_WORKING`, `in_progress`,
 *   `idle/end_turn`), kept verbatim beside the normalized one.
 * - normalized state: taskplane's single vocabulary below, the same for every connector.
 * - observation: one report of a remote job's state from any source (stream, push, poll, reconcile, api).
 * - remote version: the ordering key an observation carries (a sequence number where the protocol has
 *   one, else the remote status timestamp); larger is newer.
 * - terminal: a state that never changes again.
 * - lost: not a remote state but a reconciliation result: the remote no longer knows a job we created.
 */

export const NORMALIZED_STATES = [
  'accepted',
  'running',
  'waiting_for_input',
  'cancel_requested',
  'succeeded',
  'failed',
  'cancelled',
  'expired',
  'unknown',
  'lost',
] as const;

export type NormalizedState = (typeof NORMALIZED_STATES)[number];

/** States that never change once reached. `lost` is final too: recovery creates a new remote job. */
export const TERMINAL_STATES: ReadonlySet<NormalizedState> = new Set([
  'succeeded',
  'failed',
  'cancelled',
  'expired',
  'lost',
]);

export function isTerminal(state: NormalizedState): boolean {
  return TERMINAL_STATES.has(state);
}

export function isNormalizedState(value: unknown): value is NormalizedState {
  return typeof value === 'string' && (NORMALIZED_STATES as readonly string[]).includes(value);
}

/** Where a job is in its life, used only to break ties between observations with equal remote versions. */
const PROGRESS_RANK: Record<NormalizedState, number> = {
  unknown: 0,
  accepted: 1,
  running: 2,
  waiting_for_input: 2,
  cancel_requested: 3,
  succeeded: 4,
  failed: 4,
  cancelled: 4,
  expired: 4,
  lost: 4,
};

/** What the envelope currently says about the remote job: enough to judge a new observation. */
export interface StateRecord {
  state: NormalizedState;
  nativeState: string | null;
  /** Remote ordering key of the observation that produced `state`; null when nothing was observed yet. */
  remoteVersion: number | null;
}

export interface Observation {
  state: NormalizedState;
  nativeState: string | null;
  /** Larger is newer. Sequence number, or remote status timestamp in ms. Null when the source has none. */
  remoteVersion: number | null;
  /**
   * Why the connector normalized the native state this way when the native state alone does not say it
   * (OpenAI `queued_stale`: queued past the connector's staleness limit). Absent for a plain mapping.
   */
  reason?: string | null;
}

export type TransitionDecision =
  { apply: true; next: StateRecord } | { apply: false; reason: 'terminal' | 'stale' | 'duplicate' };

/**
 * The ONE forward-only transition rule (docs/plane.md, "The truth rule"):
 *
 * 1. A terminal record never changes.
 * 2. An observation older than what we hold (smaller remote version) is stale and ignored, so a delayed
 *    webhook never moves a record back. Except a terminal one: a job that ended cannot start again, so
 *    its end is the last word whatever version it carries (the record keeps the larger version). A2A's
 *    version is the status timestamp, and an agent run on several machines whose clocks disagree can end
 *    a task "before" it last said WORKING: read as stale, that end would be ignored for good.
 * 3. At an equal version the observation applies only if it moves the job forward in its life
 *    (rank), so a replayed or duplicated delivery is absorbed.
 * 4. `cancel_requested` is local intent: any remote state other than the plain running/waiting ones
 *    replaces it, and a terminal outcome always does, including "completed after cancel was requested".
 *    While cancel is pending, a non-terminal remote report only refreshes the native state.
 * 5. `unknown` never overwrites a known state: it is an honest "we could not tell", not news. Unless it
 *    gives a reason: then it is the connector's own rule about a native state it knows (OpenAI: a
 *    response `queued` past the staleness limit may never start), and it is news, ordered like any other.
 */
export function decideTransition(current: StateRecord, obs: Observation): TransitionDecision {
  if (isTerminal(current.state)) return { apply: false, reason: 'terminal' };
  if (obs.state === 'unknown' && current.state !== 'unknown' && !obs.reason)
    return { apply: false, reason: 'stale' };

  if (current.remoteVersion !== null && obs.remoteVersion !== null) {
    if (obs.remoteVersion < current.remoteVersion && !isTerminal(obs.state))
      return { apply: false, reason: 'stale' };
    if (obs.remoteVersion === current.remoteVersion) {
      const sameState = obs.state === current.state && obs.nativeState === current.nativeState;
      if (sameState) return { apply: false, reason: 'duplicate' };
      if (!isTerminal(obs.state) && PROGRESS_RANK[obs.state] <= PROGRESS_RANK[current.state]) {
        return { apply: false, reason: 'stale' };
      }
    }
  } else if (obs.state === current.state && obs.nativeState === current.nativeState) {
    return { apply: false, reason: 'duplicate' };
  }

  // An end stamped earlier than what we hold (rule 2) keeps the larger version: it never goes back.
  const remoteVersion =
    obs.remoteVersion === null || current.remoteVersion === null
      ? (obs.remoteVersion ?? current.remoteVersion)
      : Math.max(obs.remoteVersion, current.remoteVersion);
  if (current.state === 'cancel_requested' && !isTerminal(obs.state)) {
    // Keep the intent visible until the remote confirms an outcome; remember what it said meanwhile.
    if (obs.nativeState === current.nativeState && remoteVersion === current.remoteVersion) {
      return { apply: false, reason: 'duplicate' };
    }
    return { apply: true, next: { state: 'cancel_requested', nativeState: obs.nativeState, remoteVersion } };
  }
  return { apply: true, next: { state: obs.state, nativeState: obs.nativeState, remoteVersion } };
}

/**
 * Local intents and results that do not come from the remote job (cancel requested, lost, expired by
 * our own TTL) go through here so they obey rule 1 too.
 */
export function decideLocalTransition(current: StateRecord, state: NormalizedState): TransitionDecision {
  if (isTerminal(current.state)) return { apply: false, reason: 'terminal' };
  if (current.state === state) return { apply: false, reason: 'duplicate' };
  return { apply: true, next: { ...current, state } };
}
