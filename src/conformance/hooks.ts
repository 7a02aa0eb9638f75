import { spawn } from 'node:child_process';

/**
 * The user's hooks: shell commands for what only the agent's operator can do. `restart` kills the agent
 * (as a worker crash would) and starts it again; `deploy` puts a new version in place while tasks are
 * active; `revoke` withdraws the permission the run's credentials carry. A hook must return once the
 * action is done (the run then waits for the agent's card to answer again).
 */
export type HookName = 'restart' | 'deploy' | 'revoke';
export const HOOK_NAMES: readonly HookName[] = ['restart', 'deploy', 'revoke'];

export interface HookResult {
  /** Exit code; null when it ran past the bound and was killed. */
  code: number | null;
  durationMs: number;
  /** The last of its output (stdout and stderr), for the report. */
  output: string;
}

const MAX_OUTPUT = 8192;

export function runHook(command: string, timeoutMs: number): Promise<HookResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    // Its own process group, so a hook that leaves children behind can be killed with them on timeout;
    // a server the hook starts in the background must detach from it (setsid/nohup) to outlive it.
    const child = spawn(command, { shell: true, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-MAX_OUTPUT);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, timeoutMs);
    // 'exit', not 'close': a background server the hook started may hold the pipes open for ever.
    child.on('exit', (code) => {
      clearTimeout(timer);
      child.stdout.destroy();
      child.stderr.destroy();
      resolve({ code: timedOut ? null : (code ?? null), durationMs: Date.now() - started, output });
    });
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: 127, durationMs: Date.now() - started, output: String(err) });
    });
  });
}
