import type { AgentScope, AgentTaskEvent, AgentTaskStore } from '../store/store.ts';
import { A2AError, invalidParams } from '../protocols/a2a/errors.ts';
import type { StreamItem } from '../protocols/a2a/handler.ts';
import { isTerminalTaskState, type Task } from '../protocols/a2a/types.ts';
import { type StoredEvent, payloadState, taskOf, wirePayload } from './task-model.ts';
import type { TaskFeed } from './task-feed.ts';

/** Streams close at a terminal state and at INPUT_REQUIRED (A2A 1.0, streaming; parity with the JS and Python SDKs). */
export function endsStream(state: string | undefined): boolean {
  return state !== undefined && (isTerminalTaskState(state) || state === 'TASK_STATE_INPUT_REQUIRED');
}

/**
 * Stored events → stream frames, cut after the frame that ends the stream. `skip` drops events already
 * contained in a snapshot. Returns the frames and whether the stream is over.
 */
function toItems(
  events: AgentTaskEvent[],
  skip: (e: StoredEvent) => boolean = () => false,
): { items: StreamItem[]; end: boolean } {
  const items: StreamItem[] = [];
  for (const event of events) {
    const stored = event.payload as StoredEvent;
    if (skip(stored)) continue;
    const payload = wirePayload(stored);
    items.push({ id: String(event.seq), payload });
    if (endsStream(payloadState(payload))) return { items, end: true };
  }
  return { items, end: false };
}

/**
 * The stream views of a task over the TaskFeed, yielding frames in the batches they become available
 * in. Every frame's SSE id is the store's event seq.
 */
export class TaskStreams {
  constructor(
    private readonly store: AgentTaskStore,
    private readonly feed: TaskFeed,
  ) {}

  /**
   * Every event of a task from its creation (`{task}` first, as A2A 1.0 requires of a new stream), until
   * the stream-ending state. Used for SendStreamingMessage of a new task.
   */
  async *fromCreation(taskId: string, signal: AbortSignal): AsyncGenerator<StreamItem[]> {
    for await (const batch of this.feed.batches(taskId, 0, signal)) {
      const { items, end } = toItems(batch);
      if (items.length > 0) yield items;
      if (end) return;
    }
  }

  /**
   * SubscribeToTask: the current Task first (a MUST of A2A 1.0, streaming), then the updates after it, without the gap
   * between a read and a subscription: events already contained in the snapshot (by task version) are
   * skipped. A subscription to a task already in INPUT_REQUIRED stays open until its next stop.
   */
  async snapshotThenLive(
    taskId: string,
    scope: AgentScope,
    signal: AbortSignal,
    view: (task: Task) => Task,
  ): Promise<AsyncGenerator<StreamItem[]>> {
    let lastSeq = 0;
    for (;;) {
      const page = await this.store.listAgentTaskEvents(taskId, lastSeq, 1000);
      if (page.length === 0) break;
      lastSeq = page[page.length - 1]!.seq;
      if (page.length < 1000) break;
    }
    const record = await this.store.getAgentTask(taskId, scope);
    if (!record) throw new A2AError('TaskNotFoundError');
    const version = record.version;
    const feed = this.feed;
    const snapshot = taskOf(record);
    return (async function* () {
      yield [{ id: String(lastSeq), payload: { task: view(snapshot) } }];
      if (isTerminalTaskState(snapshot.status.state)) return;
      for await (const batch of feed.batches(taskId, lastSeq, signal)) {
        const { items, end } = toItems(batch, (stored) => (stored._v ?? Infinity) <= version);
        if (items.length > 0) yield items;
        if (end) return;
      }
    })();
  }

  /**
   * Last-Event-ID reconnect (our declared extension): the persisted events after `lastEventId`, then
   * live ones, ending as any stream does. No snapshot: the client already holds the state up to that id.
   * On a finished task it replays what is stored and ends.
   */
  afterEventId(
    taskId: string,
    lastEventId: string,
    finished: boolean,
    signal: AbortSignal,
  ): AsyncGenerator<StreamItem[]> {
    if (!/^\d{1,15}$/.test(lastEventId))
      throw invalidParams('Last-Event-ID', 'must be an event id this server issued');
    const { feed, store } = this;
    const after = Number(lastEventId);
    return (async function* () {
      if (finished) {
        let cursor = after;
        for (;;) {
          const page = await store.listAgentTaskEvents(taskId, cursor, 500);
          if (page.length === 0) return;
          cursor = page[page.length - 1]!.seq;
          const { items } = toItems(page);
          if (items.length > 0) yield items;
          if (page.length < 500) return;
        }
      }
      for await (const batch of feed.batches(taskId, after, signal)) {
        const { items, end } = toItems(batch);
        if (items.length > 0) yield items;
        if (end) return;
      }
    })();
  }
}
