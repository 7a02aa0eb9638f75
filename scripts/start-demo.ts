/**
 * `npm start`: the demo a newcomer runs from a clone. It starts the local emulators of the OpenAI
 * Responses API and of Claude Managed Agents (test/emulators/: stand-ins written from the providers'
 * documentation, never shipped in dist/) on free loopback ports, then runs the real CLI, `taskplane
 * serve --demo`, with two more targets, `openai` and `claude`, pointed at them and sample tasks on
 * both. Flags given to `npm start -- …` go to `serve`; SIGINT, SIGTERM and SIGHUP are passed on to it
 * once; the emulators stop when `serve` has exited, and this process exits with its code.
 *
 * Run with `node --import tsx scripts/start-demo.ts [serve flags]` (tsx is a development dependency,
 * which is why this lives here and not in the CLI).
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SystemClock } from '../src/core/clock.ts';
import { CryptoRandom } from '../src/core/random.ts';
import type { DemoTask } from '../src/server/demo.ts';
import { emulatorTarget } from '../test/emulators/claude/emulator-target.ts';
import { startClaudeEmulator, type ClaudeEmulator } from '../test/emulators/claude/server.ts';
import { OpenAIEmulator } from '../test/emulators/openai/emulator.ts';

/** The compiled CLI, as `npx taskplane` would run it. */
export const BUILT_CLI = fileURLToPath(new URL('../bin/taskplane.js', import.meta.url));

/** Environment variables the targets file names for the emulators' keys (never written in it). */
const OPENAI_KEY_ENV = 'TASKPLANE_DEMO_OPENAI_KEY';
const CLAUDE_KEY_ENV = 'TASKPLANE_DEMO_CLAUDE_KEY';

const faults = (f: Record<string, unknown>) => ({ emulator_faults: JSON.stringify(f) });

/**
 * The sample tasks on the emulator targets. The Claude turns are picked by the message's first word
 * (test/emulators/claude/README.md); the OpenAI faults ride in the response's metadata.
 */
export const EMULATOR_DEMO_TASKS: DemoTask[] = [
  { target: 'openai', label: 'openai: short answer', input: 'Say hello to the taskplane demo' },
  {
    target: 'openai',
    label: 'openai: long answer',
    input:
      'Explain, one word at a time, why a control plane keeps a durable envelope for every job it hands to a remote agent, and why it never records an outcome the remote did not give',
  },
  {
    target: 'openai',
    label: 'openai: stream drops and resumes',
    input: {
      input: 'Keep talking while the stream is cut, then pick up from the last sequence number',
      metadata: faults({ dropStreamAfterEvents: 8 }),
    },
  },
  {
    target: 'openai',
    label: 'openai: fails on purpose',
    input: {
      input: 'This one fails',
      metadata: faults({ failWith: { code: 'server_error', message: 'emulated failure' } }),
    },
  },
  { target: 'claude', label: 'claude: answers', input: 'hello from the taskplane demo' },
  {
    target: 'claude',
    label: 'claude: asks to run a tool',
    input: 'tool_confirmation list the files in the sandbox',
  },
  { target: 'claude', label: 'claude: needs a lookup', input: 'custom_tool what is the weather?' },
  {
    target: 'claude',
    label: 'claude: pauses at its budget',
    input: 'budget a long piece of work',
    budget: { limit: 250, unit: 'cents' },
  },
  { target: 'claude', label: 'claude: fails on purpose', input: 'retries_exhausted' },
];

export interface DemoOptions {
  /** Flags for `taskplane serve` (after `--demo` and the demo's own). @default [] */
  args?: string[];
  /** The CLI entry to run with node. @default bin/taskplane.js */
  cli?: string;
  /** Where `serve` runs; the demo files go in its `data/`. @default process.cwd() */
  cwd?: string;
  /** @default process.env */
  env?: NodeJS.ProcessEnv;
  /** @default 'inherit' */
  stdio?: StdioOptions;
  /** Between a Claude turn's steps, so sessions are seen running. @default 1000 */
  claudeStepMs?: number;
  /** Between OpenAI output deltas. @default 400 */
  openaiDeltaMs?: number;
}

export interface DemoRun {
  /** `taskplane serve`. */
  child: ChildProcess;
  emulators: { openai: string; claude: string };
  /** Resolves once `serve` has exited and the emulators are closed: serve's exit code (128 + n for signal n). */
  exited: Promise<number>;
}

/** The `--targets-file` the user gave (flag or environment), whose targets the demo keeps. */
function userTargetsFile(args: string[], env: NodeJS.ProcessEnv): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--targets-file') return args[i + 1];
    if (a.startsWith('--targets-file=')) return a.slice('--targets-file='.length);
  }
  return env.TASKPLANE_TARGETS_FILE || undefined;
}

