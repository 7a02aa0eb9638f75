/**
 * `npx tsx test/bench/open-listing.ts [finished]`: the memory store's listing of open jobs (as the
 * engine's lease, adoption and reconciliation passes read it: listActiveEnvelopes, pages of 100) with
 * 1,000 open jobs alone and beside `finished` finished ones (default 50,000), side by side in one run.
 * Medians of 7 rounds, ms per listing of all 1,000, and their ratio: near 1 when the cost is in the open
 * jobs only.
 */
import { newEnvelope } from '../../src/core/envelope.ts';
import { listActiveEnvelopes } from '../../src/plane/reconciler.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { median } from './stats.ts';

const OPEN = 1_000;
const finished = Number(process.argv[2] ?? 50_000);

async function storeWith(done: number): Promise<MemoryStore> {
  const store = new MemoryStore();
  for (let i = 0; i < done + OPEN; i++) {
    const env = newEnvelope({
      id: `tsk_${String(i).padStart(8, '0')}`,
      tenant: 't',
      connector: 'a2a',
      target: 'agent',
      requestKind: 'message',
      input: 'go',
      inputHash: 'h',
      createdAt: i,
    });
    await store.createEnvelope({ ...env, state: i < done ? 'succeeded' : 'running', updatedAt: i }, []);
  }
  return store;
}

async function listingMs(store: MemoryStore): Promise<number> {
  const t0 = performance.now();
  const open = await listActiveEnvelopes(store, { target: 'agent' });
  if (open.length !== OPEN) throw new Error(`listed ${open.length} open jobs, not ${OPEN}`);
  return performance.now() - t0;
}

const alone = await storeWith(0);
const beside = await storeWith(finished);
const a: number[] = [];
const b: number[] = [];
for (let round = 0; round < 7; round++) {
  a.push(await listingMs(alone));
  b.push(await listingMs(beside));
}
const [ma, mb] = [median(a), median(b)];
console.log(`open jobs listed (${OPEN}, pages of 100), memory store, median of 7:`);
console.log(`  alone: ${ma.toFixed(2)} ms`);
console.log(`  beside ${finished} finished: ${mb.toFixed(2)} ms (${(mb / ma).toFixed(2)}x)`);
