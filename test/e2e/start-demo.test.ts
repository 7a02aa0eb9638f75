import { mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EMULATOR_DEMO_TASKS, startDemo, type DemoRun } from '../../scripts/start-demo.ts';
import { parseDemoTasks } from '../../src/server/demo.ts';
import { CLI_FROM_SOURCE, REPO_ROOT, spawnProcess } from '../support/process.ts';
import { EventFollower, PlaneClient } from './plane-client.ts';

/**
 * `npm start` (scripts/start-demo.ts): the OpenAI and Claude emulators on loopback, then the real CLI
 * (`serve --demo`, here from source) with targets `openai` and `claude` on them. The sample tasks on
 * both reach the states they are scripted for, the Claude tool confirmation is answered through the
 * API the dashboard uses, and a SIGTERM stops serve and then the emulators.
 */
const KEY = 'start-demo-key-0123456';

interface Task {
  id: string;
  state: string;
  target: string;
  workflowId: string | null;
  nativeState: string | null;
  pendingInput: { requestId: string; requests?: Array<{ requestId: string; method?: string }> } | null;
}

/** `npm start`'s command from a scratch directory (its data/ goes there), with tsx resolved from the repo. */
async function npmStart(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const tsx = createRequire(join(REPO_ROOT, 'package.json')).resolve('tsx');
  return spawnProcess(
    process.execPath,
    [
      '--import',
      tsx,
      join(REPO_ROOT, 'scripts/start-demo.ts'),
      '--port',
      '0',
      '--db',
      `sqlite:${dir}/plane.db`,
    ],
    {
      cwd: dir,
      env: { TASKPLANE_API_KEYS: `default:${KEY}`, LOG_LEVEL: undefined },
      ready: /more sample tasks: started 9 on openai, claude/,
      readyTimeoutMs: 60_000,
    },
  );
}

let run: DemoRun | null = null;
afterAll(async () => {
  if (run && run.child.exitCode === null) run.child.kill('SIGKILL');
  await run?.exited;
});

