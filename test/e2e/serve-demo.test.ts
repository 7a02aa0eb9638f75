import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { serveLogLevel } from '../../src/cli/serve-command.ts';
import { DEMO_TASKS } from '../../src/server/demo.ts';
import { CLI_FROM_SOURCE, spawnProcess, spawnTaskplane, type TestProcess } from '../support/process.ts';

/**
 * `serve --demo` (what `npm start` runs) as a real process in a scratch directory: the lines for a
 * person are not buried in JSON logs, and after a SIGKILL the restarted demo host takes its unfinished
 * demo tasks back at once (stable host id) instead of after the 30 s host lease of a random id.
 */
const KEY = 'demo-e2e-key-0123';
const procs: TestProcess[] = [];
afterAll(async () => {
  for (const p of procs) await p.kill('SIGKILL').catch(() => {});
});

function serveDemo(dir: string, extra: string[] = []): Promise<TestProcess> {
  return spawnProcess(
    process.execPath,
    [CLI_FROM_SOURCE, 'serve', '--demo', '--port', '0', '--db', `sqlite:${dir}/plane.db`, ...extra],
    {
      cwd: dir,
      env: { TASKPLANE_API_KEYS: `default:${KEY}`, LOG_LEVEL: undefined },
      ready: /demo host: (http:\S+)/,
    },
  ).then((p) => (procs.push(p), p));
}

describe('serve --demo', () => {
  it('logs at warn by default, so the human lines stand out; --log-level and LOG_LEVEL override', () => {
    expect(serveLogLevel(undefined, undefined, true)).toBe('warn');
    expect(serveLogLevel(undefined, undefined, false)).toBe('info');
    expect(serveLogLevel(undefined, 'debug', true)).toBe('debug');
    expect(serveLogLevel('error', 'debug', true)).toBe('error');
    expect(() => serveLogLevel('loud', undefined, true)).toThrow(/log-level/);
  });

  it('`taskplane tasks` takes its flags after the subcommand, as the README shows', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-demo-'));
    const serve = await serveDemo(dir);
    const url = /taskplane serve ready (http:\S+)/.exec(serve.stdout)![1]!;
    const tasks = async (...args: string[]) => {
      const proc = await spawnTaskplane(['tasks', ...args]);
      const exit = await proc.exited;
      expect(proc.stderr).toBe('');
      expect(exit.code).toBe(0);
      return proc.stdout;
    };
    const listed = JSON.parse(await tasks('list', '--json', '--key', KEY, '--url', url)) as {
      tasks: { id: string; target: string; connector: string }[];
    };
    // The sample tasks go to the demo host's two faces: A2A as `demo`, MCP as `demo-mcp`.
    const onTarget = (name: string) => listed.tasks.filter((t) => t.target === name);
    expect(onTarget('demo').length).toBe(DEMO_TASKS.filter((t) => t.target === 'demo').length);
    expect(onTarget('demo-mcp').length).toBe(DEMO_TASKS.filter((t) => t.target === 'demo-mcp').length);
    expect(onTarget('demo-mcp').length).toBeGreaterThan(0);
    expect(onTarget('demo').every((t) => t.connector === 'a2a')).toBe(true);
    expect(onTarget('demo-mcp').every((t) => t.connector === 'mcp')).toBe(true);
    expect(listed.tasks.length).toBe(DEMO_TASKS.length);
    const id = listed.tasks[0]!.id;
    // Parent flags before the subcommand still work too.
    const got = JSON.parse(await tasks('--key', KEY, '--url', url, 'get', id, '--json')) as { id: string };
    expect(got.id).toBe(id);
    await serve.stop();
  }, 90_000);

  it('prints a readable block with no info JSON, and a restart resumes the demo tasks at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-demo-'));
    const first = await serveDemo(dir);
    expect(first.stdout.split('\n')[0]).toMatch(/^taskplane serve ready http:/);
    expect(first.stdout).toMatch(/─{20,}/);
    expect(first.stdout).toContain('/lab/');
    // Nothing below warn on stderr: the JSON that used to bury the URL and key is gone by default.
    const infoLines = first.stderr.split('\n').filter((l) => /"level":(10|20|30)\b/.test(l));
    expect(infoLines).toEqual([]);
    await first.kill('SIGKILL');

    // Second run at info, to read the host's recovery counts from its ready log line.
    const second = await serveDemo(dir, ['--log-level', 'info']);
    const ready = await second.waitForLine(/"msg":"agent host ready"/, 30_000, 'stderr');
    const line = JSON.parse(ready.input!) as {
      hostId: string;
      recovered: { resumed: number; waiting: number };
    };
    expect(line.hostId).toBe('taskplane-demo-host');
    // The unfinished sample tasks, A2A tasks and MCP tool tasks alike (still running, waiting for input,
    // the long haul), are the restarted host's own: resumed now, not skipped as a live stranger's for 30 s.
    expect(line.recovered.resumed + line.recovered.waiting).toBeGreaterThanOrEqual(2);
    await second.stop();
  }, 90_000);
});
