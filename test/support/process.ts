import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

/** Repository root (where bin/taskplane.js lives). */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The CLI's entry from source (`node CLI_FROM_SOURCE serve …`); bin/taskplane.js runs the build instead. */
export const CLI_FROM_SOURCE = fileURLToPath(new URL('./cli-from-source.mjs', import.meta.url));

export interface SpawnOptions {
  cwd?: string;
  /** Added to process.env. */
  env?: Record<string, string | undefined>;
  /** Wait for a stdout line matching this before resolving (e.g. /ready (http:\S+)/). */
  ready?: RegExp;
  /** Bound for the ready line (a failure bound, not a timing assumption). @default 30000 */
  readyTimeoutMs?: number;
  /** Echo output to the test's console (debugging). @default false */
  echo?: boolean;
}

export type Stream = 'stdout' | 'stderr';

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * A child process under test: its whole output is kept, lines can be awaited as events, and it can be
 * killed hard (SIGKILL, the crash case) or stopped politely (SIGTERM, then SIGKILL after a bound).
 */
export class TestProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<ExitInfo>;
  /** The ready line's match, once `ready` was given and seen. */
  readyMatch: RegExpMatchArray | undefined;
  private out = '';
  private err = '';
  private readonly lineWaiters = new Set<{
    stream: Stream;
    re: RegExp;
    resolve: (m: RegExpMatchArray) => void;
  }>();
  private exitInfo: ExitInfo | undefined;

  constructor(command: string, args: string[], options: SpawnOptions = {}) {
    this.child = spawn(command, args, {
      cwd: options.cwd ?? REPO_ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const partial = { stdout: '', stderr: '' };
    this.child.stdout!.setEncoding('utf8');
    this.child.stderr!.setEncoding('utf8');
    const feed = (stream: Stream, chunk: string) => {
      partial[stream] += chunk;
      const lines = partial[stream].split('\n');
      partial[stream] = lines.pop() ?? '';
      for (const line of lines) this.onLine(stream, line);
    };
    this.child.stdout!.on('data', (chunk: string) => {
      this.out += chunk;
      if (options.echo) process.stdout.write(chunk);
      feed('stdout', chunk);
    });
    this.child.stderr!.on('data', (chunk: string) => {
      this.err += chunk;
      if (options.echo) process.stderr.write(chunk);
      feed('stderr', chunk);
    });
    this.exited = once(this.child, 'exit').then(([code, signal]) => {
      this.exitInfo = { code: code as number | null, signal: signal as NodeJS.Signals | null };
      return this.exitInfo;
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get stdout(): string {
    return this.out;
  }

  get stderr(): string {
    return this.err;
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined;
  }

  /**
   * Resolves with the first line (already seen or future) of `stream` matching `re`; rejects on exit or
   * after the bound. stdout and stderr are separate pipes: a line on one says nothing about the other.
   */
  waitForLine(re: RegExp, timeoutMs = 30_000, stream: Stream = 'stdout'): Promise<RegExpMatchArray> {
    for (const line of (stream === 'stdout' ? this.out : this.err).split('\n')) {
      const m = line.match(re);
      if (m) return Promise.resolve(m);
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        stream,
        re,
        resolve: (m: RegExpMatchArray) => {
          clearTimeout(timer);
          resolve(m);
        },
      };
      const timer = setTimeout(() => {
        this.lineWaiters.delete(waiter);
        reject(
          new Error(
            `no line matching ${re} within ${timeoutMs} ms\nstdout:\n${this.out}\nstderr:\n${this.err.slice(-4000)}`,
          ),
        );
      }, timeoutMs);
      this.lineWaiters.add(waiter);
      void this.exited.then((info) => {
        if (!this.lineWaiters.has(waiter)) return;
        this.lineWaiters.delete(waiter);
        clearTimeout(timer);
        reject(
          new Error(
            `process exited (${info.code ?? info.signal}) before a line matching ${re}\nstderr:\n${this.err.slice(-4000)}`,
          ),
        );
      });
    });
  }

  /** Sends a signal; resolves when the process has exited. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<ExitInfo> {
    if (!this.hasExited) this.child.kill(signal);
    return this.exited;
  }

  /** SIGTERM, then SIGKILL if it is still running after `graceMs`. */
  async stop(graceMs = 10_000): Promise<ExitInfo> {
    if (this.hasExited) return this.exited;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  private onLine(stream: Stream, line: string): void {
    for (const w of [...this.lineWaiters]) {
      if (w.stream !== stream) continue;
      const m = line.match(w.re);
      if (m) {
        this.lineWaiters.delete(w);
        w.resolve(m);
      }
    }
  }
}

/** Spawns any command; waits for `options.ready` when given. */
export async function spawnProcess(
  command: string,
  args: string[],
  options: SpawnOptions = {},
): Promise<TestProcess> {
  const proc = new TestProcess(command, args, options);
  if (options.ready) {
    try {
      proc.readyMatch = await proc.waitForLine(options.ready, options.readyTimeoutMs ?? 30_000);
    } catch (err) {
      await proc.kill('SIGKILL');
      throw err;
    }
  }
  return proc;
}

/** Spawns `taskplane <args>`, from source, as a real process. */
export function spawnTaskplane(args: string[], options: SpawnOptions = {}): Promise<TestProcess> {
  return spawnProcess(process.execPath, [CLI_FROM_SOURCE, ...args], options);
}

/** Starts `taskplane host` and returns the process with its base URL (from the ready line). */
export async function spawnHost(
  args: string[],
  options: SpawnOptions = {},
): Promise<{ proc: TestProcess; url: string; port: number }> {
  const proc = await spawnTaskplane(['host', ...args], {
    ...options,
    ready: /taskplane host ready (http:\/\/\S+)/,
  });
  const url = proc.readyMatch![1]!;
  return { proc, url, port: Number(new URL(url).port) };
}

/**
 * A TCP port free at the time of the call (listen on 0, read it, close). Prefer `--port 0` and reading
 * the ready line where the program supports it: another process may take the port in between.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
