/**
 * Copies a write's arguments at the moment of the call. The SQL backends run a write later (in the next
 * group-commit batch, after a pool checkout), and a caller that reuses or mutates its object meanwhile
 * must not change what gets stored; the memory store copies on entry and on the way out for the same
 * reason.
 */
export function snapshot<T>(value: T): T {
  return copyData(value, 0);
}

const hasOwn = Object.prototype.hasOwnProperty;

/** Nesting past which the rest is left to structuredClone (it also copies cycles, which JSON never has). */
const MAX_PLAIN_DEPTH = 64;

/**
 * A deep copy of JSON-shaped data (plain objects, arrays, primitives) that walks it directly: several
 * times cheaper than structuredClone, which serializes and deserializes (docs/performance.md, "Plain
 * copies instead of structuredClone"). Anything else (a Date, a typed array, a Map) and anything nested
 * deeper than MAX_PLAIN_DEPTH goes to structuredClone, so the result is the same as structuredClone's
 * for every value a store keeps.
 */
function copyData<T>(value: T, depth: number): T {
  if (typeof value !== 'object' || value === null) return value;
  if (depth > MAX_PLAIN_DEPTH) return structuredClone(value);
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copyData(value[i] as unknown, depth + 1);
    return out as T;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  // for…in over a plain object visits its own keys in Object.keys order without building that array for
  // every object copied (a store copies every record on its way in and out).
  for (const key in value)
    if (hasOwn.call(value, key)) out[key] = copyData((value as Record<string, unknown>)[key], depth + 1);
  return out as T;
}
