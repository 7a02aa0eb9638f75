/**
 * Where new jobs' first starts wait for their turn. A create answers once its envelope is durable and
 * its start runs behind the answer; run at once, the start's own work (the attempt's store write, the
 * request to the remote) shares the create's turn of the event loop and is done before the answer is
 * written. Queued for a later turn instead, the answer goes out first, and at most STARTS_PER_TURN
 * starts begin per turn, so a burst of creates cannot put a long run of start work in front of the
 * next request (docs/performance.md, "Create latency").
 */

/** Runs `fn` on a later turn of the event loop (the server passes one built on setImmediate). */
export type NextTurn = (fn: () => void) => void;

/**
 * Starts begun per turn of the event loop. Each begins with a few hundred microseconds of work before
 * its first await; eight keep a turn's start work to a few milliseconds.
 */
export const STARTS_PER_TURN = 8;

/**
 * For a loop of many short steps that would otherwise run in one turn (a store that answers without
 * I/O resolves every await in the same turn): called before each step, it lets `perTurn` steps go and
 * then returns a promise of a later turn, so stream frames and requests that arrived meanwhile run
 * between the batches. Without `nextTurn` (the lab, the engine tests) it never waits.
 */
export function turnPacer(nextTurn: NextTurn | null, perTurn: number): () => Promise<void> | undefined {
  let steps = 0;
  return () => {
    if (!nextTurn || ++steps <= perTurn) return undefined;
    steps = 1;
    return new Promise((resolve) => nextTurn(resolve));
  };
}

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
