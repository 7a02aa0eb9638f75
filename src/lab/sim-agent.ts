import type { VirtualClock } from '../core/clock.ts';
import { TaskplaneError } from '../core/errors.ts';
import type { Ledger, TimelineJob } from './ledger.ts';
import {
  isTerminalA2A,
  type A2AState,
  type AgentSnapshot,
  type SimNetwork,
  type StreamConn,
} from './sim-network.ts';
import { WORLD, type JobSpec } from './world-model.ts';

export interface PushTarget {
  url: string;
  token: string;
}

/** What the agent keeps per task: what it tells clients (a snapshot, copied out by snap()) and its internals. */
interface AgentTask extends AgentSnapshot {
  messageId: string;
  /** Work left to do from `workingSince`. */
  remainingMs: number;
  workingSince: number;
  cancelTimer: (() => void) | null;
  push: PushTarget | null;
  streams: StreamConn[];
  attempt: TimelineJob['attempts'][number] | null;
}

/**
 * A simulated remote A2A agent that keeps its tasks in process memory, like many real ones:
 * - SendMessage always creates a new task. The spec says Send "MAY be idempotent"; this agent is not,
 *   which is the premise for resend-on-drop duplicates (and, after the restart, it could not be).
 * - A task works for its job's duration, pausing once for input when the job says so; an input request
 *   unanswered for 15 min fails the task.
 * - Every status change goes to the task's open streams and, when a push config exists, is POSTed with
 *   at-least-once delivery: base 5 s doubling, K retries, then the event is given up.
 * - restart() forgets everything (no persistence): get/subscribe answer TaskNotFound, pushes stop.
 *
 * Faults the default lab world never uses, for tests that schedule them (test/lab/truth-property-sim.test.ts):
 * - cancel() is CancelTask: acknowledged at once (`cancelDelayMs` 0) or after a delay during which the
 *   task may still complete; a terminal task answers TaskNotCancelable (`failed_precondition`).
 * - refuseNextSend() makes the agent itself refuse the next SendMessage (A2A InvalidParamsError).
 * - forget() loses one task (TaskNotFound from then on), redeploy() moves the agent to another interface
 *   (its old route answers 404 pages, not A2A), pageNext() and pagesUntil() make a gateway answer 404
 *   pages with the card unchanged, refuseUntil() refuses connections, `startDelayMs` makes SendMessage
 *   answer late (the task exists from the moment the request arrives).
 */
export class SimAgent {
  private tasks = new Map<string, AgentTask>();
  /** Tasks of each job alive in this process (not forgotten), and jobs that ever completed. */
  private liveByJob = new Map<number, number>();
  private readonly completedJobs = new Set<number>();
  private epoch = 0;
  private seq = 0;
  private active = 0;
  private pendingPushes = 0;
  private sortedCache: AgentTask[] | null = null;
  /** Every task this agent ever created, forgotten ones included: what the remote really did. */
  private readonly everCreated = new Map<string, AgentTask>();
  private readonly forgottenIds = new Set<string>();
  private readonly cancelAcks = new Set<string>();
  /** The interface the agent's card lists now; a redeploy moves it. */
  private route = 1;
  private pagesUntilMs = -1;
  private refusedUntilMs = -1;
  private readonly pagesNext: string[] = [];
  private refuseSends = 0;
  private readonly refusedMessages = new Set<string>();
  /** SendMessage answers this long after the task was created (a slow agent). */
  startDelayMs = 0;
  /** CancelTask is acknowledged at once and the task ends CANCELED this long after (0: at once). */
  cancelDelayMs = 0;

  constructor(
    private readonly clock: VirtualClock,
    private readonly net: SimNetwork,
    private readonly ledger: Ledger,
    private readonly jobs: readonly JobSpec[],
    private readonly pushRetries: number,
  ) {}

  /** Nothing left that could change what the client learns: no working task, no push in flight. */
  get idle(): boolean {
    return this.active === 0 && this.pendingPushes === 0;
  }

