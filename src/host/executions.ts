import { SpanStatusCode, trace } from '@opentelemetry/api';
import { newId } from '../core/ids.ts';
import type { AgentTaskRecord } from '../store/store.ts';
import { isTerminalTaskState, type Message, type Part, type TaskState } from '../protocols/a2a/types.ts';
import type { AgentDefinition } from './agent-api.ts';
import {
  agentMessage,
  executorStateOf,
  jsonCopy,
  payloadState,
  setStatus,
  type StoredEvent,
  statusEvent,
  taskOf,
} from './task-model.ts';
import type { TaskFeed } from './task-feed.ts';
import type { McpTaskState } from './task-model.ts';
import { ToolProtocolError } from './tool-api.ts';
import { ToolCallContext, type ToolCallInput, toolError, toolOf, toolResult } from './tool-runner.ts';
import type { TaskDraft } from './task-writer.ts';
import {
  TaskClosedError,
  TaskContext,
  type ExecutionHost,
  type Live,
  type TaskContextDeps,
} from './task-context.ts';

export interface ExecutionsOptions extends TaskContextDeps {
  agent: AgentDefinition;
  /** Watches for answers written by another host process (shared PostgreSQL). */
  feed: TaskFeed;
  /**
   * How long close() waits for executes to return after their signal fired. @default 10000
   */
  shutdownGraceMs?: number;
}

/**
 * Runs agents' execute functions for tasks, turning ctx calls into durable task writes, and owns the
 * two things that outlive a call: the pending input request (its answer and its timeout) and restart
 * recovery.
 */
/**
 * The agent's execute (or an MCP tool's run) in a span: a child of the trace the task's first request
 * carried (host-app.ts makes it the active context), a new trace after a restart resumes it. A no-op
 * without an SDK.
 */
function inExecuteSpan<T>(taskId: string, fn: () => Promise<T>, tool?: string): Promise<T> {
  const attributes = {
    'taskplane.task_id': taskId,
    ...(tool !== undefined ? { 'taskplane.tool': tool } : {}),
  };
  return trace.getTracer('taskplane').startActiveSpan('taskplane execute', { attributes }, async (span) => {
    try {
      return await fn();
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : 'error' });
      throw err;
    } finally {
      span.end();
    }
  });
}

export class Executions implements ExecutionHost {
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

