import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { newId } from '../core/ids.ts';
import type { Random } from '../core/random.ts';
import type { AgentTaskRecord, Store } from '../store/store.ts';
import {
  isTerminalTaskState,
  type Message,
  type Part,
  type Task,
  type TaskState,
} from '../protocols/a2a/types.ts';
import type { AgentDefinition, ArtifactChunk, ExecutionContext, InputAnswer } from './agent-api.ts';
import {
  agentMessage,
  applyArtifact,
  executorStateOf,
  jsonCopy,
  payloadState,
  setStatus,
  type StoredEvent,
  statusEvent,
  taskOf,
} from './task-model.ts';
import type { TaskFeed } from './task-feed.ts';
import type { Mutate, TaskDraft, TaskWriter } from './task-writer.ts';

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
  const text = message.parts.flatMap((p) => (p.text !== undefined ? [p.text] : [])).join('\n');
  const data = message.parts.find((p) => p.data !== undefined)?.data;
  return { message, text, data };
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
  private watchForAnswer(taskId: string, index: number, entry: Live): () => void {
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
    const { clock, writer, logger } = this.o;
    const taskId = record.id;
    // No write of its own here: SUBMITTED → WORKING rides on the executor's first change (one fsync
    // fewer per task; a trivial agent goes SUBMITTED → COMPLETED in one write).
    if (isTerminalTaskState(record.state)) return;
    const exec = executorStateOf(record);
    const task = taskOf(record);
    let askIndex = 0;
    let done = false;
    let started = false;
    const guard = (d: TaskDraft) => {
      if (isTerminalTaskState(d.task.status.state)) throw new TaskClosedError(d.task.status.state);
    };
    const write = async (mutate: Mutate) => {
      if (entry.stopped) throw entry.stopped;
      await writer.update(taskId, (d) => {
        guard(d);
        const pre = [];
        if (d.task.status.state === 'TASK_STATE_SUBMITTED') {
          setStatus(d.task, 'TASK_STATE_WORKING', clock.now());
          pre.push(statusEvent(d.task));
        }
        if (!started) {
          started = true;
          d.executor.runs = (d.executor.runs ?? 0) + 1;
        }
        const change = mutate(d);
        return { events: [...pre, ...(change?.events ?? [])] };
      });
    };
    let childLogger: Logger | undefined;
    // What execute reads is copied on first use: stored documents are shared and never edited
    // (task-model.ts draftOf), and most executes read only a field or two of them.
    let first: InputAnswer | undefined;
    const trigger = () => (first ??= answerOf(jsonCopy(exec.trigger)));
    let taskCopy: Task | undefined;
    let checkpointCopy: Record<string, unknown> | undefined;
    const ctx: ExecutionContext = {
      taskId,
      contextId: task.contextId,
      get message() {
        return trigger().message;
      },
      get text() {
        return trigger().text;
      },
      get data() {
        return trigger().data;
      },
      get task() {
        return (taskCopy ??= jsonCopy(task));
      },
      resumed,
      get checkpoint() {
        return exec.checkpoint && (checkpointCopy ??= jsonCopy(exec.checkpoint));
      },
      get signal() {
        return entry.controller.signal;
      },
      // A pino child costs a bindings object per task; most executes never log.
      get logger() {
        return (childLogger ??= logger.child({ taskId }));
      },
      status: (text) =>
        write((d) => {
          setStatus(d.task, 'TASK_STATE_WORKING', clock.now(), this.msg(d, text));
          return { events: [statusEvent(d.task)] };
        }),
      artifact: async (chunk: ArtifactChunk) => {
        const artifactId = chunk.artifactId ?? newId(clock, this.o.random, 'art_');
        const parts = jsonCopy(chunk.parts);
        const metadata = chunk.metadata !== undefined ? jsonCopy(chunk.metadata) : undefined;
        await write((d) => {
          const update = {
            taskId,
            contextId: d.task.contextId,
            artifact: {
              artifactId,
              parts,
              ...(chunk.name !== undefined ? { name: chunk.name } : {}),
              ...(chunk.description !== undefined ? { description: chunk.description } : {}),
              ...(metadata !== undefined ? { metadata } : {}),
            },
            ...(chunk.append ? { append: true } : {}),
            ...(chunk.lastChunk ? { lastChunk: true } : {}),
          };
          applyArtifact(d.task, update);
          return { events: [{ artifactUpdate: update }] };
        });
        return artifactId;
      },
      askInput: async (prompt) => {
        const index = askIndex++;
        const current = await this.o.store.getAgentTask(taskId);
        const given = current ? executorStateOf(current).inputs[index] : undefined;
        if (given) return answerOf(jsonCopy(given)); // replay on a resumed run
        const answer = new Promise<Message>((resolve, reject) => {
          entry.waiting = { index, resolve, reject };
        });
        answer.catch(() => undefined);
        const deadlineAt = clock.now() + this.o.inputTimeoutMs;
        await write((d) => {
          const message = this.msg(d, prompt);
          d.executor.pendingInput = { index, prompt, askedAt: clock.now(), deadlineAt };
          setStatus(d.task, 'TASK_STATE_INPUT_REQUIRED', clock.now(), message);
          (d.task.history ??= []).push(message);
          return { events: [statusEvent(d.task)] };
        });
        this.armInputTimeout(taskId, index, deadlineAt);
        const stopWatch = this.watchForAnswer(taskId, index, entry);
        try {
          return answerOf(jsonCopy(await answer));
        } finally {
          stopWatch();
        }
      },
      save: (checkpoint) => {
        const saved = jsonCopy(checkpoint);
        return write((d) => {
          d.executor.checkpoint = saved;
          return { events: [] };
        });
      },
      sleep: (ms) => clock.sleep(ms, entry.controller.signal),
      complete: async (message) => {
        if (entry.stopped) throw entry.stopped;
        done = true;
        await this.finish(taskId, 'TASK_STATE_COMPLETED', message);
      },
      fail: async (reason) => {
        if (entry.stopped) throw entry.stopped;
        done = true;
        await this.finish(taskId, 'TASK_STATE_FAILED', reason);
      },
    };
    const stopWatch = this.watchForEnd(taskId);
    try {
      const result = await this.o.agent.execute(ctx);
      if (!done && !entry.stopped) await this.finish(taskId, 'TASK_STATE_COMPLETED', result ?? undefined);
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
