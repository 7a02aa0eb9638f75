import type { Clock } from '../core/clock.ts';
import { WakeSignal } from './wake-signal.ts';

/**
 * A worker loop in the graphile-worker / pg-boss shape: it is given its fetch, handle and
 * error functions, keeps an explicit state, and waits in a way stop() and wake() cut short.
 *
 *   idle → fetching → handling (per item) → waiting → fetching … → stopped
 *
 * Each item is handled on its own: a failure is reported through `error` and the loop goes on with the
 * next item, and the failed item is retried when a later round fetches it again. Nothing an option
 * function throws (not `error`, not `intervalMs`) ends the loop: in a shared process one job's odd
 * failure must not stop the work of every other job, nor surface as an unhandled rejection.
 */
export type WorkerLoopState = 'idle' | 'fetching' | 'handling' | 'waiting' | 'stopped';

export interface WorkerLoopOptions<T> {
  name: string;
  clock: Clock;
  /** Ends the loop when aborted. */
  signal: AbortSignal;
  /** What to work on this round (may be empty). */
  fetch: (signal: AbortSignal) => Promise<T[]>;
  handle: (item: T, signal: AbortSignal) => Promise<void>;
  /** Called with any error from fetch or handle; the loop goes on (also when this throws). */
  error: (err: unknown, item: T | undefined) => void;
  /** Wait between rounds. */
  intervalMs: () => number;
  /** Wait before the first round. @default intervalMs() */
  initialDelayMs?: number;
}

export class WorkerLoop<T> {
  state: WorkerLoopState = 'idle';
  rounds = 0;
  private readonly wakeSignal: WakeSignal;
  private running: Promise<void> | null = null;

  constructor(private readonly options: WorkerLoopOptions<T>) {
    this.wakeSignal = new WakeSignal(options.clock, options.signal);
  }

  start(): void {
    if (!this.running) this.running = this.run();
  }

  /** Runs a round now instead of at the end of the current wait. */
  wake(): void {
    this.wakeSignal.wake();
  }

  /** Resolves once the loop has ended (after its signal aborted). */
  async finished(): Promise<void> {
    await this.running;
  }

  private async run(): Promise<void> {
    const o = this.options;
    const report = (err: unknown, item: T | undefined) => {
      if (o.signal.aborted) return;
      try {
        o.error(err, item);
      } catch {
        // The reporter itself failed: nothing is left to tell, and the next item still gets its turn.
      }
    };
    const nextDelay = (fallback: number): number => {
      try {
        return o.intervalMs();
      } catch (err) {
        report(err, undefined);
        return fallback;
      }
    };
    let delay = o.initialDelayMs ?? nextDelay(0);
    while (!o.signal.aborted) {
      this.state = 'waiting';
      if ((await this.wakeSignal.wait(delay)) === 'stopped') break;
      this.state = 'fetching';
      let items: T[] = [];
      try {
        items = await o.fetch(o.signal);
      } catch (err) {
        report(err, undefined);
      }
      for (const item of items) {
        if (o.signal.aborted) break;
        this.state = 'handling';
        try {
          await o.handle(item, o.signal);
        } catch (err) {
          report(err, item);
        }
      }
      this.rounds++;
      delay = nextDelay(delay);
    }
    this.state = 'stopped';
  }
}
