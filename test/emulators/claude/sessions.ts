import type { Clock } from '../../../src/core/clock.ts';
import { ApiError, badRequest } from './http.ts';

/**
 * Session state and scripted turns. A turn's script is chosen by the first word of the user message
 * that starts it (see README.md); steps run one I/O turn apart so a stream sees them in order, and
 * nothing here waits on time, so tests stay independent of any clock. A turn blocks only where the
 * real service does: on tool answers, on a budget raise, on `release` for a held turn.
 */

export type Json = Record<string, unknown>;

export interface SessionEvent extends Json {
  id: string;
  type: string;
  processed_at: string | null;
}

export const SCRIPTS = [
  'end_turn',
  'custom_tool',
  'tool_confirmation',
  'two_tools',
  'retries_exhausted',
  'budget',
  'terminal',
  'refusal',
  'hold',
  'drop',
  'reschedule',
] as const;
export type Script = (typeof SCRIPTS)[number];

export interface Session {
  id: string;
  status: 'idle' | 'running' | 'rescheduling' | 'terminated';
  title: string | null;
  agent: Json;
  environment_id: string;
  metadata: Record<string, string>;
  budget: { type: 'limit'; max_list_cost: { amount: string; currency: 'USD' } } | null;
  created_at: string;
  updated_at: string;
  archived_at: string | null;
  events: SessionEvent[];
  usage: { input_tokens: number; output_tokens: number; costCents: number };
  queue: SessionEvent[];
  /** Blocking event ids awaiting a `user.tool_confirmation` / `user.custom_tool_result`. */
  pending: Map<string, 'tool_confirmation' | 'custom_tool_result'>;
  pausedAtBudget: boolean;
  interrupted: boolean;
  turnActive: boolean;
  wake: (() => void) | null;
  released: boolean;
  deleted: boolean;
}

export interface Engine {
  clock: Clock;
  newId(prefix: string): string;
  /**
   * Persists and fans out to open streams. An event carrying the id of one already stored replaces
   * it (a queued user message once processed), so the history holds each id once.
   */
  emit(session: Session, event: Json): SessionEvent;
  webhook(type: string, session: Session): void;
  dropStreams(session: Session): void;
  costPerRequestCents(): number;
  /** While true no queued turn starts (`control.holdTurns`), so a test can attach first. */
  turnsHeld(): boolean;
  /** Pause between a turn's steps on the clock; 0 (tests) is one I/O turn. */
  stepDelayMs: number;
}

const nextTick = () => new Promise<void>((resolve) => setImmediate(resolve));

export function publicSession(s: Session): Json {
  return {
    type: 'session',
    id: s.id,
    status: s.status,
    title: s.title,
    agent: s.agent,
    environment_id: s.environment_id,
    metadata: s.metadata,
    resources: [],
    vault_ids: [],
    budget: s.budget,
    usage: {
      input_tokens: s.usage.input_tokens,
      output_tokens: s.usage.output_tokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      list_cost: { amount: String(s.usage.costCents), currency: 'USD' },
    },
    stats: { active_seconds: 0, duration_seconds: 0 },
    outcome_evaluations: [],
    created_at: s.created_at,
    updated_at: s.updated_at,
    archived_at: s.archived_at,
  };
}

function scriptOf(message: SessionEvent): Script {
  const content = message['content'];
  const first = Array.isArray(content) ? (content[0] as Json | undefined) : undefined;
  const text = typeof first?.['text'] === 'string' ? first['text'] : '';
  const word = text.trim().split(/\s+/)[0] ?? '';
  return (SCRIPTS as readonly string[]).includes(word) ? (word as Script) : 'end_turn';
}

/** Starts the next queued user message if nothing runs. */
export function pump(engine: Engine, s: Session): void {
  if (
    s.turnActive ||
    s.deleted ||
    s.status === 'terminated' ||
    s.pausedAtBudget ||
    s.pending.size > 0 ||
    engine.turnsHeld()
  )
    return;
  const next = s.queue.shift();
  if (!next) return;
  s.turnActive = true;
  s.interrupted = false;
  s.released = false;
  void runTurn(engine, s, next)
    .catch(() => undefined)
    .finally(() => {
      s.turnActive = false;
      pump(engine, s);
    });
}

class Interrupted extends Error {}

async function step(engine: Engine, s: Session): Promise<void> {
  if (engine.stepDelayMs > 0) await engine.clock.sleep(engine.stepDelayMs);
  else await nextTick();
  if (s.deleted) throw new Interrupted();
  if (s.interrupted) throw new Interrupted();
}

/** Waits until `ready()` holds, woken by anything that changes the session. */
async function until(s: Session, ready: () => boolean): Promise<void> {
  while (!ready()) {
    if (s.interrupted || s.deleted) throw new Interrupted();
    await new Promise<void>((resolve) => (s.wake = resolve));
    s.wake = null;
  }
}

