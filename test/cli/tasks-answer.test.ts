import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { SystemClock } from '../../src/core/clock.ts';
import { answerValue } from '../../src/cli/tasks-command.ts';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';
import { FakeRemote } from '../plane/fake-remote.ts';
import { spawnTaskplane } from '../support/process.ts';

/**
 * `taskplane tasks answer`: the answer as <value> (JSON, else text), --input <json> or --text <text>;
 * a malformed --input is refused before anything is sent, naming the flag and where the JSON breaks.
 */
const KEY = 'answer-cli-key-0123';
let server: RunningServer;
let remote: FakeRemote;

beforeAll(async () => {
  remote = new FakeRemote(new SystemClock());
  server = await startServer({
    port: 0,
    db: 'memory:',
    connectors: { fake: remote.connector('fake') },
    apiKeys: `default:${KEY}`,
    dashboard: false,
    lab: false,
    defaultMetrics: false,
    logger: pino({ level: 'silent' }),
  });
});
afterAll(async () => {
  await server?.close();
});

async function cli(...args: string[]) {
  const proc = await spawnTaskplane(['tasks', ...args, '--key', KEY, '--url', server.url]);
  const exit = await proc.exited;
  return { code: exit.code, out: proc.stdout, err: proc.stderr };
}

/** A task waiting for input on the fake remote. */
async function asking(): Promise<string> {
  const { envelope } = await server.plane.create(
    { tenant: 'default', target: 'fake', input: 'ask' },
    { wait: 'started' },
  );
  remote.set(envelope.remoteId!, 'waiting_for_input', {
    inputRequest: { requestId: 'q1', prompt: 'Which edition?' },
  });
  await server.plane.observe(envelope.id, remote.snapshot(remote.jobs.get(envelope.remoteId!)!), 'poll');
  return envelope.id;
}

const answered = async (id: string) => (await server.plane.get('default', id)).nativeState;

describe('answerValue', () => {
  it('takes exactly one of <value>, --input and --text', () => {
    expect(answerValue({ value: '{"a":1}' })).toEqual({ a: 1 });
    expect(answerValue({ value: 'second' })).toBe('second');
    expect(answerValue({ input: '[1,2]' })).toEqual([1, 2]);
    expect(answerValue({ text: '{"a":1}' })).toBe('{"a":1}');
    expect(() => answerValue({})).toThrow(/<value>, --input <json> or --text <text>, one of them/);
    expect(() => answerValue({ value: 'x', text: 'y' })).toThrow(/one of them/);
    expect(() => answerValue({ input: '{"a":' })).toThrow(
      /^--input is not JSON: .+ \(--text sends a plain string\)$/,
    );
  });
});

describe('taskplane tasks answer', () => {
  it('sends --text as a string even when it looks like JSON, and --input as JSON', async () => {
    const first = await asking();
    const text = await cli('answer', first, '--text', '{"edition": 2}');
    expect(text.err).toBe('');
    expect(text.code).toBe(0);
    expect(await answered(first)).toBe('ANSWERED:"{\\"edition\\": 2}"');

    const second = await asking();
    const json = await cli('answer', second, '--input', '{"edition": 2}');
    expect(json.code).toBe(0);
    expect(await answered(second)).toBe('ANSWERED:{"edition":2}');
  }, 30_000);

  it('refuses malformed --input, naming the flag and where it breaks, and sends nothing', async () => {
    const id = await asking();
    const calls = remote.calls.length;
    const bad = await cli('answer', id, '--input', '{"edition": }');
    expect(bad.code).toBe(2);
    expect(bad.out).toBe('');
    // The parser's own words: the token it stumbled on and the text around it.
    expect(bad.err).toMatch(/--input is not JSON: Unexpected token '}'.*\(--text sends a plain string\)/);
    const both = await cli('answer', id, 'second', '--text', 'third');
    expect(both.code).toBe(2);
    expect(both.err).toContain('give the answer as <value>, --input <json> or --text <text>, one of them');
    expect(remote.calls.slice(calls).filter((c) => c.method === 'answer')).toEqual([]);
    expect((await server.plane.get('default', id)).pendingInput?.answeredAt ?? null).toBeNull();
  }, 30_000);
});
