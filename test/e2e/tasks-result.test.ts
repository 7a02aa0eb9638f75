import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, spawnProcess, spawnTaskplane, type TestProcess } from '../support/process.ts';

/**
 * `taskplane tasks get` and `tasks result` against a real `serve --demo`: a person reads what the agent
 * produced, and why a task failed, without going through JSON.
 */
const KEY = 'result-e2e-key-0123';
const procs: TestProcess[] = [];
afterAll(async () => {
  for (const p of procs) await p.kill('SIGKILL').catch(() => {});
});

async function cli(
  url: string,
  ...args: string[]
): Promise<{ code: number | null; out: string; err: string }> {
  const proc = await spawnTaskplane(['tasks', ...args, '--key', KEY, '--url', url]);
  const exit = await proc.exited;
  return { code: exit.code, out: proc.stdout, err: proc.stderr };
}

describe('taskplane tasks result', () => {
  it('prints a text artifact raw, shows output and failure in `tasks get`, and --json for scripts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'taskplane-result-'));
    const serve = await spawnProcess(
      process.execPath,
      [
        join(REPO_ROOT, 'bin/taskplane.js'),
        'serve',
        '--demo',
        '--port',
        '0',
        '--db',
        `sqlite:${dir}/plane.db`,
        // Nothing listens on the discard port: starts there are refused before anything is sent.
        '--target',
        'nowhere=http://127.0.0.1:9',
      ],
      {
        cwd: dir,
        env: { TASKPLANE_API_KEYS: `default:${KEY}`, LOG_LEVEL: undefined },
        ready: /demo host: (http:\S+)/,
      },
    );
    procs.push(serve);
    const url = /taskplane serve ready (http:\S+)/.exec(serve.stdout)![1]!;

    const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
    // Created and awaited over HTTP, so the CLI runs (each a process start) are the ones under test.
    const create = async (input: unknown) => {
      const res = await fetch(`${url}/v1/tasks`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ target: 'demo', input }),
      });
      const id = ((await res.json()) as { id: string }).id;
      await terminal(url, id, auth);
      return id;
    };

    const echo = await create('two words');
    const raw = await cli(url, 'result', echo);
    expect(raw).toEqual({ code: 0, out: 'two words', err: '' });
    const got = await cli(url, 'get', echo);
    expect(got.code).toBe(0);
    expect(got.out).toMatch(/^output: +two words$/m);

    const asJson = await cli(url, 'result', echo, '--json');
    expect(JSON.parse(asJson.out)).toMatchObject({
      id: echo,
      state: 'succeeded',
      error: null,
      artifacts: [{ artifactId: 'echo', parts: [{ kind: 'text', text: 'two words' }] }],
    });

    // A person rejects the succeeded task's output: the verdict, who and why, apart from its state.
    const rejected = await cli(
      url,
      'reject',
      echo,
      '--reason',
      'not the words we asked for',
      '--actor',
      'ana',
    );
    expect(rejected.code).toBe(0);
    expect(rejected.out).toMatch(/^acceptance: +rejected by ana \(/m);
    expect(rejected.out).toMatch(/^ +person +failed: not the words we asked for$/m);
    expect(rejected.out).toContain('succeeded');

    const failing = await create({ durationMs: 0, steps: 1, fail: true });
    const failedGet = await cli(url, 'get', failing);
    expect(failedGet.out).toMatch(/^failure: +failed: The demo agent was asked to fail\.$/m);
    const failedResult = await cli(url, 'result', failing);
    expect(failedResult.code).toBe(1);
    expect(failedResult.err).toContain('task failed: The demo agent was asked to fail.');

    // A start that cannot reach its target says so, instead of a silent `accepted`.
    const unreachable = await fetch(`${url}/v1/tasks?wait=started`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ target: 'nowhere', input: 'hello' }),
    });
    const stuck = ((await unreachable.json()) as { id: string }).id;
    const stuckGet = await cli(url, 'get', stuck);
    expect(stuckGet.out).toMatch(/^last error: +start, (just now|\d+ (s|min) ago): unavailable: /m);
    expect(stuckGet.out).toMatch(/^start calls: +\d+$/m);
    expect(stuckGet.out).toMatch(/^next retry: +\S/m);

    await serve.stop();
  }, 90_000);
});

/** Reads the task's event stream until a state change to a terminal state: waits on events, not time. */
async function terminal(url: string, id: string, headers: Record<string, string>): Promise<void> {
  const res = await fetch(`${url}/v1/tasks/${id}/events`, { headers });
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`event stream of ${id} ended before the task did`);
    buffered += dec.decode(value, { stream: true });
    if (/"to":"(succeeded|failed|cancelled|expired|lost)"/.test(buffered)) break;
  }
  await reader.cancel();
}
