import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffPolicy, nextBackoff } from '../../src/core/backoff.ts';
import { TaskplaneError } from '../../src/core/errors.ts';
import { canonicalJson, inputHash, sha256Hex } from '../../src/core/canonical-json.ts';
import { SeededRandom } from '../../src/core/random.ts';

describe('canonical JSON and the input hash', () => {
  it('is independent of key order and whitespace', () => {
    expect(canonicalJson({ b: 1, a: [true, null, 'x'], c: { z: 0, y: -0 } })).toBe(
      '{"a":[true,null,"x"],"b":1,"c":{"y":0,"z":0}}',
    );
    expect(inputHash({ a: 1, b: 2 })).toBe(inputHash(JSON.parse('{ "b": 2,\n "a": 1 }')));
    expect(inputHash({ a: 1 })).not.toBe(inputHash({ a: 2 }));
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(inputHash('x')).toBe('sha256:' + sha256Hex('"x"'));
  });

  it("hashes as the pure-JS SHA-256 does (Node's own is used where the runtime has it), strings as UTF-8", () => {
    const pureJs = (bytes: Uint8Array) => bytesToHex(sha256(bytes));
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.uint8Array(), (text, bytes) => {
        expect(sha256Hex(text)).toBe(pureJs(utf8ToBytes(text)));
        expect(sha256Hex(bytes)).toBe(pureJs(bytes));
      }),
    );
  });

  it('round-trips through JSON.parse for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
      }),
    );
  });

  it('refuses values with no JSON form', () => {
    expect(() => canonicalJson(Number.NaN)).toThrow(TypeError);
    expect(() => canonicalJson(() => 1)).toThrow(TypeError);
  });
});

describe('backoff with full jitter', () => {
  it('stays within [0, min(max, initial·m^n)] and honours the deadline', () => {
    const policy = backoffPolicy({
      initialIntervalMs: 100,
      multiplier: 2,
      maximumIntervalMs: 5_000,
      deadlineMs: 60_000,
    });
    const random = new SeededRandom(1);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 0, max: 59_999 }),
        (attempt, elapsed) => {
          const wait = nextBackoff(policy, attempt, random, elapsed)!;
          expect(wait).toBeGreaterThanOrEqual(0);
          expect(wait).toBeLessThanOrEqual(Math.min(5_000, 100 * 2 ** attempt));
          expect(wait).toBeLessThanOrEqual(60_000 - elapsed);
        },
      ),
    );
    expect(nextBackoff(policy, 3, random, 60_000)).toBeUndefined();
  });

  it('without jitter follows the push schedule 5·2^k seconds', () => {
    const policy = backoffPolicy({
      initialIntervalMs: 5_000,
      multiplier: 2,
      maximumIntervalMs: 3_600_000,
      jitter: 'none',
    });
    const random = new SeededRandom(1);
    const waits = Array.from({ length: 8 }, (_, k) => nextBackoff(policy, k, random)!);
    // Cumulative wait after k retries is 5·(2^k − 1) s: 7 retries ≈ 10.6 min, 8 ≈ 21 min.
    expect(waits.slice(0, 7).reduce((a, b) => a + b, 0)).toBe(5_000 * (2 ** 7 - 1));
    expect(waits.reduce((a, b) => a + b, 0)).toBe(5_000 * (2 ** 8 - 1));
  });

  it('a bad option names its field', () => {
    expect(() => backoffPolicy({ initialIntervalMs: 0 })).toThrow(TaskplaneError);
    expect(() => backoffPolicy({ initialIntervalMs: 0 })).toThrow(
      expect.objectContaining({ code: 'config', field: 'initialIntervalMs' }),
    );
    expect(() => backoffPolicy({ maximumIntervalMs: 1, initialIntervalMs: 10 }, 'reattach.')).toThrow(
      /reattach\.maximumIntervalMs/,
    );
  });
});