  /** SendMessage (returnImmediately). With `stream`, SendStreamingMessage: the stream starts with the Task. */
  send(
    req: { messageId: string; contextId: string; job: number; push?: PushTarget | null },
    stream?: StreamConn,
  ): AgentSnapshot {
    const now = this.clock.now();
    const job = this.jobs[req.job];
    if (!job) throw new TaskplaneError('invalid_argument', 'unknown job');
    if (this.refuseSends > 0) {
      // The agent's own refusal (A2A InvalidParamsError), not a transport failure: no task is created.
      this.refuseSends--;
      this.refusedMessages.add(req.messageId);
      throw new TaskplaneError('invalid_argument', 'InvalidParams: the agent refuses this message');
    }
    const dup = (this.liveByJob.get(job.index) ?? 0) > 0 || this.completedJobs.has(job.index);
    if (dup) this.ledger.duplicateTasks++;
    this.liveByJob.set(job.index, (this.liveByJob.get(job.index) ?? 0) + 1);
    const id = `t${this.epoch}-${(this.seq++).toString(36)}`;
    const shown = this.ledger.timeline.get(job.index);
    const attempt = shown ? { startMs: now, endMs: null, dup, segments: [] } : null;
    if (shown && attempt) shown.attempts.push(attempt);
    const task: AgentTask = {
      id,
      contextId: req.contextId,
      job: job.index,
      messageId: req.messageId,
      state: 'TASK_STATE_WORKING',
      statusMs: now,
      version: 1,
      inputRequestId: null,
      remainingMs: job.durationMs,
      workingSince: now,
      cancelTimer: null,
      push: req.push ?? null,
      streams: [],
      attempt,
    };
    this.tasks.set(id, task);
    this.everCreated.set(id, task);
    this.sortedCache = null;
    this.active++;
    this.segment(task, 'working');
    if (job.inputAtWorkMs !== null) {
      task.cancelTimer = this.clock.setTimer(job.inputAtWorkMs, () =>
        this.askInput(task, job.durationMs - job.inputAtWorkMs!),
      );
    } else {
      task.cancelTimer = this.clock.setTimer(job.durationMs, () => this.finish(task, 'TASK_STATE_COMPLETED'));
    }
    if (stream) this.attach(task, stream);
    return snap(task);
  }

  /** The job a task works on, for labelling streams; undefined when the agent does not know the task. */
  jobOf(id: string): number | undefined {
    return this.tasks.get(id)?.job;
  }

  get(id: string): AgentSnapshot {
    return snap(this.find(id));
  }

  /** SubscribeToTask: the first event is the current Task; terminal tasks answer UnsupportedOperation. */
  subscribe(id: string, stream: StreamConn): AgentSnapshot {
    const task = this.find(id);
    if (isTerminalA2A(task.state)) throw new TaskplaneError('failed_precondition', 'task is terminal');
    this.attach(task, stream);
    return snap(task);
  }

  /** ListTasks with statusTimestampAfter ("at or after"), newest first, offset cursor. */
  list(
    sinceMs: number,
    cursor: string | undefined,
    pageSize: number,
  ): { items: AgentSnapshot[]; nextCursor?: string } {
    // Sorted once per change burst: a reconciliation round pages through the same order.
    this.sortedCache ??= [...this.tasks.values()].sort(
      (a, b) => b.statusMs - a.statusMs || (a.id < b.id ? 1 : -1),
    );
    const matching = this.sortedCache.filter((t) => t.statusMs >= sinceMs);
    const from = cursor ? Number(cursor) : 0;
    const items = matching.slice(from, from + pageSize).map(snap);
    const next = from + pageSize;
    return next < matching.length ? { items, nextCursor: String(next) } : { items };
  }

  /** Answers the pending input; with `stream`, as SendStreamingMessage on the task (the stream continues). */
  answer(id: string, requestId: string, stream?: StreamConn): AgentSnapshot {
    const task = this.find(id);
    if (task.state !== 'TASK_STATE_INPUT_REQUIRED' || task.inputRequestId !== requestId) {
      throw new TaskplaneError('failed_precondition', 'no such pending input request');
    }
    task.cancelTimer?.();
    task.inputRequestId = null;
    task.state = 'TASK_STATE_WORKING';
    task.workingSince = this.clock.now();
    this.segment(task, 'working');
    task.cancelTimer = this.clock.setTimer(task.remainingMs, () => this.finish(task, 'TASK_STATE_COMPLETED'));
    if (stream) task.streams.push(stream);
    this.emit(task);
    return snap(task);
  }

