import { describe, expect, it } from 'vitest';
import { spawnTaskplane } from '../support/process.ts';

/**
 * A bad flag value, given to the real CLI, is refused before anything starts: one line on stderr that
 * names the flag, the value and what it accepts, exit status 2, nothing on stdout.
 */
async function run(args: string[], env: Record<string, string | undefined> = {}) {
  const proc = await spawnTaskplane(args, { env });
  const exit = await proc.exited;
  return { code: exit.code, stdout: proc.stdout, stderr: proc.stderr };
}

const LEVELS = 'fatal, error, warn, info, debug, trace, silent';

describe('CLI flag values', () => {
  it.each([
    [
      ['serve', '--log-level', 'loud'],
      `option '--log-level <level>' argument 'loud' is invalid. Allowed choices are ${LEVELS}.`,
    ],
    [
      ['serve', '--lost-policy', 'maybe'],
      "option '--lost-policy <policy>' argument 'maybe' is invalid. Allowed choices are resubmit, escalate.",
    ],
    [
      ['serve', '--port', '99999'],
      "option '--port <port>' argument '99999' is invalid. Expected an integer in 0..65535.",
    ],
    [
      ['serve', '--reconcile-interval-ms', 'soon'],
      "option '--reconcile-interval-ms <ms>' argument 'soon' is invalid. Expected a positive integer.",
    ],
    [
      ['serve', '--tenant-streams', '0'],
      "option '--tenant-streams <n>' argument '0' is invalid. Expected a positive integer.",
    ],
    [
      ['serve', '--tenant-fair-creates', '0'],
      "option '--tenant-fair-creates <n>' argument '0' is invalid. Expected a positive integer.",
    ],
    [
      ['serve', '--tenant-refusals-per-second', 'often'],
      "option '--tenant-refusals-per-second <n>' argument 'often' is invalid. Expected a number.",
    ],
    [
      ['serve', '--tenant-writes-per-second', 'lots'],
      "option '--tenant-writes-per-second <n>' argument 'lots' is invalid. Expected a number.",
    ],
    [
      ['host', '--auth', 'basic'],
      "option '--auth <mode>' argument 'basic' is invalid. Allowed choices are none, keys.",
    ],
    [
      ['host', '--push-attempts', '2.5'],
      "option '--push-attempts <n>' argument '2.5' is invalid. Expected a positive integer.",
    ],
    [
      ['host', '--log-level', 'chatty'],
      `option '--log-level <level>' argument 'chatty' is invalid. Allowed choices are ${LEVELS}.`,
    ],
    [
      ['tasks', 'list', '--state', 'running,bogus'],
      "option '--state <states>' argument 'running,bogus' is invalid. 'bogus' not allowed. Allowed choices are accepted, running, waiting_for_input, cancel_requested, succeeded, failed, cancelled, expired, unknown, lost.",
    ],
    [
      ['tasks', 'list', '--limit', '0'],
      "option '--limit <n>' argument '0' is invalid. Expected an integer in 1..500.",
    ],
    [
      ['tasks', 'create', '--target', 't', '--input', 'x', '--expected-duration-ms', '-1'],
      "option '--expected-duration-ms <ms>' argument '-1' is invalid. Expected a positive integer.",
    ],
    [
      ['tasks', 'create', '--target', 't', '--text', 'x', '--expected-duration-ms', 'soon'],
      "option '--expected-duration-ms <ms>' argument 'soon' is invalid. Expected a positive integer.",
    ],
    [['serve', '--db', 'memory:', '--plane-options', '[1]'], '--plane-options must be a JSON object'],
    [
      ['serve', '--db', 'memory:', '--plane-options', '{"poll": {"intervalMs": "soon"}}'],
      'poll.intervalMs: must be a number > 0',
    ],
    [
      ['lab', '--delivery', 'pigeon'],
      "option '--delivery <how>' argument 'pigeon' is invalid. Allowed choices are stream, push, poll.",
    ],
    [
      ['lab', '--mission', '7'],
      "option '--mission <n>' argument '7' is invalid. Allowed choices are 1, 2, 3, 4.",
    ],
    [
      ['lab', '--serve', '--port', 'x'],
      "option '--port <port>' argument 'x' is invalid. Expected an integer in 0..65535.",
    ],
  ])('%j → one line naming the flag and what it accepts', async (args, line) => {
    const r = await run(args);
    expect([r.code, r.stdout, r.stderr]).toEqual([2, '', `taskplane: ${line}\n`]);
  });

  it('checks LOG_LEVEL from the environment the same way, naming the variable', async () => {
    const r = await run(['serve', '--port', '0', '--db', 'memory:'], { LOG_LEVEL: 'loud' });
    expect([r.code, r.stdout, r.stderr]).toEqual([
      2,
      '',
      `taskplane: option '--log-level <level>' value 'loud' from env 'LOG_LEVEL' is invalid. Allowed choices are ${LEVELS}.\n`,
    ]);
  });

  it('tasks create --input that is not JSON names the position and points at --text, before any request', async () => {
    const r = await run(['tasks', 'create', '--target', 't', '--input', '{"steps":3,}'], {
      TASKPLANE_URL: 'http://127.0.0.1:9',
      TASKPLANE_API_KEY: 'k',
    });
    expect([r.code, r.stdout]).toEqual([2, '']);
    expect(r.stderr).toMatch(
      /^taskplane: --input is not JSON: .*position 11.*\(--text sends a plain string\)\n$/,
    );
  });

  it('points at --help for a flag it does not know', async () => {
    const r = await run(['serve', '--bogus']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("taskplane: unknown option '--bogus'\n(add --help for usage)\n");
  });

  it('the limit flags reach the plane: past --tenant-streams a stream is refused naming the limit', async () => {
    const key = 'flags-key-0123456789';
    const serve = await spawnTaskplane(
      ['serve', '--port', '0', '--db', 'memory:', '--tenant-streams', '1', '--max-body-bytes', '64'],
      {
        env: { TASKPLANE_API_KEYS: `acme:${key}`, LOG_LEVEL: 'silent' },
        ready: /taskplane serve ready (http:\S+)/,
      },
    );
    try {
      const url = serve.readyMatch![1]!;
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const first = await fetch(`${url}/v1/events?from=now`, { headers });
      expect(first.status).toBe(200);
      const second = await fetch(`${url}/v1/events?from=now`, { headers });
      expect(second.status).toBe(429);
      expect(((await second.json()) as { error: { message: string } }).error.message).toMatch(
        /maxStreamsPerTenant/,
      );
      await first.body!.cancel();
      const big = await fetch(`${url}/v1/tasks`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ target: 'none', input: 'x'.repeat(100) }),
      });
      expect(big.status).toBe(413);
    } finally {
      await serve.stop();
    }
  });
});
