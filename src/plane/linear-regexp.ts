import { RE2JS } from 're2js';
import type { RegExpEngine } from 'ajv/dist/types/index.js';

/**
 * Ajv's regular-expression engine backed by RE2 (the pure-JS port, so the plane still runs in the
 * browser lab): matching is linear in the input whatever the pattern, so `^(a+)+$` cannot stall the
 * event loop. RE2 has no backreferences or lookaround; a schema that uses them does not compile, which
 * the caller sees as a refused schema rather than a slow one.
 *
 * `seen` is told each pattern's length, so the caller can enforce its length limit. `lazy` defers each
 * pattern's compile to its first use.
 */
export function linearRegExp(seen: (pattern: string) => void = () => {}, lazy = false): RegExpEngine {
  const engine = (pattern: string): { test: (s: string) => boolean; toString: () => string } => {
    seen(pattern);
    // JSON Schema patterns are ECMA-262 syntax: translate the JS-only spellings (`\/`, `(?<name>`, `\u{…}`).
    const compile = () => RE2JS.compile(RE2JS.translateRegExp(pattern));
    // Lazy: compiled at the first test, for a validator whose patterns another thread compiled already
    // (a standalone validator made from a worker's code, server/worker-schema-compiler.ts).
    let re = lazy ? null : compile();
    return {
      // `pattern` is unanchored (JSON Schema): it matches when found anywhere in the string.
      test: (s: string) => (re ??= compile()).test(s),
      // Ajv keys its per-validator pattern table by this string.
      toString: () => `re2:${pattern}`,
    };
  };
  // Only read when generating standalone code, which the plane never does.
  return Object.assign(engine, { code: 'linearRegExp' });
}