  registerPush(id: string, target: PushTarget): void {
    this.find(id).push = target;
  }

  /** Restart without persistence: every task, stream and pending push is forgotten. */
  restart(): void {
    this.epoch++;
    for (const task of this.tasks.values()) {
      this.forgottenIds.add(task.id);
      task.cancelTimer?.();
      if (!isTerminalA2A(task.state)) this.endAttempt(task);
      for (const s of task.streams) s.crash();
    }
    this.tasks = new Map();
    this.sortedCache = null;
    this.liveByJob = new Map();
    this.active = 0;
  }

  /**
   * CancelTask. A task that is already terminal is not cancelable (A2A TaskNotCancelableError): the
   * answer that lets a client learn it completed although a cancel was asked.
   */
  cancel(id: string): AgentSnapshot {
    const task = this.find(id);
    if (isTerminalA2A(task.state)) throw new TaskplaneError('failed_precondition', 'task is not cancelable');
    this.cancelAcks.add(id);
    if (this.cancelDelayMs <= 0) {
      task.cancelTimer?.();
      this.finish(task, 'TASK_STATE_CANCELED');
    } else {
      // Acknowledged, still working: the task may finish on its own before the cancel takes effect.
      this.clock.setTimer(this.cancelDelayMs, () => {
        if (this.tasks.get(id) !== task || isTerminalA2A(task.state)) return;
        task.cancelTimer?.();
        this.finish(task, 'TASK_STATE_CANCELED');
      });
    }
    return snap(task);
  }

  /** Loses one task, as an agent whose store dropped it: TaskNotFound from now on. */
  forget(id: string): void {
    const task = this.tasks.get(id);
    if (!task) return;
    this.forgottenIds.add(id);
    task.cancelTimer?.();
    if (!isTerminalA2A(task.state)) {
      this.active--;
      this.endAttempt(task);
    }
    for (const s of task.streams) s.crash();
    task.streams = [];
    this.tasks.delete(id);
    this.sortedCache = null;
    this.liveByJob.set(task.job, Math.max(0, (this.liveByJob.get(task.job) ?? 1) - 1));
  }

  /**
   * A redeploy: the card now lists another interface and the old route answers 404 pages. Open streams
   * end with the old process; without persistence (`forget`) every task is gone too.
   */
  redeploy(opts: { forget: boolean }): void {
    this.route++;
    if (opts.forget) {
      this.restart();
      return;
    }
    for (const task of this.tasks.values()) {
      for (const s of task.streams) s.crash();
      task.streams = [];
    }
  }

  /** The next SendMessage is refused by the agent itself (A2A InvalidParamsError). */
  refuseNextSend(): void {
    this.refuseSends++;
  }

  /** Whether the agent itself refused a SendMessage with this message id. */
  refused(messageId: string): boolean {
    return this.refusedMessages.has(messageId);
  }

  /** The next request of this kind meets a gateway's 404 page (the card is unchanged). */
  pageNext(kind: string): void {
    this.pagesNext.push(kind);
  }

  /** Until then every request, card reads included, meets a gateway's 404 page. */
  pagesUntil(atMs: number): void {
    this.pagesUntilMs = Math.max(this.pagesUntilMs, atMs);
  }

  /** Until then every connection is refused before a request is sent. */
  refuseUntil(atMs: number): void {
    this.refusedUntilMs = Math.max(this.refusedUntilMs, atMs);
  }

  /** The interface the card lists now. */
  get revision(): number {
    return this.route;
  }

  /**
   * What answers a request of `kind` sent to interface `route` now: the agent (`ok`), a page that is
   * not A2A (an old route after a redeploy, a gateway without its route), or a refused connection.
   */
  frontDoor(route: number | 'card', kind: string): 'ok' | 'page' | 'refused' {
    const now = this.clock.now();
    if (now < this.refusedUntilMs) return 'refused';
    if (now < this.pagesUntilMs) return 'page';
    if (route === 'card') return 'ok';
    const i = this.pagesNext.indexOf(kind);
    if (i >= 0) {
      this.pagesNext.splice(i, 1);
      return 'page';
    }
    return route === this.route ? 'ok' : 'page';
  }

