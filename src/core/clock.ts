/**
 * The Clock port. Everything timed in core/, store/ and plane/ reads time and waits through it, so the
 * lab can run the real engine on virtual time (the engine is sans-I/O).
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason when it is aborted first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `fn` after `ms`; returns a function that cancels it. */
  setTimer(ms: number, fn: () => void): () => void;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new Error('aborted');
}

export class SystemClock implements Clock {
  now(): number {
    return Date.now();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortReason(signal!));
      };
      const timer = setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer = setTimeout(fn, Math.max(0, ms));
    return () => clearTimeout(timer);
  }
}

interface VirtualTimer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/**
 * A clock that only moves when told to. Timers fire in order of due time, ties in order of creation.
 * `runUntil` lets promise continuations settle between timers, so async code driven by this clock
 * behaves as it would in real time, only instantly.
 */
export class VirtualClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly heap: VirtualTimer[] = [];

  constructor(startMs = 0) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer: VirtualTimer = { at: this.current + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.push(timer);
    return () => {
      timer.cancelled = true;
    };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      const onAbort = () => {
        cancel();
        reject(abortReason(signal!));
      };
      const cancel = this.setTimer(ms, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Moves time forward without firing the timers that fall due meanwhile: a process that was paused
   * (a long stall) finds the time gone when it resumes, and its overdue timers fire on the next step.
   */
  jump(ms: number): void {
    this.current += Math.max(0, ms);
  }

  /** Number of timers still due. */
  get pending(): number {
    return this.heap.filter((t) => !t.cancelled).length;
  }

  /** Due time of the next live timer, or undefined. */
  nextDue(): number | undefined {
    this.dropCancelled();
    return this.heap[0]?.at;
  }

  /** Fires the next due timer (moving time to it). Returns false when none is left. */
  step(): boolean {
    this.dropCancelled();
    const timer = this.pop();
    if (!timer) return false;
    this.current = Math.max(this.current, timer.at);
    timer.fn();
    return true;
  }

  /**
   * Advances to `untilMs`, firing every timer due on the way and letting microtasks and I/O-free
   * promise chains settle after each one. Stops early when `stop()` returns true.
   */
  async runUntil(untilMs: number, stop?: () => boolean): Promise<void> {
    await settle();
    for (;;) {
      if (stop?.()) return;
      const due = this.nextDue();
      if (due === undefined || due > untilMs) break;
      this.step();
      await settle();
    }
    this.current = Math.max(this.current, untilMs);
    await settle();
  }

  /** Moves time forward by `ms`, firing what falls due. */
  advance(ms: number): Promise<void> {
    return this.runUntil(this.current + ms);
  }

  private dropCancelled(): void {
    while (this.heap[0]?.cancelled) this.pop();
  }

  private push(timer: VirtualTimer): void {
    const heap = this.heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  private pop(): VirtualTimer | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return top;
  }
}

function before(a: VirtualTimer, b: VirtualTimer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** Lets pending promise continuations run. Several turns, since async functions chain microtasks. */
async function settle(): Promise<void> {
  for (let i = 0; i < 8; i++) await Promise.resolve();
}
