// Starts, restarts (SIGKILL, then start again) and stops an agent process in the background, for the
// conformance hooks in tests: `--restart-cmd "node agent-ctl.mjs restart DIR"`. The agent outlives
// this script (detached, its output appended to DIR/agent.log); DIR/agent.json keeps its command,
// URL and pid. Each command returns once the agent answers (or it has exited, for stop).
import { spawn } from 'node:child_process';
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [action, dir, url, ...rest] = process.argv.slice(2);
const statePath = join(dir, 'agent.json');

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function until(pred, what) {
  const end = Date.now() + 30_000;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`agent-ctl: ${what} within 30 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function start(state) {
  const log = openSync(join(dir, 'agent.log'), 'a');
  const child = spawn(state.command[0], state.command.slice(1), {
    detached: true,
    stdio: ['ignore', log, log],
  });
  child.unref();
  writeFileSync(statePath, JSON.stringify({ ...state, pid: child.pid }));
  // An A2A agent is up when its card answers; an MCP endpoint (a URL with a path, e.g. …/mcp) when it
  // answers at all (a GET without a session is refused, but by a live server).
  const mcp = new URL(state.url).pathname.replace(/\/+$/, '') !== '';
  await until(
    () =>
      fetch(mcp ? state.url : `${state.url}/.well-known/agent-card.json`).then(
        (r) => (mcp ? r.status < 500 : r.ok),
        () => false,
      ),
    mcp ? 'the MCP endpoint did not answer' : 'the agent card did not answer',
  );
}

async function kill(state) {
  if (state.pid && alive(state.pid)) {
    process.kill(state.pid, 'SIGKILL');
    await until(() => !alive(state.pid), 'the agent did not die');
  }
}

if (action === 'start') await start({ url, command: rest[0] === '--' ? rest.slice(1) : rest });
else {
  const state = JSON.parse(readFileSync(statePath, 'utf8'));
  await kill(state);
  if (action === 'restart') await start(state);
}
