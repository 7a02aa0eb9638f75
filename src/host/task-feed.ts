import type { Logger } from '../core/logger.ts';
import type { AgentTaskEvent, AgentTaskStore, ChangeNotice } from '../store/store.ts';

const PAGE = 500;

interface Subscriber {
  push(events: AgentTaskEvent[]): void;
}

interface Channel {
  cursor: number;
  fetching: boolean;
  again: boolean;
  subs: Set<Subscriber>;
}

/**
 * Live task events for subscribers, fed by the Store's change feed (events reach subscribers
 * from the Store's change feed, not an in-process bus only): a notice only wakes a channel, which then
 * reads the events after its cursor from the store, so a missed notice loses nothing and a subscriber
 * on one process sees work committed by another (PostgreSQL LISTEN/NOTIFY).
 *
 * One channel per task with subscribers reads each event once and fans it out (100 SSE subscribers of
 * one task cost one store read per wake-up, not 100).
 */
export class TaskFeed {
  private readonly channels = new Map<string, Channel>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly store: AgentTaskStore,
    private readonly logger: Logger,
  ) {}

  /** Open subscriptions (SSE streams and blocking sends waiting) in this process. */
  get subscriberCount(): number {
    let n = 0;
    for (const channel of this.channels.values()) n += channel.subs.size;
    return n;
  }

  start(): void {
    this.unsubscribe ??= this.store.onChange((notice: ChangeNotice) => {
      if (notice.kind !== 'agentTask') return;
      const channel = this.channels.get(notice.id);
      if (channel && notice.seq > channel.cursor) this.fetch(notice.id, channel);
    });
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /** Wakes every channel (after a reconnect of the change feed, or for a slow-path poll). */
  poke(): void {
    for (const [taskId, channel] of this.channels) this.fetch(taskId, channel);
  }

  /**
   * Events of `taskId` with seq > afterSeq, in order, without gaps or duplicates: persisted ones first,
   * then live ones until the consumer stops iterating or `signal` fires.
   */
  async *events(taskId: string, afterSeq: number, signal?: AbortSignal): AsyncGenerator<AgentTaskEvent> {
    for await (const batch of this.batches(taskId, afterSeq, signal)) yield* batch;
  }

  /**
   * As `events`, in the batches they become available in (a store page, a fetched group of commits),
   * so a stream can write a batch as one chunk: one socket write per subscriber instead of one per event.
   */
  async *batches(taskId: string, afterSeq: number, signal?: AbortSignal): AsyncGenerator<AgentTaskEvent[]> {
    const queue: AgentTaskEvent[] = [];
    let wake: (() => void) | undefined;
    const sub: Subscriber = {
      push(events) {
        queue.push(...events);
        wake?.();
      },
    };
    // Attach before the replay read: anything committed after attaching reaches us live, anything
    // before is in the replay; overlap is removed by seq.
    let channel = this.channels.get(taskId);
    if (!channel) {
      channel = { cursor: afterSeq, fetching: false, again: false, subs: new Set() };
      this.channels.set(taskId, channel);
    }
    channel.subs.add(sub);
    const onAbort = () => wake?.();
    signal?.addEventListener('abort', onAbort);
    let cursor = afterSeq;
    const fresh = (events: AgentTaskEvent[]) => {
      const out: AgentTaskEvent[] = [];
      for (const event of events) {
        if (event.seq <= cursor) continue;
        cursor = event.seq;
        out.push(event);
      }
      return out;
    };
    try {
      for (;;) {
        const page = await this.store.listAgentTaskEvents(taskId, cursor, PAGE);
        const batch = fresh(page);
        if (batch.length > 0) yield batch;
        if (page.length < PAGE) break;
      }
      this.fetch(taskId, channel);
      for (;;) {
        if (signal?.aborted) return;
        if (queue.length > 0) {
          const batch = fresh(queue.splice(0, queue.length));
          if (batch.length > 0) yield batch;
          continue;
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      channel.subs.delete(sub);
      if (channel.subs.size === 0 && this.channels.get(taskId) === channel) this.channels.delete(taskId);
    }
  }

  private fetch(taskId: string, channel: Channel): void {
    if (channel.fetching) {
      channel.again = true;
      return;
    }
    channel.fetching = true;
    void (async () => {
      try {
        do {
          channel.again = false;
          for (;;) {
            const page = await this.store.listAgentTaskEvents(taskId, channel.cursor, PAGE);
            if (page.length > 0) {
              channel.cursor = Math.max(channel.cursor, page[page.length - 1]!.seq);
              for (const sub of channel.subs) sub.push(page);
            }
            if (page.length < PAGE) break;
          }
        } while (channel.again);
      } catch (err) {
        this.logger.warn({ err, taskId }, 'task feed read failed');
      } finally {
        channel.fetching = false;
      }
    })();
  }
}
