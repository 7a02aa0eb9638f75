import type { Logger } from '../core/logger.ts';
import type { AgentSkill, Artifact, JsonObject, Message, Part, Task } from '../protocols/a2a/types.ts';
import type { ToolDefinition } from './tool-api.ts';

/**
 * The public API for writing an agent the host runs (executors are user code).
 *
 * ```ts
 * import { defineAgent } from 'taskplane/host';
 * export default defineAgent({
 *   card: { name: 'Summarizer', description: 'Summarizes text', version: '1.0.0' },
 *   resumable: true,
 *   async execute(ctx) {
 *     await ctx.status('reading');
 *     const edition = await ctx.askInput('Which edition?');   // survives a host restart
 *     await ctx.artifact({ name: 'summary', parts: [{ text: `summary of ${edition.text}` }] });
 *     return 'done';                                          // completes the task with this message
 *   },
 * });
 * ```
 *
 * Durability contract: every ctx call that changes the task is on disk before it resolves. When the
 * host restarts, a `resumable` agent's execute is called again with `ctx.resumed === true`; answers
 * already given to askInput are replayed in order (so askInput calls must happen in the same order on
 * every run) and `ctx.checkpoint` holds what was last saved with `ctx.save`. A non-resumable agent's
 * unfinished tasks are failed with a readable reason instead.
 */
export interface AgentDefinition {
  card: AgentCardInfo;
  /**
   * May execute be called again for a task that was running when the host stopped? Only say yes if
   * re-running from `ctx.checkpoint` is safe. @default false
   */
  resumable?: boolean;
  /**
   * Answers a new message directly, with a Message and no task (A2A 1.0: SendMessage answers with a
   * Task or a Message). Called for each new message (not for one that continues a task) before any
   * task exists; resolve to a string or Part[] and the client gets a Message with those parts, or to
   * `undefined` and a task is created and `execute` runs. The reply is stored before it is sent: the
   * same message sent again (a retry) gets the same Message back, after a host restart too, and
   * `reply` is not called again for it. Keep the decision a function of the message, so a retry is
   * answered the same way. Throwing answers the client with an internal error (details go to the log).
   */
  reply?(ctx: ReplyContext): Promise<string | Part[] | undefined>;
  /**
   * An extended agent card for callers the host authenticated (A2A 1.0, GetExtendedAgentCard): the
   * fields given replace the public card's (more skills, another description…); the interfaces,
   * capabilities and security schemes stay the host's. A function gets the caller and may answer
   * differently per caller. Defining it declares `capabilities.extendedAgentCard: true` on the public
   * card. With `--auth keys` only a caller with a valid key gets it; with `--auth none` every caller is
   * anonymous, so it is as public as the card itself.
   */
  extendedCard?:
    | Partial<AgentCardInfo>
    | ((caller: {
        owner: string;
        tenant: string;
      }) => Partial<AgentCardInfo> | Promise<Partial<AgentCardInfo>>);
  /**
   * Runs the task. Resolve to finish it: a string or Part[] becomes the completing status message.
   * Throwing fails the task (the client sees a generic reason; details go to the host log). An agent
   * with only `tools` may leave it out: its A2A tasks then fail with a reason saying so.
   */
  execute?(ctx: ExecutionContext): Promise<string | Part[] | void>;
  /**
   * MCP tools served at `/mcp` (tool-api.ts, docs/host.md "MCP"), on the same durable machinery as
   * A2A tasks. Names are unique. @default none
   */
  tools?: ToolDefinition[];
}

export interface AgentCardInfo {
  name: string;
  description: string;
  version: string;
  skills?: AgentSkill[];
  documentationUrl?: string;
  provider?: { url: string; organization: string };
  defaultInputModes?: string[];
  defaultOutputModes?: string[];
}

export interface InputAnswer {
  message: Message;
  /** The text parts joined with newlines. */
  text: string;
  /** The first data part's value, if any. */
  data: unknown;
}

export interface ArtifactChunk {
  /** Stable id; chunks with the same id and `append: true` extend it. @default a new id */
  artifactId?: string;
  name?: string;
  description?: string;
  parts: Part[];
  metadata?: JsonObject;
  append?: boolean;
  lastChunk?: boolean;
}

/** Options of `ctx.step`. */
export interface StepOptions {
  /** Further attempts, in this run, after `fn` throws. @default 0 */
  retries?: number;
  /** Wait before the first retry, doubling for each next one (full jitter, at most 60 s). @default 1000 */
  backoffMs?: number;
}

