/**
 * JSON.parse with a nesting limit checked before anything is built. V8 parses deep input without
 * trouble, but everything after it (JSON.stringify, canonical hashing, the wire decoders) recurses and
 * dies with a RangeError on a few thousand levels: an internal error from a 100 KB request. Refusing at
 * parse time keeps every later step within a depth it can handle.
 */

/**
 * Nesting depth allowed in any request body. Agent messages and task inputs are documents, not trees
 * of thousands of levels; 64 leaves room for real data and keeps every recursive step far from the
 * stack limit.
 */
export const DEFAULT_MAX_JSON_DEPTH = 64;

/** Parsable JSON nested deeper than allowed; `depth` is the limit it passed. */
export class JsonTooDeepError extends Error {
  readonly code = 'JSON_TOO_DEEP';

  constructor(readonly maxDepth: number) {
    super(`JSON nesting deeper than ${maxDepth} levels`);
    this.name = 'JsonTooDeepError';
  }
}

/**
 * The deepest nesting of arrays and objects in `text`, counting only brackets outside strings, or
 * `Infinity` as soon as it passes `limit` (the scan stops there). Linear, allocates nothing.
 * Malformed text gives some number; JSON.parse judges well-formedness afterwards.
 */
export function jsonDepth(text: string, limit = Number.MAX_SAFE_INTEGER): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) {
        max = depth;
        if (max > limit) return Infinity;
      }
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return max;
}

/**
 * JSON.parse that first refuses nesting deeper than `maxDepth` with JsonTooDeepError. Bad JSON throws
 * JSON.parse's SyntaxError; callers map both to their protocol's error.
 */
export function parseBoundedJson(text: string, maxDepth = DEFAULT_MAX_JSON_DEPTH): unknown {
  // Fewer characters than the limit cannot nest past it.
  if (text.length > maxDepth && jsonDepth(text, maxDepth) > maxDepth) throw new JsonTooDeepError(maxDepth);
  return JSON.parse(text) as unknown;
}
