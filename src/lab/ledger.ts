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

/** What went wrong with a job, as the page labels its row. */
export type JobProblem = 'lost' | 'unknown' | 'duplicate' | 'missed_input';

/** What the page draws for one of the sixteen shown jobs. */
export interface TimelineJob {
  job: number;
  /** Set on the rows chosen because something went wrong with them; null on an ordinary row. */
  problem: JobProblem | null;
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
  /** Every job's bars (the page shows sixteen, chosen after the run by what went wrong). */
  readonly timeline = new Map<number, TimelineJob>();
  private readonly missedInputJobs = new Set<number>();

  constructor(
    readonly jobs: readonly JobSpec[],
    /** The ordinary rows, shown where no problem row takes their place. */
    private readonly shownJobs: readonly number[],
  ) {
    for (const spec of jobs) {
      const j = spec.index;
      this.timeline.set(j, {
        job: j,
        problem: null,
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

  /** The agent failed the job because its input request was not answered in time. */
  inputMissed(job: number): void {
    this.missedInputs++;
    this.missedInputJobs.add(job);
  }

  /** What went wrong with a job, the worst first: an outcome never learned, a duplicate, a missed input. */
  problemOf(job: number): JobProblem | null {
    if (!this.learnedAt.has(job)) return this.ended.has(job) ? 'lost' : 'unknown';
    const t = this.timeline.get(job);
    if ((this.sideEffects.get(job) ?? 0) > 1 || t?.attempts.some((a) => a.dup)) return 'duplicate';
    if (this.missedInputJobs.has(job)) return 'missed_input';
    return null;
  }

  /**
   * The rows the page draws, in arrival order: up to `count - 4` jobs that went wrong, taken in turn
   * from each kind of problem so every kind the run had is seen, then the ordinary longer jobs. A run
   * that lost outcomes or duplicated work shows it in the sample; a clean run shows clean rows.
   */
  shown(count = 16): TimelineJob[] {
    const byKind = new Map<JobProblem, number[]>();
    for (const spec of this.jobs) {
      const problem = this.problemOf(spec.index);
      if (problem) byKind.set(problem, [...(byKind.get(problem) ?? []), spec.index]);
    }
    const picked = new Map<number, JobProblem | null>();
    const room = Math.max(0, count - 4);
    // Each kind's jobs taken at even steps across the run, then the kinds in turn.
    const lists = [...byKind.entries()].map(([kind, q]) => {
      const n = Math.min(room, q.length);
      return { kind, jobs: Array.from({ length: n }, (_, i) => q[Math.floor((i * q.length) / n)]!), next: 0 };
    });
    while (picked.size < room && lists.some((l) => l.next < l.jobs.length))
      for (const l of lists)
        if (l.next < l.jobs.length && picked.size < room) picked.set(l.jobs[l.next++]!, l.kind);
    for (const j of this.shownJobs)
      if (picked.size < count && !picked.has(j)) picked.set(j, this.problemOf(j));
    return [...picked.entries()]
      .map(([job, problem]) => ({ ...this.timeline.get(job)!, problem }))
      .sort((a, b) => a.arrivalMs - b.arrivalMs || a.job - b.job);
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
