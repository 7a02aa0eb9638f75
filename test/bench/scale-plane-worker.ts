/**
 * One plane process for bench:scale's throughput row: a Plane on the PostgreSQL schema in argv[2] with
 * its own fake remote agent (each job finishes as soon as it started), tenant argv[4]. Prints `ready`,
 * waits for the file argv[5] to exist (every process starts at once), creates argv[3] jobs 32 at a time, waits
 * until all are `succeeded` in the store, and prints `{"elapsedMs", "cpuMs"}`.
 */
import { existsSync } from 'node:fs';
import { SystemClock } from '../../src/core/clock.ts';
import { CryptoRandom } from '../../src/core/random.ts';
import type { Connector } from '../../src/connectors/connector.ts';
import { Plane } from '../../src/plane/plane.ts';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { FakeRemote } from '../plane/fake-remote.ts';

const [url, jobsArg, tenant, goFile] = process.argv.slice(2) as [string, string, string, string];
const jobs = Number(jobsArg);
const clock = new SystemClock();
const store = await PostgresStore.open({ url, poolMax: 8 });
const remote = new FakeRemote(clock);
const base = remote.connector('fake', {});
const connector: Connector = Object.assign(Object.create(base) as Connector, {
  start: async (...args: Parameters<Connector['start']>) => {
    const snap = await base.start(...args);
    setTimeout(() => remote.set(snap.remoteId, 'succeeded'), 0);
    return snap;
  },
});
const plane = new Plane({
  instanceId: `bench-${tenant}`,
  clock,
  random: new CryptoRandom(),
  store,
  connectors: (t) => (t === 'fake' ? connector : undefined),
  options: { reconcile: { intervalMs: 3_600_000 } },
});
await plane.start();
console.log('ready');
while (!existsSync(goFile)) await new Promise((r) => setTimeout(r, 10));

const t0 = performance.now();
const cpu0 = process.cpuUsage();
let next = 0;
await Promise.all(
  Array.from({ length: 32 }, async () => {
    while (next < jobs) {
      const i = next++;
      await plane.create({ tenant, target: 'fake', input: i, idempotencyKey: `${tenant}-${i}` });
    }
  }),
);
for (;;) {
  const by = await store.countEnvelopesByState(tenant);
  if ((by.succeeded ?? 0) >= jobs) break;
  await new Promise((r) => setTimeout(r, 20));
}
const cpu = process.cpuUsage(cpu0);
console.log(JSON.stringify({ elapsedMs: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000 }));
await plane.stop();
await store.close();
process.exit(0);
