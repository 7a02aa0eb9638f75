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
/**
 * Where the store can tell a dead host (ownerLiveness): how often a host asks it whether one died (one
 * read of the few lease owners, Store.deadLeaseOwners), so a killed host's tasks move within seconds.
 */
export const DEAD_HOST_PROBE_MS = 2000;

export const NOT_RESUMABLE_REASON =
  'The agent host restarted while this task was in progress and this agent cannot resume work; send the request again.';

/**
 * Restart recovery: every non-terminal task whose host is gone (this process before a
 * restart, or another host that is dead: its lease expired or its database session ended) is taken
 * over and either resumed (the agent is resumable: execute runs again with the stored task) or failed
 * with a reason a client can read, so nothing stays WORKING forever. A task waiting for input keeps
 * waiting, its timeout re-armed from the stored deadline. Runs at start and then every sweep interval,
 * so a crashed peer's tasks are picked up by the hosts still running; where the store can tell a dead
 * host at once (ownerLiveness), also as soon as the probe every DEAD_HOST_PROBE_MS names a newly dead
 * lease owner. The takeover is a CAS write that checks the task's host did not change, so two hosts
 * sweeping at once cannot both take a task, and the old host's next write of the task is refused
 * (TaskContext.apply): a sweep that finds a task this process still runs recorded for another host
 * stops it here.
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
      /** @default DEAD_HOST_PROBE_MS, at most sweepMs; only where the store has ownerLiveness */
      probeMs?: number;
    },
  ) {}

  /** Dead lease owners seen by the last probe: a sweep runs only when one is new. */
  private deadSeen = new Set<string>();

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
    const exec = executorStateOf(record);
    const owner = exec?.host;
    if (executions.isTracked(record.id)) {
      // Recorded for another host while it runs here: taken over while this host was thought dead (a
      // cut session). Read again first: the list may predate this host's own takeover of the task.
      if (owner === undefined || owner === me) return;
      const now = await this.o.store.getAgentTask(record.id);
      const host = now ? executorStateOf(now).host : undefined;
      if (host !== undefined && host !== me) executions.takenOver(record.id, host);
      return;
    }
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

  /**
   * Sweeps again every interval (crashed peers' tasks), one sweep at a time. Where the store can tell a
   * dead host (ownerLiveness), a probe every DEAD_HOST_PROBE_MS asks which lease owners died and sweeps
   * at once when one is new: one indexed read per probe, no per-task work while every host lives.
   */
  startSweeps(): void {
    const { clock, store, logger, liveness } = this.o;
    const every = this.o.sweepMs ?? liveness.ttlMs;
    const probe = liveness.sessionTied
      ? Math.max(1, Math.min(every, this.o.probeMs ?? DEAD_HOST_PROBE_MS))
      : every;
    let lastSweep = clock.now();
    const due = async (): Promise<boolean> => {
      if (clock.now() - lastSweep >= every || probe === every) return true;
      const dead = await store.deadLeaseOwners();
      const fresh = dead.filter((owner) => !this.deadSeen.has(owner));
      // Forget owners no longer dead: a host that comes back and dies again is new again.
      this.deadSeen = new Set(dead);
      if (fresh.length > 0) logger.info({ owners: fresh }, 'a lease owner died; sweeping for its tasks');
      return fresh.length > 0;
    };
    const tick = () => {
      this.cancel = clock.setTimer(probe, () => {
        if (this.stopped) return;
        this.running = due()
          .then(async (sweep) => {
            if (!sweep) return;
            lastSweep = clock.now();
            const c = await this.recover();
            if (c.resumed + c.failed + c.waiting > 0)
              logger.info({ recovered: c }, 'took over tasks of a stopped host');
          })
          .catch((err: unknown) => logger.warn({ err }, 'recovery sweep failed'))
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