/** What a step's function is given. */
export interface StepAttempt {
  /** The step's idempotency key (`ctx.stepKey(name)`): pass it to the external system. */
  readonly key: string;
  /** 1 for the first attempt; counts on across retries and restarts. */
  readonly attempt: number;
  /** The execute's signal: pass it to the outbound call. */
  readonly signal: AbortSignal;
}

/** What `reply` sees of a new message. */
export interface ReplyContext {
  /** The message (its own copy). */
  readonly message: Message;
  /** Its text parts joined with newlines, and its first data part's value. */
  readonly text: string;
  readonly data: unknown;
  /** The message's contextId, or a new one: the reply carries it. */
  readonly contextId: string;
  /** Fires when the client goes away. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
}

export interface ExecutionContext {
  readonly taskId: string;
  readonly contextId: string;
  /** The message that started the task. */
  readonly message: Message;
  /** Its text parts joined, and its first data part. */
  readonly text: string;
  readonly data: unknown;
  /** The stored task as execute starts (on a resume: as it was when the host stopped). */
  readonly task: Task;
  /** True when execute runs again after a host restart (or after input arrived across a restart). */
  readonly resumed: boolean;
  /** What the last ctx.save stored, on a resume. */
  readonly checkpoint: Record<string, unknown> | undefined;
  /** Fires on CancelTask, on input timeout and on host shutdown. Pass it to every outbound call. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** TASK_STATE_WORKING with an agent status message. */
  status(text: string): Promise<void>;
  /** Publishes an artifact chunk (TaskArtifactUpdateEvent); returns the artifact id. */
  artifact(chunk: ArtifactChunk): Promise<string>;
  /**
   * Moves the task to TASK_STATE_INPUT_REQUIRED with `prompt` and resolves with the client's answer
   * (the next message on this task). Rejects when the input timeout passes or the task is canceled.
   */
  askInput(prompt: string): Promise<InputAnswer>;
  /** Saves a resume point (durable before it resolves). */
  save(checkpoint: Record<string, unknown>): Promise<void>;
  /** Waits on the host's clock; rejects when `signal` fires. */
  sleep(ms: number): Promise<void>;
  /**
   * A journaled step, for a side effect that must happen once (a payment, an email, a write to another
   * system). Runs `fn` once per task and step `name` and records its outcome durably before returning
   * it; when execute runs again (a host restart, input across a restart) the recorded result is
   * returned, or the recorded failure thrown, without calling `fn`. A step that was running when the
   * host died runs again, with the same `attempt.key` (`stepKey(name)`): send it to the other system
   * as its idempotency key (an `Idempotency-Key` header) so the retry does not act twice. The result
   * must be JSON (at most 64 KiB) and is returned as JSON (a Date comes back a string). `fn` throwing
   * on its last attempt throws a StepFailedError: the task fails only if execute lets it escape.
   * Each attempt and the outcome are WORKING status updates; outcomes join the task's history.
   */
  step<T>(name: string, fn: (attempt: StepAttempt) => T | Promise<T>, options?: StepOptions): Promise<T>;
  /**
   * The idempotency key of step `name` of this task: stable across restarts and host processes,
   * unguessable (derived from a secret kept in the store), different for every task and name.
   */
  stepKey(name: string): string;
  /** Finishes the task as TASK_STATE_COMPLETED. */
  complete(message?: string | Part[]): Promise<void>;
  /** Finishes the task as TASK_STATE_FAILED with a reason the client can read. */
  fail(reason: string): Promise<void>;
  /**
   * Finishes the task as TASK_STATE_REJECTED with a reason the client can read: the agent will not do
   * this work (out of its scope, refused by policy), as opposed to trying and failing. Rejecting before
   * any other ctx call goes straight from SUBMITTED to REJECTED.
   */
  reject(reason: string): Promise<void>;
}

/** A card, and an execute function or a tools list (or both). */
export function isAgentDefinition(v: unknown): v is AgentDefinition {
  if (typeof v !== 'object' || v === null) return false;
  const d = v as Partial<AgentDefinition>;
  const hasExecute = typeof d.execute === 'function';
  const hasTools = Array.isArray(d.tools) && d.tools.length > 0;
  return (
    typeof d.card === 'object' &&
    d.card !== null &&
    (hasExecute || hasTools) &&
    (d.execute === undefined || hasExecute) &&
    (d.tools === undefined || Array.isArray(d.tools))
  );
}

/** Identity function that gives an agent module its types. */
export function defineAgent(definition: AgentDefinition): AgentDefinition {
  return definition;
}

export type { Artifact };
