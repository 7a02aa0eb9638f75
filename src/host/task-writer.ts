import type { Clock } from '../core/clock.ts';
import { VersionConflictError } from '../core/errors.ts';
import { newId } from '../core/ids.ts';
import type { Random } from '../core/random.ts';
import type { AgentTaskRecord, AgentTaskStore, NewAgentTaskEvent, NewOutboxRow } from '../store/store.ts';
import { isTerminalTaskState, type Task } from '../protocols/a2a/types.ts';
import { type ExecutorState, type StoredEvent, draftOf, wirePayload } from './task-model.ts';

/** What a change to a task produces: the events to append (each also queued for every push config). */
export interface TaskChange {
  events: StoredEvent[];
}

/**
 * A draft the mutate function edits: the wire task and the executor bookkeeping, copied as draftOf
 * (task-model.ts) says. Replace fields, push to `history`/`artifacts`/`inputs` and to an artifact's
 * `parts`; never edit another nested object in place (it is shared with the stored record).
 */
export interface TaskDraft {
  task: Task;
  executor: ExecutorState;
  readonly record: AgentTaskRecord;
}

/**
 * Edits a draft and says which events that produced, or null for "nothing to write". It must throw,
 * if it throws, BEFORE changing the draft: it may share a write with other changes to the same task.
 */
export type Mutate = (draft: TaskDraft) => TaskChange | null;

export interface WriteResult {
  record: AgentTaskRecord;
  written: boolean;
  duplicate: boolean;
}

interface Pending {
  mutate: Mutate;
  messageId: string | undefined;
  resolve: (r: WriteResult) => void;
  reject: (e: unknown) => void;
}

const MAX_CAS_RETRIES = 8;
/** Changes to one task folded into one store write at most (bounds one transaction's size). */
const MAX_FOLD = 256;

/**
 * The one path by which the host changes a stored task. Each write is one Store call carrying the new
 * task, its events and the push outbox rows for those events (in the same transaction as the
 * state change). Changes to one task are serialized in process; changes queued while a write is in
 * flight are folded into the next write (a per-task group commit: an agent that publishes 1,000 status
 * updates without awaiting each pays a handful of fsyncs, not 1,000). Across processes the record
 * version guards every write (CAS; a conflict re-reads and re-applies the changes).
 */
export class TaskWriter {
  private readonly queues = new Map<string, Pending[]>();
  /** The last record this process wrote or read per active task: saves a read per write. */
  private readonly cache = new Map<string, AgentTaskRecord>();

  constructor(
    private readonly store: AgentTaskStore,
    private readonly clock: Clock,
    private readonly random: Random,
    /** Called after a write that queued push outbox rows (wakes the outbox worker). */
    readonly onOutboxRows: () => void = () => undefined,
  ) {}

  /** Seeds the cache with a record just created, saving the first write a read. */
  prime(record: AgentTaskRecord): void {
    if (!isTerminalTaskState(record.state)) this.cache.set(record.id, record);
  }

  /** Outbox rows for `events`, one per push config of the task (ordered per task+config by row id). */
  async outboxRows(taskId: string, events: StoredEvent[], at: number): Promise<NewOutboxRow[]> {
    if (events.length === 0) return [];
    const configs = await this.store.listPushConfigs(taskId);
    const rows: NewOutboxRow[] = [];
    for (const event of events) {
      for (const config of configs) {
        rows.push({
          taskId,
          configId: config.id,
          deliveryId: newId(this.clock, this.random, 'dlv_'),
          payload: wirePayload(event) as unknown as Record<string, unknown>,
          nextAttemptAt: at,
        });
      }
    }
    return rows;
  }

  /**
   * Applies `mutate` to the current task and writes the result. With `messageId`, the write also records
   * (owner, messageId) and is refused as a duplicate if that pair was used before.
   */
  update(taskId: string, mutate: Mutate, messageId?: string): Promise<WriteResult> {
    return new Promise((resolve, reject) => {
      let queue = this.queues.get(taskId);
      const start = !queue;
      if (!queue) this.queues.set(taskId, (queue = []));
      queue.push({ mutate, messageId, resolve, reject });
      if (start) void this.drain(taskId, queue);
    });
  }

  private async drain(taskId: string, queue: Pending[]): Promise<void> {
    while (queue.length > 0) {
      // A change carrying a messageId is written alone: its duplicate check decides only its own fate.
      const n = queue[0]!.messageId !== undefined ? 1 : Math.min(MAX_FOLD, indexOfMessage(queue));
      const batch = queue.splice(0, n);
      try {
        await this.write(taskId, batch);
      } catch (err) {
        this.cache.delete(taskId);
        for (const p of batch) p.reject(err);
      }
    }
    this.queues.delete(taskId);
  }

  private async write(taskId: string, batch: Pending[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const current = this.cache.get(taskId) ?? (await this.store.getAgentTask(taskId));
      if (!current) throw new Error(`agent task ${taskId} vanished`);
      const draft: TaskDraft = { ...draftOf(current), record: current };
      const events: StoredEvent[] = [];
      const outcomes: Outcome[] = [];
      for (const p of batch) {
        try {
          const change = p.mutate(draft);
          outcomes.push({ p, changed: change !== null });
          if (change) events.push(...change.events);
        } catch (error) {
          outcomes.push({ p, changed: false, error });
        }
      }
      if (!outcomes.some((o) => o.changed)) {
        settle(outcomes, current, false);
        return;
      }
      const now = this.clock.now();
      const version = current.version + 1;
      const stamped = events.map((e) => ({ ...e, _v: version }));
      const next: AgentTaskRecord = {
        ...current,
        task: draft.task as unknown as Record<string, unknown>,
        executorState: draft.executor as unknown as Record<string, unknown>,
        state: draft.task.status.state,
        statusTimestamp: Date.parse(draft.task.status.timestamp ?? '') || current.statusTimestamp,
        updatedAt: now,
      };
      const newEvents: NewAgentTaskEvent[] = stamped.map((payload) => ({ taskId, at: now, payload }));
      const outbox = draft.executor.pushConfigs === false ? [] : await this.outboxRows(taskId, stamped, now);
      try {
        const result = await this.store.updateAgentTask(
          next,
          current.version,
          newEvents,
          outbox,
          batch.length === 1 ? batch[0]!.messageId : undefined,
        );
        if (isTerminalTaskState(result.task.state)) this.cache.delete(taskId);
        else this.cache.set(taskId, result.task);
        if (outbox.length > 0 && !result.duplicate) this.onOutboxRows();
        settle(outcomes, result.task, result.duplicate);
        return;
      } catch (err) {
        this.cache.delete(taskId);
        if (err instanceof VersionConflictError && attempt < MAX_CAS_RETRIES) continue;
        throw err;
      }
    }
  }
}

type Outcome = { p: Pending; changed: boolean; error?: unknown };

/** A module function, so settling a batch creates no closure per write. */
function settle(outcomes: Outcome[], record: AgentTaskRecord, duplicate: boolean): void {
  for (const o of outcomes) {
    if (o.error !== undefined) o.p.reject(o.error);
    else o.p.resolve({ record, written: o.changed && !duplicate, duplicate });
  }
}

function indexOfMessage(queue: Pending[]): number {
  const i = queue.findIndex((p) => p.messageId !== undefined);
  return i < 0 ? queue.length : i;
}
