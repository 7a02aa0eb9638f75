import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { newId } from '../core/ids.ts';
import type { Random } from '../core/random.ts';
import type { AgentTaskRecord, Store } from '../store/store.ts';
import {
  isTerminalTaskState,
  type Artifact,
  type Message,
  type Part,
  type Task,
  type TaskArtifactUpdateEvent,
  type TaskState,
} from '../protocols/a2a/types.ts';
import type { AgentDefinition, ArtifactChunk, ExecutionContext, InputAnswer } from './agent-api.ts';
import {
  agentMessage,
  applyArtifact,
  type ExecutorState,
  executorStateOf,
  jsonCopy,
  payloadState,
  setStatus,
  type StoredEvent,
  statusEvent,
  taskOf,
  triggerOf,
} from './task-model.ts';
import type { TaskFeed } from './task-feed.ts';
import type { Mutate, TaskChange, TaskDraft, TaskWriter } from './task-writer.ts';

/** Thrown inside an execution whose task was finished by someone else (cancel, timeout). */
export class TaskClosedError extends Error {
  constructor(readonly state: string) {
    super(`task is ${state}`);
    this.name = 'TaskClosedError';
  }
}

interface Live {
  controller: AbortController;
  /**
   * Why the execute was stopped, set just before the controller aborts. Checked instead of
   * `controller.signal.aborted`: Node creates a controller's AbortSignal on first access, about 1 % of
   * the host's CPU under the send bench for a signal a quick execute never looks at.
   */
  stopped?: TaskClosedError;
  waiting?: { index: number; resolve: (m: Message) => void; reject: (e: unknown) => void };
}

export interface ExecutionsOptions {
  store: Store;
  writer: TaskWriter;
  clock: Clock;
  random: Random;
  agent: AgentDefinition;
  logger: Logger;
  /** @default 900000 (15 min, seed 004's lab figure) */
  inputTimeoutMs: number;
  /** This host process (executorState.host of the tasks it runs). */
  hostId: string;
  /** Watches for answers written by another host process (shared PostgreSQL). */
  feed: TaskFeed;
}

export function answerOf(message: Message): InputAnswer {
  return { message, text: answerText(message), data: answerData(message) };
}

/** A message's text parts joined with newlines. */
function answerText(message: Message): string {
  return message.parts.flatMap((p) => (p.text !== undefined ? [p.text] : [])).join('\n');
}

/** A message's first data part's value. */
function answerData(message: Message): unknown {
  return message.parts.find((p) => p.data !== undefined)?.data;
}

/**
 * Runs agents' execute functions for tasks, turning ctx calls into durable task writes, and owns the
 * two things that outlive a call: the pending input request (its answer and its timeout) and restart
 * recovery.
 */