  /**
   * Stops every execute (host shutdown): they see their signal fire; tasks stay as stored for recovery.
   * Waits for them to return, at most `shutdownGraceMs`: an execute that ignores its signal must not
   * hold the process forever. Its context refuses every write from the abort on, so one still running
   * after close changes nothing stored; its task resumes on the next start or on another host.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const cancel of this.timers.values()) cancel();
    this.timers.clear();
    for (const entry of this.live.values()) {
      entry.stopped = new TaskClosedError('shutdown');
      entry.controller.abort(entry.stopped);
      entry.waiting?.reject(new TaskClosedError('shutdown'));
    }
    if (this.running.size === 0) return;
    const graceMs = this.o.shutdownGraceMs ?? 10_000;
    let cancel: (() => void) | undefined;
    const late = await Promise.race([
      Promise.allSettled([...this.running]).then(() => false),
      new Promise<boolean>((resolve) => {
        cancel = this.o.clock.setTimer(graceMs, () => resolve(true));
      }),
    ]);
    cancel?.();
    if (late)
      this.o.logger.warn(
        { taskIds: [...this.live.keys()], graceMs },
        'shutdown: these executes did not return within the grace period after their abort signal fired; ' +
          'stopping without them (their tasks stay stored and resume on the next start)',
      );
  }

  /**
   * Another host took the task over (it found this host dead: a cut database session, an expired
   * lease): stop its execute and input timeout here; that host runs it now.
   */
  takenOver(taskId: string, host: string): void {
    if (!this.isTracked(taskId)) return;
    this.o.logger.warn({ taskId, host }, 'task taken over by another host; stopping it here');
    this.abort(taskId, `taken over by host ${host}`);
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
      // A host that took the task over re-armed the timeout from the same stored deadline: its to fire.
      if (d.executor.host !== undefined && d.executor.host !== this.o.hostId) return null;
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

  /**
   * Writes a terminal state unless the task is already terminal. `mcp` is what an MCP tool task ends
   * with (its result or error), merged into its McpTaskState.
   */
  async finish(
    taskId: string,
    state: TaskState,
    text?: string | Part[],
    mcp?: Pick<McpTaskState, 'result' | 'error'>,
  ): Promise<boolean> {
    const parts = typeof text === 'string' ? [{ text }] : text && jsonCopy(text);
    let takenBy: string | undefined;
    const result = await this.o.writer.update(taskId, (d) => {
      if (isTerminalTaskState(d.task.status.state)) return null;
      // The fence (TaskContext.apply): the outcome of a task another host runs now is that host's to write.
      if (d.executor.host !== undefined && d.executor.host !== this.o.hostId) {
        takenBy = d.executor.host;
        return null;
      }
      delete d.executor.pendingInput;
      if (d.executor.mcp) {
        const { requests: _r, answers: _a, ...rest } = d.executor.mcp;
        d.executor.mcp = { ...rest, ...(mcp ?? {}) };
      }
      const message =
        parts && parts.length > 0
          ? agentMessage(d.task, newId(this.o.clock, this.o.random, 'msg_'), parts)
          : undefined;
      setStatus(d.task, state, this.o.clock.now(), message);
      if (message) (d.task.history ??= []).push(message);
      return { events: [statusEvent(d.task)] };
    });
    if (takenBy !== undefined) this.takenOver(taskId, takenBy);
    if (result.written) this.clearTimer(taskId);
    return result.written;
  }

  private async run(record: AgentTaskRecord, resumed: boolean, entry: Live): Promise<void> {
    const { logger } = this.o;
    const taskId = record.id;
    // No write of its own here: SUBMITTED → WORKING rides on the executor's first change (one fsync
    // fewer per task; a trivial agent goes SUBMITTED → COMPLETED in one write).
    if (isTerminalTaskState(record.state)) return;
    const exec = executorStateOf(record);
    const ctx = new TaskContext(this, this.o, entry, exec, taskOf(record), resumed);
    if (exec.mcp) return this.runTool(taskId, exec.mcp, ctx, entry);
    const stopWatch = this.watchForEnd(taskId);
    try {
      if (!this.o.agent.execute) {
        await this.finish(taskId, 'TASK_STATE_FAILED', 'This agent serves MCP tools only (at /mcp).');
        return;
      }
      const execute = this.o.agent.execute.bind(this.o.agent);
      const result = await inExecuteSpan(taskId, () => execute(ctx));
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
   * An MCP tool call (tool-api.ts): the tool's run with the task's context. A returned result ends the
   * task completed (a tool error too: `isError` rides in the result); a thrown ToolProtocolError or any
   * other error ends it failed with a JSON-RPC error, never with internal text.
   */
  private async runTool(taskId: string, mcp: McpTaskState, ctx: TaskContext, entry: Live): Promise<void> {
    const { logger } = this.o;
    const tool = toolOf(this.o.agent, mcp.tool);
    if (!tool) {
      await this.finish(taskId, 'TASK_STATE_FAILED', 'This tool is no longer served.', {
        error: { code: -32602, message: `Unknown tool: ${mcp.tool}` },
      });
      return;
    }
    const stopWatch = this.watchForEnd(taskId);
    try {
      const out = await inExecuteSpan(
        taskId,
        () => tool.run(new ToolCallContext(ctx, ctx.data as ToolCallInput)),
        mcp.tool,
      );
      if (!entry.stopped)
        await this.finish(taskId, 'TASK_STATE_COMPLETED', undefined, { result: toolResult(out) });
    } catch (err) {
      if (entry.stopped || err instanceof TaskClosedError) return;
      if (!(err instanceof ToolProtocolError))
        logger.error({ err, taskId, tool: mcp.tool }, 'tool run threw');
      const error = toolError(err);
      await this.finish(taskId, 'TASK_STATE_FAILED', error.message, { error }).catch((e: unknown) =>
        logger.error({ err: e, taskId }, 'could not record the failure'),
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
