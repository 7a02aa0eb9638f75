import type { NextTurn } from './turns.ts';

/**
 * Where new jobs' first starts wait for their turn. A create answers once its envelope is durable and
 * its start runs behind the answer; run at once, the start's own work (the attempt's store write, the
 * request to the remote) shares the create's turn of the event loop and is done before the answer is
 * written. Queued for a later turn instead, the answer goes out first, and at most STARTS_PER_TURN
 * starts begin per turn, so a burst of creates cannot put a long run of start work in front of the
 * next request (docs/performance.md, "Create latency").
 */

/**
 * Starts begun per turn of the event loop. Each begins with a few hundred microseconds of work before
 * its first await; eight keep a turn's start work to a few milliseconds.
 */
export const STARTS_PER_TURN = 8;

export class StartQueue {
  private readonly waiting: Array<() => void> = [];
  private scheduled = false;

  /** Without `nextTurn` every start runs at once (the lab and the engine tests drive time themselves). */
  constructor(private readonly nextTurn: NextTurn | null) {}

  /** Starts queued and not yet begun. */
  get length(): number {
    return this.waiting.length;
  }

  push(begin: () => void): void {
    if (!this.nextTurn) return begin();
    this.waiting.push(begin);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    this.nextTurn!(() => {
      this.scheduled = false;
      for (const begin of this.waiting.splice(0, STARTS_PER_TURN)) begin();
      if (this.waiting.length > 0) this.schedule();
    });
  }
}
