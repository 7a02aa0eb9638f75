import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { keyLines } from '../../src/cli/serve-banner.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { DEMO_TASKS, demoTargets, seedDemoTasks, startDemoHost } from '../../src/server/demo.ts';
import { startServer } from '../../src/server/start-server.ts';
import { openStore } from '../../src/store/open-store.ts';
import { spawnTaskplane } from '../support/process.ts';

/**
 * A newcomer's first minutes: a busy port is one line naming the flag and leaves no key behind that
 * nobody saw; the banner's `try:` line works pasted; `npm start` adds the sample tasks once per database.
 */
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
});

async function run(args: string[]) {
  const proc = await spawnTaskplane(args);
  const exit = await proc.exited;
  return { code: exit.code, stdout: proc.stdout, stderr: proc.stderr };
}

async function busyPort(): Promise<number> {
  const blocker: Server = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => blocker.close(r)));
  return (blocker.address() as { port: number }).port;
}

describe('first start', () => {
  it('a busy port is one line naming the port and --port, and no API key is stored unseen', async () => {
    const port = await busyPort();
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-first-'));
    const db = `sqlite:${dir}/plane.db`;
    const r = await run(['serve', '--port', String(port), '--db', db]);
    expect([r.code, r.stdout, r.stderr]).toEqual([
      2,
      '',
      `taskplane: port ${port} on 127.0.0.1 is already in use: choose another with --port (0 = any free port)\n`,
    ]);
    const store = await openStore(db);
    closers.push(() => store.close());
    expect(await store.listApiKeys()).toEqual([]);
  }, 30_000);

  it('the try: line carries npx and, off the default port, the URL', () => {
    const key = 'tp_generated';
    expect(
      keyLines({ url: 'http://127.0.0.1:8080', generatedApiKey: key }, 'sqlite:./data/taskplane.db', true),
    ).toContain(`  try: TASKPLANE_API_KEY=${key} npx taskplane tasks list`);
    expect(
      keyLines({ url: 'http://127.0.0.1:9090', generatedApiKey: key }, 'sqlite:./data/taskplane.db', true),
    ).toContain(`  try: TASKPLANE_API_KEY=${key} npx taskplane tasks list --url http://127.0.0.1:9090`);
    // A later start cannot show the key again (only its hash is kept): it says how to mint another.
    const later = keyLines({ url: 'http://127.0.0.1:9090', generatedApiKey: null }, 'sqlite:/tmp/p.db', true);
    expect(later).toContain('  new key: npx taskplane keys create --tenant default --db sqlite:/tmp/p.db');
    expect(later.join('\n')).not.toContain('tp_');
    // Keys given by TASKPLANE_API_KEYS or --keys-file: nothing to say.
    expect(keyLines({ url: 'http://127.0.0.1:8080', generatedApiKey: null }, 'memory:', false)).toEqual([]);
  });

  it('the pasted try: line lists tasks', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-first-'));
    const server = await startServer({ port: 0, db: `sqlite:${dir}/plane.db`, defaultMetrics: false });
    closers.push(() => server.close());
    const tryLine = keyLines(server, 'memory:', true).find((l) => l.includes('try:'))!;
    const [, key, args] = /TASKPLANE_API_KEY=(\S+) npx taskplane (.*)$/.exec(tryLine)!;
    const proc = await spawnTaskplane(args!.split(' '), { env: { TASKPLANE_API_KEY: key } });
    const exit = await proc.exited;
    expect([exit.code, proc.stderr, proc.stdout]).toEqual([0, '', 'no tasks\n']);
  }, 30_000);

  it('adds the demo sample tasks once per database, not on every start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-first-'));
    const host = await startDemoHost({ logger: silentLogger, db: `sqlite:${dir}/host.db` });
    closers.push(() => host.close());
    const start = () =>
      startServer({
        port: 0,
        db: `sqlite:${dir}/plane.db`,
        apiKeys: 'default:first-start-key-0123',
        targets: demoTargets(host),
        defaultMetrics: false,
      });
    const first = await start();
    expect(await seedDemoTasks(first)).toHaveLength(DEMO_TASKS.length);
    expect(await seedDemoTasks(first)).toBeNull();
    await first.close();
    const second = await start();
    closers.push(() => second.close());
    expect(await seedDemoTasks(second)).toBeNull();
    const { items } = await second.store.listEnvelopes({ tenant: 'default', limit: 100 });
    expect(items).toHaveLength(DEMO_TASKS.length);
  }, 60_000);
});
