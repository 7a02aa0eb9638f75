/**
 * Copies a write's arguments at the moment of the call. The SQL backends run a write later (in the next
 * group-commit batch, after a pool checkout), and a caller that reuses or mutates its object meanwhile
 * must not change what gets stored; the memory store copies on entry for the same reason.
 */
export function snapshot<T>(value: T): T {
  return structuredClone(value);
}
