import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/core/logger.ts';
import { demoTargets, startDemoHost } from '../../src/server/demo.ts';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';
import { spawnTaskplane, type TestProcess } from '../support/process.ts';

/**
 * `taskplane tasks watch <id>` across a plane restart: it says it lost the stream, reconnects with
 * Last-Event-ID once the plane is back, prints every event once, and ends at the terminal state.
 */
const KEY = 'watch-e2e-key-0123456';
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
});

describe('tasks watch', () => {
  it('survives a plane restart: reconnects with Last-Event-ID and misses or repeats nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-watch-'));
    const host = await startDemoHost({ logger: silentLogger, db: `sqlite:${dir}/host.db` });
    closers.push(() => host.close());
    const start = (port: number): Promise<RunningServer> =>
      startServer({
        port,
        db: `sqlite:${dir}/plane.db`,
        apiKeys: `default:${KEY}`,
        targets: demoTargets(host),
        defaultMetrics: false,
        lab: false,
      });
    const first = await start(0);
    const url = first.url;
    const { envelope } = await first.plane.create(
      { tenant: 'default', target: 'demo', input: { durationMs: 6000, steps: 6 } },
      { wait: 'started' },
    );
    const watch: TestProcess = await spawnTaskplane([
      'tasks',
      'watch',
      envelope.id,
      '--json',
      '--url',
      url,
      '--key',
      KEY,
    ]);
    closers.push(() => watch.kill('SIGKILL'));
    await watch.waitForLine(/"seq":/, 30_000);
    await first.close();
    await watch.waitForLine(/lost the event stream/, 30_000, 'stderr');

    const second = await start(Number(new URL(url).port));
    closers.push(() => second.close());
    await watch.waitForLine(/reconnected; resuming after event \d+ \(Last-Event-ID\)/, 30_000, 'stderr');
    const exit = await watch.exited;
    expect(exit.code).toBe(0);
    const events = watch.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { seq: number; type: string; data: { to?: string } });
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
    expect(events.at(-1)).toMatchObject({ type: 'state_changed', data: { to: 'succeeded' } });
    expect(watch.stderr).not.toMatch(/TypeError|terminated/);
  }, 90_000);
});