  /** What the agent really did with a task, forgotten or not (for checks from outside). */
  history(id: string): { state: A2AState; forgotten: boolean; cancelAcknowledged: boolean } | undefined {
    const task = this.everCreated.get(id);
    if (!task) return undefined;
    return {
      state: task.state,
      forgotten: this.forgottenIds.has(id),
      cancelAcknowledged: this.cancelAcks.has(id),
    };
  }

  /** Every task ever created for a message id (a resend or resubmission reuses it). */
  tasksForMessage(messageId: string): string[] {
    const out: string[] = [];
    for (const t of this.everCreated.values()) if (t.messageId === messageId) out.push(t.id);
    return out;
  }

  private find(id: string): AgentTask {
    const task = this.tasks.get(id);
    if (!task) throw new TaskplaneError('not_found', 'task not found');
    return task;
  }

  private attach(task: AgentTask, stream: StreamConn): void {
    task.streams = task.streams.filter((s) => s.open);
    task.streams.push(stream);
    stream.push(snap(task));
  }

  private askInput(task: AgentTask, remainingMs: number): void {
    task.remainingMs = remainingMs;
    task.state = 'TASK_STATE_INPUT_REQUIRED';
    task.inputRequestId = `${task.id}-q`;
    this.segment(task, 'input');
    task.cancelTimer = this.clock.setTimer(WORLD.inputTimeoutMs, () => {
      this.ledger.inputMissed(task.job);
      this.finish(task, 'TASK_STATE_FAILED');
    });
    this.emit(task);
  }

  private finish(task: AgentTask, state: A2AState): void {
    task.state = state;
    task.inputRequestId = null;
    task.cancelTimer = null;
    this.active--;
    if (state === 'TASK_STATE_COMPLETED') this.completedJobs.add(task.job);
    this.ledger.endedOnAgent(task.job);
    this.endAttempt(task);
    this.emit(task);
  }

  private emit(task: AgentTask): void {
    task.version++;
    task.statusMs = this.clock.now();
    this.sortedCache = null;
    const s = snap(task);
    // Like our host (src/host/task-streams.ts; A2A 1.0, streaming): streams close at a terminal state and at
    // INPUT_REQUIRED; a subscription made while the task already waits stays open.
    const closes = isTerminalA2A(task.state) || task.state === 'TASK_STATE_INPUT_REQUIRED';
    for (const stream of task.streams) {
      stream.push(s);
      if (closes) stream.finish();
    }
    if (closes) task.streams = [];
    if (task.push) this.deliver(task.push, s, 0, this.epoch);
  }

  private deliver(target: PushTarget, s: AgentSnapshot, attempt: number, epoch: number): void {
    this.pendingPushes++;
    this.net.post(
      { deliveryId: `${s.id}:${s.version}`, url: target.url, token: target.token, snapshot: s },
      (ok) => {
        if (ok || attempt >= this.pushRetries || epoch !== this.epoch) {
          this.pendingPushes--;
          return;
        }
        // Wait before retry k (1-based) is 5·2^(k−1) s, so after k retries 5·(2^k − 1) s have passed.
        this.clock.setTimer(WORLD.pushBaseMs * 2 ** attempt, () => {
          this.pendingPushes--;
          if (epoch === this.epoch) this.deliver(target, s, attempt + 1, epoch);
        });
      },
    );
  }

  private segment(task: AgentTask, kind: 'working' | 'input'): void {
    const a = task.attempt;
    if (!a) return;
    const now = this.clock.now();
    const last = a.segments[a.segments.length - 1];
    if (last && last.toMs === null) last.toMs = now;
    a.segments.push({ kind, fromMs: now, toMs: null });
  }

  private endAttempt(task: AgentTask): void {
    const a = task.attempt;
    if (!a) return;
    const now = this.clock.now();
    a.endMs = now;
    const last = a.segments[a.segments.length - 1];
    if (last && last.toMs === null) last.toMs = now;
  }
}

function snap(t: AgentTask): AgentSnapshot {
  return {
    id: t.id,
    contextId: t.contextId,
    job: t.job,
    state: t.state,
    statusMs: t.statusMs,
    version: t.version,
    inputRequestId: t.inputRequestId,
  };
}