export class Executions {
  private readonly live = new Map<string, Live>();
  private readonly timers = new Map<string, () => void>();
  private readonly running = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly o: ExecutionsOptions) {}

  get activeCount(): number {
    return this.live.size;
  }

  /** Starts execute for a stored task (new, resumed after restart, or continued after input). */
  start(record: AgentTaskRecord, resumed: boolean): void {
    if (this.closed || this.live.has(record.id)) return;
    const controller = new AbortController();
    const entry: Live = { controller };
    this.live.set(record.id, entry);
    const run = this.run(record, resumed, entry).finally(() => {
      if (this.live.get(record.id) === entry) this.live.delete(record.id);
      this.running.delete(run);
    });
    this.running.add(run);
  }

  /** True when this process runs the task's execute or holds its input timeout. */
  isTracked(taskId: string): boolean {
    return this.live.has(taskId) || this.timers.has(taskId);
  }

  /** True when an execute is running for this task in this process. */
  isLive(taskId: string): boolean {
    return this.live.has(taskId);
  }

  /**
   * A follow-up message answered the pending input (already written by the caller). Resolves the
   * waiting askInput, or, when no execute is waiting here (the host restarted), starts execute again.
   */
  answered(record: AgentTaskRecord, answer: Message): void {
    this.clearTimer(record.id);
    const entry = this.live.get(record.id);
    if (entry?.waiting) {
      const w = entry.waiting;
      entry.waiting = undefined;
      w.resolve(answer);
      return;
    }
    if (!entry) this.start(record, true);
  }

  /** The task was finished from outside (cancel): stop its execute. */
  abort(taskId: string, reason: string): void {
    this.clearTimer(taskId);
    const entry = this.live.get(taskId);
    if (!entry) return;
    entry.stopped = new TaskClosedError(reason);
    entry.controller.abort(entry.stopped);
    entry.waiting?.reject(new TaskClosedError(reason));
    entry.waiting = undefined;
  }

  /** Stops every execute (host shutdown): they see their signal fire; tasks stay as stored for recovery. */
  async close(): Promise<void> {
    this.closed = true;
    for (const cancel of this.timers.values()) cancel();
    this.timers.clear();
    for (const entry of this.live.values()) {
      entry.stopped = new TaskClosedError('shutdown');
      entry.controller.abort(entry.stopped);
      entry.waiting?.reject(new TaskClosedError('shutdown'));
    }
    await Promise.allSettled([...this.running]);
  }

  armInputTimeout(taskId: string, index: number, deadlineAt: number): void {
    this.clearTimer(taskId);
    const cancel = this.o.clock.setTimer(Math.max(0, deadlineAt - this.o.clock.now()), () => {
      this.timers.delete(taskId);
      void this.inputTimedOut(taskId, index).catch((err: unknown) =>
        this.o.logger.error({ err, taskId }, 'input timeout failed'),
      );
    });
    this.timers.set(taskId, cancel);
  }

  private clearTimer(taskId: string): void {
    this.timers.get(taskId)?.();
    this.timers.delete(taskId);
  }

  private async inputTimedOut(taskId: string, index: number): Promise<void> {
    const reason = `No input was received within ${this.o.inputTimeoutMs} ms; the task was failed.`;
    const result = await this.o.writer.update(taskId, (d) => {
      if (d.task.status.state !== 'TASK_STATE_INPUT_REQUIRED' || d.executor.pendingInput?.index !== index)
        return null;
      delete d.executor.pendingInput;
      const message = this.msg(d, reason);
      setStatus(d.task, 'TASK_STATE_FAILED', this.o.clock.now(), message);
      (d.task.history ??= []).push(message);
      return { events: [statusEvent(d.task)] };
    });
    if (result.written) this.abort(taskId, 'input timeout');
  }

  msg(d: TaskDraft, text: string): Message {
    return agentMessage(d.task, newId(this.o.clock, this.o.random, 'msg_'), [{ text }]);
  }

  /**
   * Another host process may take the answer (the follow-up reached it): watch the store's change feed
   * for the answer to appear in the task. Only where commits of other processes reach the feed.
   */
  watchForAnswer(taskId: string, index: number, entry: Live): () => void {
    if (!this.o.store.capabilities.crossProcessNotify) return () => undefined;
    const stop = new AbortController();
    void (async () => {
      try {
        for await (const _event of this.o.feed.events(taskId, 0, stop.signal)) {
          const record = await this.o.store.getAgentTask(taskId);
          const answer = record ? executorStateOf(record).inputs[index] : undefined;
          if (answer && entry.waiting?.index === index) {
            const w = entry.waiting;
            entry.waiting = undefined;
            this.clearTimer(taskId);
            w.resolve(answer);
            return;
          }
          if (!entry.waiting) return;
        }
      } catch (err) {
        this.o.logger.warn({ err, taskId }, 'answer watch failed');
      }
    })();
    return () => stop.abort();
  }

  /** Writes a terminal state unless the task is already terminal. */
  async finish(taskId: string, state: TaskState, text?: string | Part[]): Promise<boolean> {
    const parts = typeof text === 'string' ? [{ text }] : text && jsonCopy(text);
    const result = await this.o.writer.update(taskId, (d) => {
      if (isTerminalTaskState(d.task.status.state)) return null;
      delete d.executor.pendingInput;
      const message =
        parts && parts.length > 0
          ? agentMessage(d.task, newId(this.o.clock, this.o.random, 'msg_'), parts)
          : undefined;
      setStatus(d.task, state, this.o.clock.now(), message);
      if (message) (d.task.history ??= []).push(message);
      return { events: [statusEvent(d.task)] };
    });
    if (result.written) this.clearTimer(taskId);
    return result.written;
  }

  private async run(record: AgentTaskRecord, resumed: boolean, entry: Live): Promise<void> {
    const { logger } = this.o;
    const taskId = record.id;
    // No write of its own here: SUBMITTED → WORKING rides on the executor's first change (one fsync
    // fewer per task; a trivial agent goes SUBMITTED → COMPLETED in one write).
    if (isTerminalTaskState(record.state)) return;
    const ctx = new TaskContext(this, this.o, entry, executorStateOf(record), taskOf(record), resumed);
    const stopWatch = this.watchForEnd(taskId);
    try {
      const result = await this.o.agent.execute(ctx);
      if (!ctx.done && !entry.stopped) await this.finish(taskId, 'TASK_STATE_COMPLETED', result ?? undefined);
    } catch (err) {
      if (entry.stopped || err instanceof TaskClosedError) return;
      logger.error({ err, taskId }, 'agent execute threw');
      await this.finish(taskId, 'TASK_STATE_FAILED', 'The agent failed while working on this task.').catch(
        (e: unknown) => logger.error({ err: e, taskId }, 'could not record the failure'),
      );
    } finally {
      stopWatch();
    }
  }

  /**
   * A CancelTask (or input timeout) handled by another host process ends the task in the store; fire
   * this execute's signal when that reaches the change feed. Only where other processes' commits do.
   */
  private watchForEnd(taskId: string): () => void {
    if (!this.o.store.capabilities.crossProcessNotify) return () => undefined;
    const stop = new AbortController();
    void (async () => {
      try {
        for await (const event of this.o.feed.events(taskId, 0, stop.signal)) {
          const state = payloadState(event.payload as StoredEvent);
          if (state && isTerminalTaskState(state)) {
            this.abort(taskId, state);
            return;
          }
        }
      } catch (err) {
        this.o.logger.warn({ err, taskId }, 'task end watch failed');
      }
    })();
    return () => stop.abort();
  }
}

