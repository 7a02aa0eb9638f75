/**
 * Turns of the event loop for the plane's long loops. On a store that answers without I/O (memory)
 * every await of a loop over many jobs resolves in the same turn, so the whole loop would hold the
 * event loop, and every stream frame and request that arrived meanwhile would wait for its end
 * (docs/performance.md, "A reconciliation page a few jobs a turn"). The server passes a NextTurn built
 * on setImmediate; the lab and the engine tests pass none and stay deterministic.
 */

/**
 * Jobs written per turn by a loop that writes each (a reconciliation page's observations, a card change's
 * or a revoked key's events): a store write with its events is the heaviest step these loops take, as
 * heavy as a start's first step, and as many go per turn as starts do (start-queue.ts, STARTS_PER_TURN).
 */
export const WRITES_PER_TURN = 8;

/** Runs `fn` on a later turn of the event loop (the server passes one built on setImmediate). */
export type NextTurn = (fn: () => void) => void;

/**
 * For a loop of many short steps that would otherwise run in one turn: called before each step, it lets
 * `perTurn` steps go and then returns a promise of a later turn, so what arrived meanwhile runs between
 * the batches. Without `nextTurn` it never waits.
 */
export function turnPacer(nextTurn: NextTurn | null, perTurn: number): () => Promise<void> | undefined {
  let steps = 0;
  return () => {
    if (!nextTurn || ++steps <= perTurn) return undefined;
    steps = 1;
    return new Promise((resolve) => nextTurn(resolve));
  };
}
