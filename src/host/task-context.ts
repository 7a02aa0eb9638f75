import type { Logger } from '../core/logger.ts';
import type { Clock } from '../core/clock.ts';
import { newId } from '../core/ids.ts';
import type { Random } from '../core/random.ts';
import type { AgentTaskStore } from '../store/store.ts';
import {
  isTerminalTaskState,
  type Artifact,
  type Message,
  type Part,
  type Task,
  type TaskArtifactUpdateEvent,
  type TaskState,
} from '../protocols/a2a/types.ts';
import type { ArtifactChunk, ExecutionContext, InputAnswer, StepAttempt, StepOptions } from './agent-api.ts';
import { checkStepName, runStep, stepKeyOf } from './steps.ts';
import {
  applyArtifact,
  type ExecutorState,
  executorStateOf,
  jsonCopy,
  setStatus,
  type StepRecord,
  type StoredEvent,
  statusEvent,
  triggerOf,
} from './task-model.ts';
import type { Mutate, TaskChange, TaskDraft, TaskWriter } from './task-writer.ts';

/** Thrown inside an execution whose task was finished by someone else (cancel, timeout). */
export class TaskClosedError extends Error {
  constructor(readonly state: string) {
    super(`task is ${state}`);
    this.name = 'TaskClosedError';
  }
}

/**
 * Thrown at a write of an execution whose task another host took over (it decided this host was dead:
 * a lost database session, a lease that expired). The write is refused, so the stored task holds only
 * the new host's work, and this execution stops.
 */
export class TaskTakenOverError extends TaskClosedError {
  constructor(readonly host: string) {
    super(`taken over by host ${host}`);
    this.name = 'TaskTakenOverError';
  }
}

export interface Live {
  controller: AbortController;
  /**
   * Why the execute was stopped, set just before the controller aborts. Checked instead of
   * `controller.signal.aborted`: Node creates a controller's AbortSignal on first access, a cost visible
   * in the host's send bench for a signal a quick execute never looks at.
   */
  stopped?: TaskClosedError;
  waiting?: { index: number; resolve: (m: Message) => void; reject: (e: unknown) => void };
}

/** What a TaskContext needs of the host (ExecutionsOptions is one). */
export interface TaskContextDeps {
  store: AgentTaskStore;
  writer: TaskWriter;
  clock: Clock;
  random: Random;
  logger: Logger;
  /** @default 900000 (15 min, the lab's figure) */
  inputTimeoutMs: number;
  /** The store's step-key secret (steps.ts loadStepKeySecret). */
  stepKeySecret: string;
  /** This host process (executorState.host of the tasks it runs). */
  hostId: string;
}

/** What a TaskContext asks of the Executions that runs it. */
export interface ExecutionHost {
  msg(d: TaskDraft, text: string): Message;
  finish(taskId: string, state: TaskState, text?: string | Part[]): Promise<boolean>;
  armInputTimeout(taskId: string, index: number, deadlineAt: number): void;
  watchForAnswer(taskId: string, index: number, entry: Live): () => void;
  /** Another host runs the task now: stop this execution. */
  takenOver(taskId: string, host: string): void;
}

function answerOf(message: Message): InputAnswer {
  return { message, text: answerText(message), data: answerData(message) };
}

/** A message's text parts joined with newlines. */
export function answerText(message: Message): string {
  return message.parts.flatMap((p) => (p.text !== undefined ? [p.text] : [])).join('\n');
}

/** A message's first data part's value. */
export function answerData(message: Message): unknown {
  return message.parts.find((p) => p.data !== undefined)?.data;
}

/**
 * The `ctx` of one execute. A class rather than an object literal built per task: a literal with getters
 * gets a hidden class of its own each time, and its methods would be new closures per task. The public
 * methods are bound once in the constructor, so `const { status } = ctx` keeps working.
 *
 * What execute reads is copied on first use: stored documents are shared and never edited (task-model.ts
 * draftOf), and most executes read only a field or two of them. What it passes in is copied at the call.
 */
export class TaskContext implements ExecutionContext {
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
  /** Step outcomes journaled in this run, over those of `exec` (the journal as execute started). */
  private stepsDone: Map<string, StepRecord> | undefined;
  /** Steps running now, by name: a second call with the same name waits for the first. */
  private stepsRunning: Map<string, Promise<unknown>> | undefined;

