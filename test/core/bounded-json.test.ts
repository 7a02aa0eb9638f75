import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  JsonDepthScanner,
  JsonTooDeepError,
  jsonDepth,
  parseBoundedJson,
} from '../../src/core/bounded-json.ts';

function depthOf(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  const children = Array.isArray(v) ? v : Object.values(v as Record<string, unknown>);
  return 1 + Math.max(0, ...children.map(depthOf));
}

describe('bounded JSON', () => {
  it('measures the nesting JSON.parse would build, whatever the strings hold', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 12 }), (v) => {
        const text = JSON.stringify(v);
        expect(jsonDepth(text)).toBe(depthOf(v));
      }),
      { seed: 11, numRuns: 500 },
    );
  });

  it('the streaming scanner agrees with jsonDepth however the bytes are split', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 8 }),
        fc.integer({ min: 0, max: 8 }),
        fc.nat(),
        (v, limit, cut) => {
          const bytes = new TextEncoder().encode(JSON.stringify(v));
          const at = bytes.length === 0 ? 0 : cut % bytes.length;
          const scanner = new JsonDepthScanner(limit);
          const ok = scanner.feed(bytes.subarray(0, at)) && scanner.feed(bytes.subarray(at));
          expect(ok).toBe(jsonDepth(JSON.stringify(v)) <= limit);
        },
      ),
      { seed: 12, numRuns: 500 },
    );
  });

  it('refuses past the limit before parsing, and parses at it', () => {
    const deep = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
    expect(parseBoundedJson(deep(4), 4)).toEqual({ a: { a: { a: { a: 1 } } } });
    expect(() => parseBoundedJson(deep(5), 4)).toThrow(JsonTooDeepError);
    expect(() => parseBoundedJson('['.repeat(1_000_000), 64)).toThrow(JsonTooDeepError);
    expect(() => parseBoundedJson('{"a":', 64)).toThrow(SyntaxError);
  });
});
