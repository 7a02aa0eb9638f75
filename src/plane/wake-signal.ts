import type { Clock } from '../core/clock.ts';
import { childSignal } from './context.ts';

/**
 * A wait that ends at the earliest of: its timeout, wake(), or the owner's AbortSignal. Loops use it
 * so stop() ends them promptly and other paths (an answer, a resubmission) can nudge them early.
 * A wake() that arrives while nobody waits is remembered, so it is never lost between two waits.
 */
export class WakeSignal {
  private pending = false;
  private current: AbortController | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly signal: AbortSignal,
  ) {}

  wake(): void {
    if (this.current) this.current.abort();
    else this.pending = true;
  }

  /**
   * Resolves 'timeout', 'woken' or 'stopped'. `ms` = Infinity waits for a wake or stop only.
   */
  async wait(ms: number): Promise<'timeout' | 'woken' | 'stopped'> {
    if (this.signal.aborted) return 'stopped';
    if (this.pending) {
      this.pending = false;
      return 'woken';
    }
    const controller = new AbortController();
    this.current = controller;
    // Linked, not listened to: every parked watcher waits here, and a listener each on the shared
    // engine signal is what made Node warn about listener leaks (see childSignal).
    const ended = childSignal(this.signal, controller.signal);
    try {
      if (Number.isFinite(ms)) {
        // Whole milliseconds: a jittered wait must not leave a virtual clock at a fraction that a
        // store then writes into an integer column (found with PostgreSQL: 22P02).
        await this.clock.sleep(Math.max(0, Math.round(ms)), ended);
      } else {
        await new Promise<void>((_, reject) =>
          ended.addEventListener('abort', () => reject(new Error('woken')), { once: true }),
        );
      }
      return 'timeout';
    } catch {
      return this.signal.aborted ? 'stopped' : 'woken';
    } finally {
      this.current = null;
    }
  }
}
