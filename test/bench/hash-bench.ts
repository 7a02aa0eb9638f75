/**
 * `npx tsx test/bench/hash-bench.ts`: sha256Hex (src/core/canonical-json.ts: Node's own SHA-256 where
 * the runtime hands it out) against the pure-JS one it falls back to (@noble/hashes, the anchor), µs per
 * call for a 200-byte string (an input) and a 1 MiB one (a large artifact). Medians of 5 rounds,
 * alternating.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { sha256Hex } from '../../src/core/canonical-json.ts';
import { median } from './stats.ts';

const pureJs = (text: string) => bytesToHex(sha256(utf8ToBytes(text)));
const contenders = [
  ['pure JS (@noble/hashes)', pureJs],
  ['sha256Hex', sha256Hex],
] as const;

for (const size of [200, 1 << 20]) {
  const text = 'x'.repeat(size);
  const calls = size > 10_000 ? 20 : 20_000;
  const rounds = new Map<string, number[]>(contenders.map(([name]) => [name, []]));
  for (let round = 0; round < 5; round++)
    for (const [name, hash] of contenders) {
      hash(text);
      const t0 = performance.now();
      for (let i = 0; i < calls; i++) hash(text);
      rounds.get(name)!.push(((performance.now() - t0) / calls) * 1000);
    }
  const [anchor, ours] = contenders.map(([name]) => median(rounds.get(name)!));
  console.log(
    `${size} bytes: pure JS ${anchor!.toFixed(1)} µs, sha256Hex ${ours!.toFixed(1)} µs (${(anchor! / ours!).toFixed(1)}×)`,
  );
}
