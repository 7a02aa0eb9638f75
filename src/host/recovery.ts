import type { Logger } from '../core/logger.ts';
import type { Clock } from '../core/clock.ts';
import type { AgentTaskRecord, AgentTaskStore } from '../store/store.ts';
import { isTerminalTaskState } from '../protocols/a2a/types.ts';
import type { AgentDefinition } from './agent-api.ts';
import type { Executions } from './executions.ts';
import type { HostLiveness } from './host-liveness.ts';
import { executorStateOf, setStatus, statusEvent } from './task-model.ts';
import type { TaskWriter } from './task-writer.ts';
import { isResumable } from './tool-runner.ts';

export interface RecoveryCounts {
  resumed: number;
  failed: number;
  waiting: number;
}

/** Takeover writes in flight at once during a sweep. */
const RECOVERY_CONCURRENCY = 32;

export const NOT_RESUMABLE_REASON =
  'The agent host restarted while this task was in progress and this agent cannot resume work; send the request again.';

/**
 * Restart recovery: every non-terminal task whose host is gone (this process before a
 * restart, or another host whose lease expired) is taken over and either resumed (the agent is
 * resumable: execute runs again with the stored task) or failed with a reason a client can read, so
 * nothing stays WORKING forever. A task waiting for input keeps waiting, its timeout re-armed from the
 * stored deadline. Runs at start and then every sweep interval, so a crashed peer's tasks are picked up
 * by the hosts still running. The takeover is a CAS write that checks the task's host did not change,
 * so two hosts sweeping at once cannot both take a task.
 */
export class Recovery {
  private cancel: (() => void) | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly o: {
      store: AgentTaskStore;
      writer: TaskWriter;
      clock: Clock;
      executions: Executions;
      liveness: HostLiveness;
      agent: AgentDefinition;
      logger: Logger;
      /** @default the liveness ttl */
      sweepMs?: number;
    },
  ) {}

  async recover(): Promise<RecoveryCounts> {
    const counts: RecoveryCounts = { resumed: 0, failed: 0, waiting: 0 };
    const { store, liveness } = this.o;
    // One liveness probe per host per sweep, not one per task (the promise is cached, so tasks taken
    // over concurrently share it).
    const alive = new Map<string, Promise<boolean>>();
    const isAlive = (host: string | undefined): Promise<boolean> => {
      if (host === undefined) return Promise.resolve(false);
      let known = alive.get(host);
      if (known === undefined) alive.set(host, (known = liveness.isAlive(host)));
      return known;
    };
    // Takeovers run side by side, a bounded number at a time: each is a durable write, and writes that
    // are in flight together share a commit (the store's group commit), so a restart with many unfinished
    // tasks costs a few fsyncs rather than one per task before the host is ready.
    const records = await store.listActiveAgentTasks();
    let next = 0;
    const worker = async () => {
      while (next < records.length) await this.recoverOne(records[next++]!, counts, isAlive);
    };
    await Promise.all(Array.from({ length: Math.min(RECOVERY_CONCURRENCY, records.length) }, worker));
    return counts;
  }

  private async recoverOne(
    record: AgentTaskRecord,
    counts: RecoveryCounts,
    isAlive: (host: string | undefined) => Promise<boolean>,
  ): Promise<void> {
    const { writer, clock, executions, liveness, agent } = this.o;
    const me = liveness.hostId;
    if (executions.isTracked(record.id)) return;
    const exec = executorStateOf(record);
    const owner = exec?.host;
    if (owner !== me && (await isAlive(owner))) return;
    const stillOwned = (host: string | undefined) => host === owner;
    const resumable = isResumable(agent, exec?.mcp);
    if (record.state === 'TASK_STATE_INPUT_REQUIRED' && exec?.pendingInput && resumable) {
      const taken = await writer.update(record.id, (d) => {
        if (
          d.task.status.state !== 'TASK_STATE_INPUT_REQUIRED' ||
          !stillOwned(d.executor.host) ||
          d.executor.host === me
        )
          return null;
        d.executor.host = me;
        return { events: [] };
      });
      const current = executorStateOf(taken.record);
      const pending =
        current.host === me && taken.record.state === 'TASK_STATE_INPUT_REQUIRED'
          ? current.pendingInput
          : undefined;
      if (pending) {
        executions.armInputTimeout(record.id, pending.index, pending.deadlineAt);
        counts.waiting++;
      }
      return;
    }
    if (resumable && exec) {
      const taken = await writer.update(record.id, (d) => {
        if (isTerminalTaskState(d.task.status.state) || !stillOwned(d.executor.host)) return null;
        d.executor.host = me;
        setStatus(
          d.task,
          'TASK_STATE_WORKING',
          clock.now(),
          executions.msg(d, 'Resumed after an agent host restart.'),
        );
        return { events: [statusEvent(d.task)] };
      });
      if (taken.written) {
        executions.start(taken.record, true);
        counts.resumed++;
      }
      return;
    }
    const failed = await writer.update(record.id, (d) => {
      if (isTerminalTaskState(d.task.status.state) || !stillOwned(d.executor?.host)) return null;
      delete d.executor.pendingInput;
      const message = executions.msg(d, NOT_RESUMABLE_REASON);
      setStatus(d.task, 'TASK_STATE_FAILED', clock.now(), message);
      (d.task.history ??= []).push(message);
      return { events: [statusEvent(d.task)] };
    });
    if (failed.written) counts.failed++;
  }

  /** Sweeps again every interval (crashed peers' tasks), one sweep at a time. */
  startSweeps(): void {
    const every = this.o.sweepMs ?? this.o.liveness.ttlMs;
    const tick = () => {
      this.cancel = this.o.clock.setTimer(every, () => {
        if (this.stopped) return;
        this.running = this.recover()
          .then((c) => {
            if (c.resumed + c.failed + c.waiting > 0)
              this.o.logger.info({ recovered: c }, 'took over tasks of a stopped host');
          })
          .catch((err: unknown) => this.o.logger.warn({ err }, 'recovery sweep failed'))
          .finally(() => {
            if (!this.stopped) tick();
          });
      });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancel?.();
    await this.running;
  }
}