  constructor(
    private readonly executions: ExecutionHost,
    private readonly o: TaskContextDeps,
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
    this.step = this.step.bind(this);
    this.stepKey = this.stepKey.bind(this);
    this.complete = this.complete.bind(this);
    this.fail = this.fail.bind(this);
    this.reject = this.reject.bind(this);
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

  /**
   * MCP input (tool-api.ts ToolContext.ask): the task goes `input_required` with these keyed requests
   * and resumes once every key is answered (mcp-service.ts writes the answers, partial ones included,
   * and completes the round as an A2A follow-up would: inputs[index], then Executions.answered). So
   * the timeout, replay on resume and the cross-host answer watch are askInput's own.
   */
  async askKeyed(requests: Record<string, unknown>): Promise<Record<string, unknown>> {
    const { clock, store, inputTimeoutMs } = this.o;
    const { taskId, entry, executions } = this;
    const index = this.askIndex++;
    const current = await store.getAgentTask(taskId);
    const exec = current ? executorStateOf(current) : undefined;
    const given = exec?.inputs[index];
    if (given) return jsonCopy(answerData(given) as Record<string, unknown>); // replay on a resumed run
    const keys = Object.keys(requests);
    if (keys.length === 0) throw new TypeError('ask needs at least one input request');
    const used = new Set(exec?.mcp?.usedKeys ?? []);
    const reused = keys.find((k) => used.has(k));
    if (reused !== undefined) throw new TypeError(`input request key ${reused} was used before in this task`);
    const copy = jsonCopy(requests);
    const answer = new Promise<Message>((resolve, reject) => {
      entry.waiting = { index, resolve, reject };
    });
    answer.catch(() => undefined);
    const deadlineAt = clock.now() + inputTimeoutMs;
    await this.write((d) => {
      const mcp = d.executor.mcp;
      if (!mcp) throw new TypeError('not an MCP task');
      d.executor.pendingInput = { index, prompt: '', askedAt: clock.now(), deadlineAt };
      d.executor.mcp = { ...mcp, usedKeys: [...(mcp.usedKeys ?? []), ...keys], requests: copy, answers: {} };
      setStatus(d.task, 'TASK_STATE_INPUT_REQUIRED', clock.now());
      return { events: [statusEvent(d.task)] };
    });
    executions.armInputTimeout(taskId, index, deadlineAt);
    const stopWatch = executions.watchForAnswer(taskId, index, entry);
    try {
      return jsonCopy(answerData(await answer) as Record<string, unknown>);
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

  step<T>(name: string, fn: (attempt: StepAttempt) => T | Promise<T>, options?: StepOptions): Promise<T> {
    const key = this.stepKey(name);
    const running = (this.stepsRunning ??= new Map()).get(name);
    if (running) return running.then(() => this.step(name, fn, options));
    const recorded = this.stepsDone?.get(name) ?? this.exec.steps?.[name];
    const run = runStep(name, key, fn, options, recorded, {
      clock: this.o.clock,
      random: this.o.random,
      signal: this.entry.controller.signal,
      stopped: () => this.entry.stopped !== undefined,
      write: async (mutate) => {
        let entry: StepRecord | undefined;
        await this.write((d) => {
          const change = mutate(d);
          entry = d.executor.steps?.[name];
          return change;
        });
        // Only once durable: a later call with this name in this run replays what a restart would.
        if (entry && entry.state !== 'running') (this.stepsDone ??= new Map()).set(name, entry);
      },
    });
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.stepsRunning.set(name, settled);
    void settled.then(() => this.stepsRunning?.delete(name));
    return run;
  }

  stepKey(name: string): string {
    return stepKeyOf(this.o.stepKeySecret, this.taskId, checkStepName(name));
  }

  async complete(message?: string | Part[]): Promise<void> {
    if (this.entry.stopped) throw this.entry.stopped;
    this.done = true;
    await this.executions.finish(this.taskId, 'TASK_STATE_COMPLETED', message);
  }

  async reject(reason: string): Promise<void> {
    if (this.entry.stopped) throw this.entry.stopped;
    this.done = true;
    await this.executions.finish(this.taskId, 'TASK_STATE_REJECTED', reason);
  }

  async fail(reason: string): Promise<void> {
    if (this.entry.stopped) throw this.entry.stopped;
    this.done = true;
    await this.executions.finish(this.taskId, 'TASK_STATE_FAILED', reason);
  }

  private async write(mutate: Mutate): Promise<void> {
    if (this.entry.stopped) throw this.entry.stopped;
    try {
      await this.o.writer.update(this.taskId, (d) => this.apply(d, mutate));
    } catch (err) {
      if (err instanceof TaskTakenOverError) this.executions.takenOver(this.taskId, err.host);
      throw err;
    }
  }

  /**
   * A change made by execute: refused on a finished task; the first one also moves SUBMITTED → WORKING,
   * unless it is itself a WORKING status (`ctx.status` first): then that one event says it, with its
   * message, and a client never sees WORKING twice for one change.
   */
  private apply(d: TaskDraft, mutate: Mutate): TaskChange {
    const state = d.task.status.state;
    if (isTerminalTaskState(state)) throw new TaskClosedError(state);
    // The fence: a takeover is a versioned write naming the new host, so a write of the old one,
    // checked against the version it read, either comes before the takeover or sees it here.
    const host = d.executor.host;
    if (host !== undefined && host !== this.o.hostId) throw new TaskTakenOverError(host);
    let working: StoredEvent | undefined;
    if (state === 'TASK_STATE_SUBMITTED') {
      setStatus(d.task, 'TASK_STATE_WORKING', this.o.clock.now());
      working = statusEvent(d.task);
    }
    if (!this.started) {
      this.started = true;
      d.executor.runs = (d.executor.runs ?? 0) + 1;
    }
    const own = mutate(d)?.events ?? [];
    const first = own[0];
    if (
      !working ||
      (first && 'statusUpdate' in first && first.statusUpdate.status.state === 'TASK_STATE_WORKING')
    )
      return { events: own };
    return { events: [working, ...own] };
  }
}
