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
 * `jsonDepth` over a body as its bytes arrive, so a body nested too deep is refused at the first byte
 * past the limit instead of after it was read whole. Safe on raw UTF-8: the bytes it looks at (quote,
 * backslash, brackets) are ASCII, and no byte of a multi-byte sequence is below 0x80.
 */
export class JsonDepthScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;

  constructor(readonly maxDepth: number) {}

  /** False once the nesting so far passed `maxDepth`. */
  feed(bytes: Uint8Array): boolean {
    for (let i = 0; i < bytes.length; i++) {
      const c = bytes[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === 0x5c) this.escaped = true;
        else if (c === 0x22) this.inString = false;
      } else if (c === 0x22) this.inString = true;
      else if (c === 0x5b || c === 0x7b) {
        if (++this.depth > this.maxDepth) return false;
      } else if (c === 0x5d || c === 0x7d) this.depth--;
    }
    return true;
  }
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