/**
 * The `ctx` of one execute. A class rather than an object literal built per task: a literal with getters
 * gets a hidden class of its own each time, and tsx compiles with esbuild `keepNames`, which turns every
 * named arrow created per task into an `Object.defineProperty` call (~0.5 µs each; a send made a dozen).
 * The public methods are bound once in the constructor, so `const { status } = ctx` keeps working.
 *
 * What execute reads is copied on first use: stored documents are shared and never edited (task-model.ts
 * draftOf), and most executes read only a field or two of them. What it passes in is copied at the call.
 */
class TaskContext implements ExecutionContext {
  readonly taskId: string;
  readonly contextId: string;
  /** Set once execute finished the task itself (complete/fail). */
  done = false;
  private readonly trigger: Message;
  private messageCopy: Message | undefined;
  private textOf: string | undefined;
  private dataCopy: { value: unknown } | undefined;
  private taskCopy: Task | undefined;
  private checkpointCopy: Record<string, unknown> | undefined;
  private childLogger: Logger | undefined;
  private askIndex = 0;
  private started = false;

  constructor(
    private readonly executions: Executions,
    private readonly o: ExecutionsOptions,
    private readonly entry: Live,
    private readonly exec: ExecutorState,
    private readonly stored: Task,
    readonly resumed: boolean,
  ) {
    this.taskId = stored.id;
    this.contextId = stored.contextId;
    this.trigger = triggerOf(exec, stored);
    this.status = this.status.bind(this);
    this.artifact = this.artifact.bind(this);
    this.askInput = this.askInput.bind(this);
    this.save = this.save.bind(this);
    this.sleep = this.sleep.bind(this);
    this.complete = this.complete.bind(this);
    this.fail = this.fail.bind(this);
  }

  get message(): Message {
    return (this.messageCopy ??= jsonCopy(this.trigger));
  }

  get text(): string {
    return (this.textOf ??= answerText(this.trigger));
  }

  get data(): unknown {
    if (this.dataCopy === undefined) {
      const data = answerData(this.trigger);
      this.dataCopy = { value: data === undefined ? undefined : jsonCopy(data) };
    }
    return this.dataCopy.value;
  }

  get task(): Task {
    return (this.taskCopy ??= jsonCopy(this.stored));
  }

  get checkpoint(): Record<string, unknown> | undefined {
    const saved = this.exec.checkpoint;
    return saved && (this.checkpointCopy ??= jsonCopy(saved));
  }

  get signal(): AbortSignal {
    return this.entry.controller.signal;
  }

