import type { Clock } from '../core/clock.ts';
import type { Logger } from '../core/logger.ts';
import type { AgentTaskStore } from '../store/store.ts';

export interface TaskRetentionOptions {
  store: AgentTaskStore;
  clock: Clock;
  logger: Logger;
  /** How long a finished task is kept after its last write. */
  retentionMs: number;
  /** Wait between purge rounds. */
  intervalMs: number;
  /** Tasks deleted per transaction. */
  batchSize: number;
  /** Most tasks one round deletes; the rest wait for the next round. */
  maxPerRound: number;
}

/**
 * The host's retention purge: tasks in a terminal state whose last write is older than `retentionMs`
 * are deleted with their events, push configs, outbox rows and messageId records (after which a resend
 * of one of those messageIds is a new message), and direct replies older than that with them
 * (AgentTaskStore.purgeAgentTasks). Each batch is one short transaction that skips rows a writer holds,
 * so sends and reads never wait on the purge; several hosts on one PostgreSQL may purge at once, each
 * row going to whichever locks it first. An MCP task is answered as expired from its `ttlMs` on
 * (mcp-view.ts) and goes with this purge once it has finished and `retentionMs` has passed.
 */
export class TaskRetention {
  /** Tasks and direct replies deleted since start. */
  readonly stats = { tasks: 0, directReplies: 0, rounds: 0 };
  private running = false;
  private loop: Promise<void> | undefined;
  private stopSleep: AbortController | undefined;

  constructor(private readonly o: TaskRetentionOptions) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopSleep?.abort();
    await this.loop;
  }

  /** One round now: batches until one comes back short or `maxPerRound` is reached. Tasks deleted. */
  async sweep(): Promise<number> {
    const { store, clock, retentionMs, batchSize, maxPerRound } = this.o;
    let tasks = 0;
    try {
      while (tasks < maxPerRound) {
        const limit = Math.min(batchSize, maxPerRound - tasks);
        const purged = await store.purgeAgentTasks(clock.now() - retentionMs, limit);
        tasks += purged.tasks.length;
        this.stats.tasks += purged.tasks.length;
        this.stats.directReplies += purged.directReplies;
        if (purged.tasks.length < limit && purged.directReplies < limit) break;
      }
    } finally {
      this.stats.rounds++;
      if (tasks > 0) this.o.logger.info({ purged: tasks }, 'finished tasks purged past their retention');
    }
    return tasks;
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.stopSleep = new AbortController();
      await this.o.clock.sleep(this.o.intervalMs, this.stopSleep.signal).catch(() => undefined);
      if (!this.running) break;
      await this.sweep().catch((err: unknown) =>
        this.o.logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'task purge failed'),
      );
    }
  }
}
