import { createHmac } from 'node:crypto';
import { backoffPolicy, nextBackoff, type BackoffPolicy } from '../core/backoff.ts';
import type { Clock } from '../core/clock.ts';
import { TaskplaneError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import type { Random } from '../core/random.ts';
import type { StoreCommon } from '../store/store.ts';
import type { Message } from '../protocols/a2a/types.ts';
import type { StepAttempt, StepOptions } from './agent-api.ts';
import { agentMessage, jsonCopy, setStatus, statusEvent, toIso, type StepRecord } from './task-model.ts';
import type { TaskChange, TaskDraft } from './task-writer.ts';

/**
 * Journaled steps (`ctx.step`): a side effect an execute must do once per task, however often the host
 * restarts under it. The journal lives in the task's executor state, written through the TaskWriter like
 * every other change, so "the step finished with this result" is on disk, in the same transaction as its
 * history entry, before the step returns. A resumed execute reads the journal: a finished step answers
 * from it without running again. A step that was running when the host died has no result there and
 * runs again, with the same key (stepKeyOf), which the agent hands to the external system as its
 * idempotency key: the system, not the host, turns "ran twice" into "happened once".
 */

/** The settings row holding the secret every host sharing the store derives step keys from. */
export const STEP_KEY_SECRET_SETTING = 'host.step-key-secret';

/**
 * The step-key secret of this store: made once (32 random bytes) and shared by every host process on the
 * database, so a task taken over by another host keeps its keys.
 */
export function loadStepKeySecret(store: StoreCommon, random: Random): Promise<string> {
  return store.putSettingIfAbsent(STEP_KEY_SECRET_SETTING, Buffer.from(random.bytes(32)).toString('hex'));
}

/**
 * The idempotency key of step `name` of task `taskId`: stable across runs and hosts, and unguessable
 * (an HMAC under the store's secret), so nobody who sees task ids can forge or predict the key of a
 * payment they did not make. The NUL separator keeps (`a`, `b:c`) and (`a:b`, `c`) apart.
 */
export function stepKeyOf(secret: string, taskId: string, name: string): string {
  return 'step_' + createHmac('sha256', secret).update(`${taskId}\u0000${name}`).digest('base64url');
}

/** Longest step name: it is a map key in every write of the task and a line in its history. */
export const MAX_STEP_NAME_LENGTH = 200;
/**
 * Largest recorded result (JSON bytes). The journal rides in the task's executor state, written whole
 * with every change of the task, so a big result would slow every later write: keep large data
 * elsewhere and return a reference to it.
 */
export const MAX_STEP_RESULT_BYTES = 64 * 1024;
/** Most retries one step call may ask for. */
export const MAX_STEP_RETRIES = 100;
/** Longest error text kept in the journal (it is host-private: the client never sees it). */
const MAX_ERROR_CHARS = 1000;
/** The metadata key of a step's history message (name, outcome, attempts, start, end). */
export const STEP_METADATA_KEY = 'taskplane/step';

/**
 * A step's error: its function threw on its last attempt (the cause is that error), or, on a resumed
 * execute, the journal says it did (the cause is gone; the message keeps its text). Thrown out of
 * `ctx.step`: the task fails only if execute lets it escape.
 */
export class StepFailedError extends Error {
  readonly code = 'step_failed';

  constructor(
    readonly step: string,
    readonly attempts: number,
    readonly reason: string,
    options?: { cause: unknown },
  ) {
    super(`step ${step} failed after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${reason}`, options);
    this.name = 'StepFailedError';
  }
}

export function checkStepName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_STEP_NAME_LENGTH)
    throw new TaskplaneError(
      'invalid_argument',
      `step name: must be a non-empty string of at most ${MAX_STEP_NAME_LENGTH} characters`,
      { field: 'name' },
    );
  return name;
}

interface StepPlan {
  retries: number;
  policy: BackoffPolicy;
}

function stepPlan(name: string, options: StepOptions | undefined): StepPlan {
  const retries = options?.retries ?? 0;
  if (!Number.isInteger(retries) || retries < 0 || retries > MAX_STEP_RETRIES)
    throw new TaskplaneError(
      'invalid_argument',
      `step ${name}: retries must be an integer from 0 to ${MAX_STEP_RETRIES}`,
      { field: 'retries' },
    );
  const backoffMs = options?.backoffMs ?? 1000;
  if (typeof backoffMs !== 'number' || !(backoffMs > 0) || !Number.isFinite(backoffMs))
    throw new TaskplaneError('invalid_argument', `step ${name}: backoffMs must be a number > 0`, {
      field: 'backoffMs',
    });
  return {
    retries,
    policy: backoffPolicy({ initialIntervalMs: backoffMs, maximumIntervalMs: Math.max(60_000, backoffMs) }),
  };
}

/** What running a step needs of its TaskContext. */
export interface StepDeps {
  clock: Clock;
  random: Random;
  signal: AbortSignal;
  /** True once the execute was stopped (cancel, shutdown): the step is then left unrecorded. */
  stopped(): boolean;
  /** A durable change to the task through the context (refused once the task is finished). */
  write(mutate: (d: TaskDraft) => TaskChange): Promise<void>;
}