  /** A pino child costs a bindings object per task; most executes never log. */
  get logger(): Logger {
    return (this.childLogger ??= this.o.logger.child({ taskId: this.taskId }));
  }

  status(text: string): Promise<void> {
    return this.write((d) => {
      setStatus(d.task, 'TASK_STATE_WORKING', this.o.clock.now(), this.executions.msg(d, text));
      return { events: [statusEvent(d.task)] };
    });
  }

  async artifact(chunk: ArtifactChunk): Promise<string> {
    const artifactId = chunk.artifactId ?? newId(this.o.clock, this.o.random, 'art_');
    const artifact: Artifact = { artifactId, parts: jsonCopy(chunk.parts) };
    if (chunk.name !== undefined) artifact.name = chunk.name;
    if (chunk.description !== undefined) artifact.description = chunk.description;
    if (chunk.metadata !== undefined) artifact.metadata = jsonCopy(chunk.metadata);
    await this.write((d) => {
      const update: TaskArtifactUpdateEvent = {
        taskId: this.taskId,
        contextId: d.task.contextId,
        artifact,
        ...(chunk.append ? { append: true } : {}),
        ...(chunk.lastChunk ? { lastChunk: true } : {}),
      };
      applyArtifact(d.task, update);
      return { events: [{ artifactUpdate: update }] };
    });
    return artifactId;
  }

  async askInput(prompt: string): Promise<InputAnswer> {
    const { clock, store, inputTimeoutMs } = this.o;
    const { taskId, entry, executions } = this;
    const index = this.askIndex++;
    const current = await store.getAgentTask(taskId);
    const given = current ? executorStateOf(current).inputs[index] : undefined;
    if (given) return answerOf(jsonCopy(given)); // replay on a resumed run
    const answer = new Promise<Message>((resolve, reject) => {
      entry.waiting = { index, resolve, reject };
    });
    answer.catch(() => undefined);
    const deadlineAt = clock.now() + inputTimeoutMs;
    await this.write((d) => {
      const message = executions.msg(d, prompt);
      d.executor.pendingInput = { index, prompt, askedAt: clock.now(), deadlineAt };
      setStatus(d.task, 'TASK_STATE_INPUT_REQUIRED', clock.now(), message);
      (d.task.history ??= []).push(message);
      return { events: [statusEvent(d.task)] };
    });
    executions.armInputTimeout(taskId, index, deadlineAt);
    const stopWatch = executions.watchForAnswer(taskId, index, entry);
    try {
      return answerOf(jsonCopy(await answer));
    } finally {
      stopWatch();
    }
  }

  save(checkpoint: Record<string, unknown>): Promise<void> {
    const saved = jsonCopy(checkpoint);
    return this.write((d) => {
      d.executor.checkpoint = saved;
      return { events: [] };
    });
  }

  sleep(ms: number): Promise<void> {
    return this.o.clock.sleep(ms, this.entry.controller.signal);
  }

  async complete(message?: string | Part[]): Promise<void> {
    if (this.entry.stopped) throw this.entry.stopped;
    this.done = true;
    await this.executions.finish(this.taskId, 'TASK_STATE_COMPLETED', message);
  }

  async fail(reason: string): Promise<void> {
    if (this.entry.stopped) throw this.entry.stopped;
    this.done = true;
    await this.executions.finish(this.taskId, 'TASK_STATE_FAILED', reason);
  }

  private async write(mutate: Mutate): Promise<void> {
    if (this.entry.stopped) throw this.entry.stopped;
    await this.o.writer.update(this.taskId, (d) => this.apply(d, mutate));
  }

  /** A change made by execute: refused on a finished task; the first one also moves SUBMITTED → WORKING. */
  private apply(d: TaskDraft, mutate: Mutate): TaskChange {
    const state = d.task.status.state;
    if (isTerminalTaskState(state)) throw new TaskClosedError(state);
    const events: StoredEvent[] = [];
    if (state === 'TASK_STATE_SUBMITTED') {
      setStatus(d.task, 'TASK_STATE_WORKING', this.o.clock.now());
      events.push(statusEvent(d.task));
    }
    if (!this.started) {
      this.started = true;
      d.executor.runs = (d.executor.runs ?? 0) + 1;
    }
    const change = mutate(d);
    if (change) events.push(...change.events);
    return { events };
  }
}