describe('npm start', () => {
  it('its sample tasks file is checked before anything starts, naming the wrong field', () => {
    expect(parseDemoTasks(JSON.stringify(EMULATOR_DEMO_TASKS), 'f.json')).toEqual(EMULATOR_DEMO_TASKS);
    expect(() => parseDemoTasks('[{"target":"claude","label":"x"}]', 'f.json')).toThrow(
      /demo-tasks\[0\]\.input: is required/,
    );
    expect(() =>
      parseDemoTasks('[{"target":"claude","label":"x","input":"a","budget":{"limit":"9"}}]', 'f.json'),
    ).toThrow(/demo-tasks\[0\]\.budget/);
    expect(() => parseDemoTasks('{}', 'f.json')).toThrow(/f\.json must hold an array/);
    expect(() => parseDemoTasks('nope', 'f.json')).toThrow(/f\.json is not JSON/);
  });

  it('runs openai and claude targets on the emulators beside the demo host; their tasks reach their states', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-start-demo-'));
    run = await startDemo({
      cli: CLI_FROM_SOURCE,
      cwd: dir,
      args: ['--port', '0', '--db', `sqlite:${dir}/plane.db`],
      env: { ...process.env, TASKPLANE_API_KEYS: `default:${KEY}`, LOG_LEVEL: undefined },
      stdio: ['ignore', 'pipe', 'pipe'],
      claudeStepMs: 0,
      openaiDeltaMs: 20,
    });
    let stdout = '';
    let stderr = '';
    run.child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    run.child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const ready = await new Promise<string>((resolve, reject) => {
      const check = () => {
        const url = /taskplane serve ready (http:\S+)/.exec(stdout)?.[1];
        if (url && stdout.includes('more sample tasks')) resolve(url);
      };
      run!.child.stdout!.on('data', check);
      void run!.exited.then((code) => reject(new Error(`serve exited ${code}\n${stdout}\n${stderr}`)));
    });
    expect(stdout).toMatch(/more sample tasks: started 9 on openai, claude/);

    const client = new PlaneClient(ready, KEY);
    const byLabel = async () => {
      const { body } = await client.call<{ tasks: Task[] }>('GET', '/v1/tasks?limit=100');
      return new Map(body.tasks.map((t) => [t.workflowId?.replace(/^demo:/, '') ?? '', t]));
    };
    // Re-checked on every event the plane streams; the test's own bound is the failure case.
    const reach = (want: Record<string, (t: Task) => boolean>) =>
      new Promise<Map<string, Task>>((resolve) => {
        let done = false;
        const check = async () => {
          const tasks = await byLabel().catch(() => null);
          if (done || !tasks) return;
          if (Object.entries(want).every(([label, ok]) => tasks.has(label) && ok(tasks.get(label)!))) {
            done = true;
            follower.stop();
            resolve(tasks);
          }
        };
        const follower = new EventFollower(
          client,
          () => void check(),
          () => void check(),
        );
      });
    const is = (state: string) => (t: Task) => t.state === state;
    const tasks = await reach({
      'openai: short answer': is('succeeded'),
      'openai: long answer': is('succeeded'),
      'openai: stream drops and resumes': is('succeeded'),
      'openai: fails on purpose': is('failed'),
      'claude: answers': is('succeeded'),
      'claude: asks to run a tool': (t) => t.pendingInput?.requests?.[0]?.method === 'tool_confirmation',
      'claude: needs a lookup': (t) => t.pendingInput?.requests?.[0]?.method === 'custom_tool_result',
      'claude: pauses at its budget': (t) => t.nativeState === 'idle/budget_reached',
      'claude: fails on purpose': is('failed'),
    });
    expect(new Set([...tasks.values()].map((t) => t.target))).toEqual(
      new Set(['demo', 'demo-mcp', 'openai', 'claude']),
    );
    expect([...tasks.values()].filter((t) => t.target === 'openai' || t.target === 'claude')).toHaveLength(
      EMULATOR_DEMO_TASKS.length,
    );

    // The pending tool confirmation is answerable the way the dashboard answers it: its key and "allow".
    const asking = tasks.get('claude: asks to run a tool')!;
    expect(asking.state).toBe('waiting_for_input');
    const answered = await client.call('POST', `/v1/tasks/${asking.id}/input`, {
      requestId: asking.pendingInput!.requestId,
      value: 'allow',
    });
    expect(answered.status).toBe(200);
    await reach({ 'claude: asks to run a tool': is('succeeded') });

    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    expect(stdout).toContain('taskplane serve stopped');
    // The emulators went with it.
    await expect(fetch(`${run.emulators.claude}/v1/agents`)).rejects.toThrow();
    await expect(fetch(`${run.emulators.openai}/responses/x`)).rejects.toThrow();
  }, 120_000);

  it('`npm start` itself: the script runs the entry, which runs the built CLI; a doubled SIGINT is passed on once and ends all', async () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.start).toBe('node --import tsx scripts/start-demo.ts');
    const proc = await npmStart('taskplane-npm-start-');
    const claude = /Claude Managed Agents emulator at (http:\S+)/.exec(proc.stdout)![1]!;
    expect(proc.stdout).toMatch(
      /^taskplane demo: local emulators \(stand-ins for testing, not the real services\)/,
    );
    expect((await fetch(`${claude}/v1/agents`)).status).toBe(401);
    // npm and a terminal may both deliver one Ctrl-C: serve still shuts down in order.
    proc.child.kill('SIGINT');
    proc.child.kill('SIGINT');
    const exit = await proc.exited;
    // 130 would be serve ended by a SIGINT it had no listener for (start-demo exits with 128 + n): what
    // serve printed tells whether that came before its listener or after its stop() took it off.
    expect(exit.code, `stdout:\n${proc.stdout.slice(-3000)}\nstderr:\n${proc.stderr.slice(-3000)}`).toBe(0);
    expect(proc.stdout).toContain('taskplane serve stopped');
    await expect(fetch(`${claude}/v1/agents`)).rejects.toThrow();
  }, 120_000);

  it('when `npm start` is killed outright (SIGKILL, nothing passed on), serve stops too instead of running on orphaned', async () => {
    const proc = await npmStart('taskplane-npm-start-kill-');
    const serveUrl = /taskplane serve ready (http:\S+)/.exec(proc.stdout)![1]!;
    expect((await fetch(`${serveUrl}/healthz`)).status).toBe(200);
    proc.child.kill('SIGKILL');
    await proc.exited;
    // serve is its own process (group): it must notice on its own. Until it has, its port still answers;
    // the test's bound is the failure case.
    for (;;) {
      const answered = await fetch(`${serveUrl}/healthz`).then(
        () => true,
        () => false,
      );
      if (!answered) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 120_000);
});