export function wake(s: Session): void {
  s.wake?.();
}

function setStatus(engine: Engine, s: Session, status: Session['status']): void {
  s.status = status;
  s.updated_at = new Date(engine.clock.now()).toISOString();
}

function running(engine: Engine, s: Session): void {
  setStatus(engine, s, 'running');
  engine.emit(s, { type: 'session.status_running' });
  engine.webhook('session.status_run_started', s);
}

function idle(engine: Engine, s: Session, stopReason: Json, extra: Json = {}): void {
  engine.emit(s, {
    type: 'session.usage',
    input_tokens: s.usage.input_tokens,
    output_tokens: s.usage.output_tokens,
    list_cost: { amount: String(s.usage.costCents), currency: 'USD' },
  });
  setStatus(engine, s, 'idle');
  engine.emit(s, { type: 'session.status_idle', stop_reason: stopReason, ...extra });
  engine.webhook('session.status_idled', s);
}

async function modelRequest(engine: Engine, s: Session): Promise<void> {
  // The cap is checked before each request; the one in flight finishes, so cost can overshoot.
  while (s.budget && s.usage.costCents >= Number(s.budget.max_list_cost.amount)) {
    s.pausedAtBudget = true;
    idle(engine, s, { type: 'budget_reached' });
    engine.webhook('session.budget_reached', s);
    await until(s, () => !s.pausedAtBudget);
    running(engine, s);
  }
  await step(engine, s);
  const start = engine.emit(s, { type: 'span.model_request_start' });
  await step(engine, s);
  s.usage.input_tokens += 100;
  s.usage.output_tokens += 50;
  s.usage.costCents += engine.costPerRequestCents();
  engine.emit(s, {
    type: 'span.model_request_end',
    model_request_start_id: start.id,
    is_error: false,
    model_usage: {
      input_tokens: 100,
      output_tokens: 50,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  });
}

function agentMessage(engine: Engine, s: Session, text: string): void {
  engine.emit(s, { type: 'agent.message', content: [{ type: 'text', text }] });
}

/** Emits the blocking events, then idles with whichever are still unanswered until none are. */
async function requireAction(
  engine: Engine,
  s: Session,
  blocking: Json[],
  dropAfterFirst = false,
): Promise<void> {
  for (const b of blocking) {
    const event = engine.emit(s, b);
    s.pending.set(
      event.id,
      b['type'] === 'agent.custom_tool_use' ? 'custom_tool_result' : 'tool_confirmation',
    );
    if (dropAfterFirst) engine.dropStreams(s);
  }
  while (s.pending.size > 0) {
    const waitingOn = [...s.pending.keys()];
    idle(engine, s, { type: 'requires_action', event_ids: waitingOn });
    engine.webhook('session.requires_action', s);
    await until(s, () => s.pending.size < waitingOn.length);
  }
  running(engine, s);
}

async function runTurn(engine: Engine, s: Session, message: SessionEvent): Promise<void> {
  const script = scriptOf(message);
  try {
    await step(engine, s);
    running(engine, s);
    engine.emit(s, { ...message, processed_at: new Date(engine.clock.now()).toISOString() });
    await modelRequest(engine, s);
    switch (script) {
      case 'end_turn':
        agentMessage(engine, s, 'Done.');
        break;
      case 'custom_tool':
      case 'drop':
        await requireAction(
          engine,
          s,
          [{ type: 'agent.custom_tool_use', name: 'lookup', input: { query: 'weather' } }],
          script === 'drop',
        );
        await modelRequest(engine, s);
        agentMessage(engine, s, 'Used the tool result.');
        break;
      case 'tool_confirmation':
        await requireAction(engine, s, [
          { type: 'agent.tool_use', name: 'bash', input: { command: 'ls' }, evaluated_permission: 'ask' },
        ]);
        await modelRequest(engine, s);
        agentMessage(engine, s, 'Tool step settled.');
        break;
      case 'two_tools':
        await requireAction(engine, s, [
          { type: 'agent.custom_tool_use', name: 'lookup', input: { query: 'a' } },
          { type: 'agent.tool_use', name: 'bash', input: { command: 'ls' }, evaluated_permission: 'ask' },
        ]);
        agentMessage(engine, s, 'Both settled.');
        break;
      case 'budget':
        for (let i = 0; i < 4; i++) await modelRequest(engine, s);
        agentMessage(engine, s, 'Long work done.');
        break;
      case 'retries_exhausted':
        engine.emit(s, sessionError('model_overloaded_error', 'retrying'));
        await step(engine, s);
        engine.emit(s, sessionError('model_overloaded_error', 'exhausted'));
        idle(engine, s, { type: 'retries_exhausted' });
        return;
      case 'refusal':
        idle(
          engine,
          s,
          { type: 'refusal' },
          { stop_details: { type: 'refusal', category: 'cyber', explanation: 'Refused.' } },
        );
        return;
      case 'terminal':
        engine.emit(s, sessionError('billing_error', 'terminal'));
        setStatus(engine, s, 'terminated');
        s.queue.length = 0;
        engine.emit(s, { type: 'session.status_terminated' });
        engine.webhook('session.status_terminated', s);
        return;
      case 'hold':
        await until(s, () => s.released);
        agentMessage(engine, s, 'Released.');
        break;
      case 'reschedule':
        // A transient failure on the service's side: the session is rescheduled and retried there,
        // with nothing asked of the client, until `release` lets the retry start.
        setStatus(engine, s, 'rescheduling');
        engine.emit(s, { type: 'session.status_rescheduled' });
        engine.webhook('session.status_rescheduled', s);
        await until(s, () => s.released);
        running(engine, s);
        await modelRequest(engine, s);
        agentMessage(engine, s, 'Done after a reschedule.');
        break;
    }
    await step(engine, s);
    idle(engine, s, { type: 'end_turn' });
  } catch (err) {
    if (!(err instanceof Interrupted) || s.deleted) return;
    // An interrupted turn reports end_turn; only the client's own record tells it apart.
    s.pending.clear();
    s.pausedAtBudget = false;
    s.queue.length = 0;
    idle(engine, s, { type: 'end_turn' });
  }
}

function sessionError(type: string, retry: 'retrying' | 'exhausted' | 'terminal'): Json {
  return {
    type: 'session.error',
    error: { type, message: `emulated ${type}`, retry_status: { type: retry } },
  };
}

/**
 * Validates and applies the events of one `events.send`, returning their echoes. All are checked
 * before any is applied, so a bad event leaves the session unchanged.
 */
export function receive(engine: Engine, s: Session, events: unknown): SessionEvent[] {
  if (s.status === 'terminated' && s.archived_at !== null)
    throw new ApiError(409, 'invalid_request_error', `session ${s.id} is archived`, {
      'x-should-retry': 'false',
    });
  if (s.status === 'terminated') throw badRequest(`session ${s.id} is terminated`);
  if (!Array.isArray(events) || events.length === 0) throw badRequest('events: must be a non-empty array');
  events.forEach((e, i) => check(s, e, `events[${i}]`));
  const now = new Date(engine.clock.now()).toISOString();
  const echoes: SessionEvent[] = [];
  for (const raw of events as Json[]) {
    const type = raw['type'] as string;
    if (type === 'user.message') {
      const event = engine.emit(s, { ...raw, processed_at: null });
      s.queue.push(event);
      echoes.push(event);
    } else if (type === 'user.interrupt') {
      echoes.push(engine.emit(s, { ...raw, processed_at: now }));
      if (s.pausedAtBudget) continue;
      if (s.turnActive) {
        s.interrupted = true;
        wake(s);
      }
    } else {
      const ref = (
        type === 'user.tool_confirmation' ? raw['tool_use_id'] : raw['custom_tool_use_id']
      ) as string;
      echoes.push(engine.emit(s, { ...raw, processed_at: now }));
      s.pending.delete(ref);
      wake(s);
    }
  }
  pump(engine, s);
  return echoes;
}

function check(s: Session, e: unknown, field: string): void {
  if (typeof e !== 'object' || e === null) throw badRequest(`${field}: must be an object`);
  const event = e as Json;
  switch (event['type']) {
    case 'user.message': {
      if (!Array.isArray(event['content']) || event['content'].length === 0)
        throw badRequest(`${field}.content: must be a non-empty array of content blocks`);
      if (s.pausedAtBudget)
        throw badRequest(`${field}: session ${s.id} is paused at its budget; raise the budget to continue`);
      return;
    }
    case 'user.interrupt':
      return;
    case 'user.tool_confirmation': {
      const id = event['tool_use_id'];
      if (typeof id !== 'string' || s.pending.get(id) !== 'tool_confirmation')
        throw badRequest(`${field}.tool_use_id: no pending tool confirmation with this id`);
      if (event['result'] !== 'allow' && event['result'] !== 'deny')
        throw badRequest(`${field}.result: must be allow or deny`);
      return;
    }
    case 'user.custom_tool_result': {
      const id = event['custom_tool_use_id'];
      if (typeof id !== 'string' || s.pending.get(id) !== 'custom_tool_result')
        throw badRequest(`${field}.custom_tool_use_id: no pending custom tool use with this id`);
      return;
    }
    default:
      throw badRequest(`${field}.type: unsupported event type ${JSON.stringify(event['type'])}`);
  }
}
