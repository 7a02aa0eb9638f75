import type { JobSpec } from './world-model.ts';

/** The figures of one run (the `--json` shape; field names are a public interface). */
export interface LabMetrics {
  tasks: number;
  /** Side effects done more than once: duplicate remote tasks the client created + completions handled twice. */
  duplicates: number;
  /** Jobs whose outcome the client did not know when the run ended. */
  unknownOutcomes: number;
  /** unknownOutcomes as a percentage of tasks (6 means 6 %). */
  unknownPct: number;
  /** Unknown outcomes that did exist on the agent: a remote task for the job ended, the client never heard. */
  lostOutcomes: number;
  /** Input requests the agent timed out on (15 min) because no answer came. */
  missedInputs: number;
  /** Requests per task, reconciliation charged one request per in-flight task checked (docs/lab.md, "What the figures mean"). */
  requestsPerTask: number;
  /** Requests per task, reconciliation charged as the ListTasks pages it really takes. */
  requestsPerTaskListBased: number;
  /** Repeated deliveries an idempotent handler recognised and did nothing for. */
  duplicatesAbsorbed: number;
  /** Jobs started again because the agent no longer knew them (TaskNotFound on our own task). */
  resubmitted: number;
  /** Mean time from the agent's terminal status timestamp to the client learning it, seconds. */
  meanNotifyDelayS: number;
}

export type SegmentKind = 'working' | 'input';

/** What the page draws for one of the sixteen shown jobs. */
export interface TimelineJob {
  job: number;
  arrivalMs: number;
  durationMs: number;
  attempts: Array<{
    startMs: number;
    endMs: number | null;
    dup: boolean;
    segments: Array<{ kind: SegmentKind; fromMs: number; toMs: number | null }>;
  }>;
  dropsMs: number[];
  learnedMs: number | null;
}

export type RequestKind =
  'send' | 'get' | 'subscribe' | 'list' | 'cancel' | 'answer' | 'register_push' | 'card';

/**
 * Everything a run counts. The simulated agent and network report what happened on the wire; the
 * client (naive or engine adapter) reports what it learned and handled.
 */
export class Ledger {
  requests = 0;
  readonly byKind: Record<RequestKind, number> = {
    send: 0,
    get: 0,
    subscribe: 0,
    list: 0,
    cancel: 0,
    answer: 0,
    register_push: 0,
    card: 0,
  };
  /** Requests that reconciliation really made (per-task gets for naive, list pages for the engine). */
  reconcileReal = 0;
  /** What reconciliation costs charged one get per in-flight task it had to check. */
  reconcilePerTaskCharge = 0;
  /** What reconciliation costs as ListTasks pages. */
  reconcileListCharge = 0;
  duplicateTasks = 0;
  handlerDuplicates = 0;
  duplicatesAbsorbed = 0;
  resubmitted = 0;
  missedInputs = 0;
  private readonly learnedAt = new Map<number, number>();
  private delaySumMs = 0;
  private delayCount = 0;
  private readonly ended = new Set<number>();
  private readonly sideEffects = new Map<number, number>();
  readonly timeline = new Map<number, TimelineJob>();

  constructor(
    readonly jobs: readonly JobSpec[],
    shownJobs: readonly number[],
  ) {
    for (const j of shownJobs) {
      const spec = jobs[j]!;
      this.timeline.set(j, {
        job: j,
        arrivalMs: spec.arrivalMs,
        durationMs: spec.durationMs,
        attempts: [],
        dropsMs: [],
        learnedMs: null,
      });
    }
  }

  request(kind: RequestKind): void {
    this.requests++;
    this.byKind[kind]++;
  }

  /** The client learned the job's outcome (first time counts). `statusMs` is the agent's status timestamp. */
  learned(job: number, atMs: number, statusMs: number): void {
    if (this.learnedAt.has(job)) return;
    this.learnedAt.set(job, atMs);
    this.delaySumMs += Math.max(0, atMs - statusMs);
    this.delayCount++;
    const t = this.timeline.get(job);
    if (t) t.learnedMs = atMs;
  }

  isLearned(job: number): boolean {
    return this.learnedAt.has(job);
  }

  get learnedCount(): number {
    return this.learnedAt.size;
  }

  /** The client's completion handler ran its side effect for this job (ship the order, post the payment). */
  sideEffect(job: number): void {
    const n = (this.sideEffects.get(job) ?? 0) + 1;
    this.sideEffects.set(job, n);
    if (n > 1) this.handlerDuplicates++;
  }

  endedOnAgent(job: number): void {
    this.ended.add(job);
  }

  drop(job: number, atMs: number): void {
    this.timeline.get(job)?.dropsMs.push(atMs);
  }

  metrics(): LabMetrics {
    const tasks = this.jobs.length;
    let unknown = 0;
    let lost = 0;
    for (const j of this.jobs) {
      if (this.learnedAt.has(j.index)) continue;
      unknown++;
      if (this.ended.has(j.index)) lost++;
    }
    const base = this.requests - this.reconcileReal;
    const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;
    return {
      tasks,
      duplicates: this.duplicateTasks + this.handlerDuplicates,
      unknownOutcomes: unknown,
      unknownPct: round((100 * unknown) / tasks, 1),
      lostOutcomes: lost,
      missedInputs: this.missedInputs,
      requestsPerTask: round((base + this.reconcilePerTaskCharge) / tasks),
      requestsPerTaskListBased: round((base + this.reconcileListCharge) / tasks),
      duplicatesAbsorbed: this.duplicatesAbsorbed,
      resubmitted: this.resubmitted,
      meanNotifyDelayS: this.delayCount ? round(this.delaySumMs / this.delayCount / 1000, 1) : 0,
    };
  }
}