function withoutTargetsFile(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--targets-file') i++;
    else if (!args[i]!.startsWith('--targets-file=')) out.push(args[i]!);
  }
  return out;
}

function withIpc(stdio: StdioOptions): StdioOptions {
  const fds = typeof stdio === 'string' ? [stdio, stdio, stdio] : [...stdio].slice(0, 3);
  return [...fds, 'ipc'];
}

const SIGNAL_NUMBERS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };

/** Starts the emulators and `taskplane serve --demo` with the emulator targets and their sample tasks. */
export async function startDemo(o: DemoOptions = {}): Promise<DemoRun> {
  const cwd = o.cwd ?? process.cwd();
  const env = o.env ?? process.env;
  const args = o.args ?? [];
  const dataDir = join(cwd, 'data');
  mkdirSync(dataDir, { recursive: true });

  // Fresh keys and ids on every start: a new run must never answer for ids an earlier run handed out.
  const openaiKey = `sk-emulator-${randomBytes(12).toString('hex')}`;
  const claudeKey = `sk-ant-emulator-${randomBytes(12).toString('hex')}`;
  const openai = new OpenAIEmulator({
    seed: randomInt(2 ** 31),
    apiKey: openaiKey,
    queuedMs: 1_500,
    deltaIntervalMs: o.openaiDeltaMs ?? 400,
  });
  let claude: ClaudeEmulator | null = null;
  const closeEmulators = async () => {
    await Promise.allSettled([openai.close(), claude?.close()]);
  };
  try {
    const openaiUrl = await openai.start(0);
    claude = await startClaudeEmulator({
      clock: new SystemClock(),
      random: new CryptoRandom(),
      apiKey: claudeKey,
      stepDelayMs: o.claudeStepMs ?? 1_000,
    });
    const claudeTarget = await emulatorTarget(claude, { apiKey: claudeKey, apiKeyEnv: CLAUDE_KEY_ENV });

    const own = userTargetsFile(args, env);
    const theirs = own
      ? (JSON.parse(readFileSync(resolve(cwd, own), 'utf8')) as Record<string, unknown>)
      : {};
    const targetsFile = join(dataDir, 'demo-targets.json');
    writeFileSync(
      targetsFile,
      JSON.stringify(
        {
          ...theirs,
          openai: {
            kind: 'openai',
            baseUrl: openaiUrl,
            apiKey: { env: OPENAI_KEY_ENV },
            model: 'gpt-emulated',
          },
          claude: claudeTarget,
        },
        null,
        2,
      ) + '\n',
    );
    const tasksFile = join(dataDir, 'demo-emulator-tasks.json');
    writeFileSync(tasksFile, JSON.stringify(EMULATOR_DEMO_TASKS, null, 2) + '\n');

    console.log('taskplane demo: local emulators (stand-ins for testing, not the real services):');
    console.log(`  target "openai" → OpenAI Responses emulator at ${openaiUrl}`);
    console.log(`  target "claude" → Claude Managed Agents emulator at ${claude.url}`);

    const childEnv: NodeJS.ProcessEnv = { ...env, [OPENAI_KEY_ENV]: openaiKey, [CLAUDE_KEY_ENV]: claudeKey };
    delete childEnv.TASKPLANE_TARGETS_FILE;
    const child = spawn(
      process.execPath,
      [
        o.cli ?? BUILT_CLI,
        'serve',
        '--demo',
        '--targets-file',
        targetsFile,
        '--demo-tasks-file',
        tasksFile,
        ...withoutTargetsFile(args),
      ],
      // Its own process group: a terminal's Ctrl-C reaches this process only, which passes it on once
      // (twice would skip serve's orderly shutdown). The IPC channel is how serve learns that this
      // process is gone, even by SIGKILL, which passes nothing on: serve stops when it closes, rather
      // than run on against emulators that died with this process.
      { cwd, env: childEnv, stdio: withIpc(o.stdio ?? 'inherit'), detached: true },
    );
    const exited = once(child, 'exit').then(async ([code, signal]) => {
      await closeEmulators();
      return typeof code === 'number' ? code : 128 + (SIGNAL_NUMBERS[signal as string] ?? 1);
    });
    return { child, emulators: { openai: openaiUrl, claude: claude.url }, exited };
  } catch (err) {
    await closeEmulators();
    throw err;
  }
}

async function main(): Promise<void> {
  const run = await startDemo({ args: process.argv.slice(2) });
  let forwardedAt: number | null = null;
  const forward = (signal: NodeJS.Signals) => {
    // npm and the terminal may both deliver one Ctrl-C: serve gets it once. Asked again later, the
    // person means it: serve is stopped hard.
    if (forwardedAt === null) {
      forwardedAt = Date.now();
      run.child.kill(signal);
    } else if (Date.now() - forwardedAt > 2_000) run.child.kill('SIGKILL');
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, forward);
  process.exit(await run.exited);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error('npm start:', err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
