import fc from 'fast-check';

/**
 * Request bodies for the fuzz suites of both servers: generated JSON, valid bodies with a field changed
 * or dropped, and valid bodies mutated as text (truncated, spliced, wrapped in deep nesting, padded past
 * a limit, broken UTF-8). Seeded and bounded by the suites.
 */

/** Values a field may be replaced with: every JSON kind, and the ones decoders trip on. */
export const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(
    null,
    '',
    0,
    -1,
    1e308,
    -0,
    Number.MAX_SAFE_INTEGER + 2,
    true,
    [],
    {},
    '\u0000',
    '\ud800',
    'x'.repeat(5000),
    { __proto__: null, constructor: 1 },
    JSON.parse('{"__proto__":{"polluted":true}}') as unknown,
    { toString: 'x', valueOf: 'y', hasOwnProperty: 1 },
  ),
);

/** `base` with one (possibly nested) field replaced, dropped, or added. */
export function fieldMutation(base: Record<string, unknown>): fc.Arbitrary<unknown> {
  const keys = Object.keys(base);
  return fc
    .tuple(
      fc.constantFrom(...keys, '__proto__', 'constructor', 'unknownField'),
      fc.constantFrom('set', 'delete', 'nest'),
      oddValue,
    )
    .map(([key, op, value]) => {
      const copy: Record<string, unknown> = { ...base };
      if (op === 'delete') delete copy[key];
      else if (op === 'set') Object.defineProperty(copy, key, { value, enumerable: true, writable: true });
      else {
        const inner = copy[key];
        copy[key] =
          inner && typeof inner === 'object' && !Array.isArray(inner)
            ? { ...(inner as Record<string, unknown>), [(JSON.stringify(value) ?? 'k').slice(0, 20)]: value }
            : [inner, value];
      }
      return copy;
    });
}

type TextOp = 'truncate' | 'splice' | 'deep' | 'veryDeep' | 'pad' | 'dupKey' | 'bom' | 'bytes';

/** `text` mutated as text; `bytes` gives invalid UTF-8 (returned as a Uint8Array). */
export function textMutation(text: fc.Arbitrary<string>, padTo: number): fc.Arbitrary<string | Uint8Array> {
  return fc
    .tuple(
      text,
      fc.constantFrom<TextOp>('truncate', 'splice', 'deep', 'veryDeep', 'pad', 'dupKey', 'bom', 'bytes'),
      fc.nat(),
      fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('{', '[', '"', '\\', '}', ']', ',', ':', 'null')),
      fc.integer({ min: 60, max: 70 }),
    )
    .map(([t, op, pos, insert, depth]) => {
      const at = t.length === 0 ? 0 : pos % t.length;
      switch (op) {
        case 'truncate':
          return t.slice(0, at);
        case 'splice':
          return t.slice(0, at) + insert + t.slice(at + (pos % 3));
        case 'deep':
          return '['.repeat(depth) + t + ']'.repeat(depth);
        case 'veryDeep':
          return `{"a":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
        case 'pad':
          return t.replace(/}\s*$/, `,"pad":"${'x'.repeat(padTo)}"}`);
        case 'dupKey':
          return t.replace(/^\{/, '{"a":1,"a":{"b":[1,2]},');
        case 'bom':
          return '\ufeff' + t;
        case 'bytes': {
          const b = Buffer.from(t, 'utf8');
          const out = new Uint8Array(b.length + 3);
          out.set(b);
          out.set([0xff, 0xc3, 0x28], Math.min(at, b.length));
          return out;
        }
      }
    });
}

/** A body: generated JSON, a field mutation of a valid body, or a text mutation of one. */
export function bodyOf(valid: fc.Arbitrary<Record<string, unknown>>, padTo: number) {
  return fc.oneof(
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? '') },
    { weight: 3, arbitrary: valid.chain(fieldMutation).map((v) => JSON.stringify(v) ?? '') },
    {
      weight: 3,
      arbitrary: textMutation(
        valid.map((v) => JSON.stringify(v)),
        padTo,
      ),
    },
    { weight: 1, arbitrary: valid.map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: fc.string({ maxLength: 64 }) },
  );
}

/** Resident set size in MiB. */
export const rssMiB = () => process.memoryUsage().rss / (1024 * 1024);