/**
 * Runs one step: answers from the journal when it holds an outcome, else runs `fn` (with retries) and
 * journals the outcome before returning it. The value returned is the JSON form of what `fn` returned,
 * the same on the first run and on every replay.
 */
export async function runStep<T>(
  name: string,
  key: string,
  fn: (attempt: StepAttempt) => T | Promise<T>,
  options: StepOptions | undefined,
  recorded: StepRecord | undefined,
  deps: StepDeps,
): Promise<T> {
  const plan = stepPlan(name, options);
  if (recorded?.state === 'succeeded')
    return (recorded.result === undefined ? undefined : jsonCopy(recorded.result)) as T;
  if (recorded?.state === 'failed')
    throw new StepFailedError(name, recorded.attempts, recorded.error ?? 'unknown error');
  const startedAt = recorded?.startedAt ?? deps.clock.now();
  let attempts = recorded?.attempts ?? 0;
  /** Journals the step as failed; returns the error to throw. */
  const failed = async (reason: string, cause: unknown): Promise<StepFailedError> => {
    const entry: StepRecord = {
      state: 'failed',
      attempts,
      startedAt,
      endedAt: deps.clock.now(),
      error: reason,
    };
    await deps.write((d) => journal(d, name, entry, deps));
    return new StepFailedError(name, attempts, reason, cause === undefined ? undefined : { cause });
  };
  for (let retry = 0; ; retry++) {
    attempts++;
    const attempt = attempts;
    await deps.write((d) => journal(d, name, { state: 'running', attempts: attempt, startedAt }, deps));
    // Stopped while the start was written (cancel, shutdown): the attempt is journaled as started, so a
    // resumed execute runs it under the same key; fn is not called with a signal that already fired.
    if (deps.stopped()) throw deps.signal.reason;
    let value: T;
    try {
      value = await fn({ key, attempt, signal: deps.signal });
    } catch (err) {
      // Stopped (cancel, shutdown): nothing is known of the side effect, so nothing is journaled; a
      // resumed execute runs the step again under the same key.
      if (deps.stopped()) throw err;
      if (retry < plan.retries) {
        await deps.clock.sleep(nextBackoff(plan.policy, retry, deps.random) ?? 0, deps.signal);
        continue;
      }
      throw await failed(errorText(err), err);
    }
    const encoded = encodeResult(name, value);
    if (typeof encoded !== 'string') throw await failed(encoded.error, undefined);
    const done: StepRecord = { state: 'succeeded', attempts, startedAt, endedAt: deps.clock.now() };
    // Two parses: the journal's copy is shared with the stored record, the caller's is its own.
    if (encoded !== '') done.result = JSON.parse(encoded) as unknown;
    await deps.write((d) => journal(d, name, done, deps));
    return (encoded === '' ? undefined : JSON.parse(encoded)) as T;
  }
}

/** The step's value as JSON ('' for undefined), or why it cannot be journaled. */
function encodeResult(name: string, value: unknown): string | { error: string } {
  if (value === undefined) return '';
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (err) {
    return { error: `its result is not JSON (${errorText(err)})` };
  }
  if (json === undefined) return { error: 'its result is not JSON (a function or symbol)' };
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_STEP_RESULT_BYTES)
    return {
      error: `step ${name} returned ${bytes} bytes of JSON, over the ${MAX_STEP_RESULT_BYTES} a step may record: keep large data elsewhere and return a reference`,
    };
  return json;
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS)}…` : text;
}

/**
 * Writes a step's journal entry and says so on the task: a WORKING status (progress, seen by every
 * subscriber and push) whose message names the step; an outcome also joins the task's history. The
 * journal map is replaced whole (task-writer.ts TaskDraft: nested objects are shared with the stored
 * record). A task waiting for input (a step running beside askInput) keeps its state.
 */
function journal(d: TaskDraft, name: string, entry: StepRecord, deps: StepDeps): TaskChange {
  d.executor.steps = { ...d.executor.steps, [name]: entry };
  const message = stepMessage(d, name, entry, deps);
  if (entry.state !== 'running') (d.task.history ??= []).push(message);
  const state = d.task.status.state;
  if (state !== 'TASK_STATE_WORKING' && state !== 'TASK_STATE_SUBMITTED') return { events: [] };
  setStatus(d.task, 'TASK_STATE_WORKING', deps.clock.now(), message);
  return { events: [statusEvent(d.task)] };
}

function stepMessage(d: TaskDraft, name: string, entry: StepRecord, deps: StepDeps): Message {
  const tries = `${entry.attempts} attempt${entry.attempts === 1 ? '' : 's'}`;
  const text =
    entry.state === 'running'
      ? `Step ${name}: attempt ${entry.attempts} started.`
      : `Step ${name} ${entry.state} after ${tries}.`;
  const message = agentMessage(d.task, newId(deps.clock, deps.random, 'msg_'), [{ text }]);
  message.metadata = {
    [STEP_METADATA_KEY]: {
      name,
      outcome: entry.state,
      attempts: entry.attempts,
      startedAt: toIso(entry.startedAt),
      ...(entry.endedAt !== undefined ? { endedAt: toIso(entry.endedAt) } : {}),
    },
  };
  return message;
}
