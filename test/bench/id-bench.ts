/**
 * `npx tsx test/bench/id-bench.ts`: newId (src/core/ids.ts) against the character-by-character string
 * append it replaced (kept here as the anchor), µs per id including a Map.set of it (which makes V8
 * flatten the string, as the store's use does). Medians of 5 rounds of 300,000 ids each, alternating.
 */
import { randomFillSync } from 'node:crypto';
import { SystemClock } from '../../src/core/clock.ts';
import { newId } from '../../src/core/ids.ts';
import { BufferedRandom } from '../../src/core/buffered-random.ts';
import { median } from './stats.ts';

const random = new BufferedRandom({ next: Math.random, bytes: (n) => randomFillSync(new Uint8Array(n)) });
const clock = new SystemClock();
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** The previous newId: 36 appends, a cons-string chain flattened on first use. */
function appendedId(prefix: string): string {
  let t = Math.floor(clock.now());
  let timePart = '';
  for (let i = 0; i < 10; i++) {
    timePart = ALPHABET[t % 32] + timePart;
    t = Math.floor(t / 32);
  }
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of random.bytes(17)) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  return prefix + timePart + out.slice(0, 26);
}

const N = 300_000;
const ids = new Map<string, number>();
function perId(make: () => string): number {
  const t0 = performance.now();
  for (let i = 0; i < N; i++) ids.set(make(), i);
  ids.clear();
  return ((performance.now() - t0) * 1000) / N;
}
const now: number[] = [];
const before: number[] = [];
for (let round = 0; round < 5; round++) {
  before.push(perId(() => appendedId('task_')));
  now.push(perId(() => newId(clock, random, 'task_')));
}
const mid = (xs: number[]) => median(xs).toFixed(2);
console.log(`newId ${mid(now)} µs per id; string append ${mid(before)} µs (medians of 5 × ${N})`);
