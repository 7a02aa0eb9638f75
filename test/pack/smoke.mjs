// The installed package as a user meets it, run by the Node under test from a folder where the packed
// tarball was installed (test/pack/pack-smoke.sh): the `taskplane` command (help, version, `serve --demo`
// with a task created through the API and carried to success) and the three package exports, imported
// by name. Every wait has a bound; a bound reached is a failure, never a measurement.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { defineAgent, startHost } from 'taskplane/host';
import {
  A2AConnector,
  ClaudeConnector,
  CryptoRandom,
  McpConnector,
  OpenAIConnector,
  Plane,
  SystemClock,
} from 'taskplane/plane';
import { openStore } from 'taskplane/store';

const dir = process.cwd();
const bin = join(dir, 'node_modules/.bin/taskplane');
const KEY = 'pack-smoke-key-0123456789';

function check(ok, what) {
  if (!ok) throw new Error(`pack smoke: ${what}`);
  console.log(`  ok  ${what}`);
}

/** Calls `probe` until it returns a value, at most `bound` ms; fails naming `what`. */
async function until(what, bound, probe) {
  const deadline = Date.now() + bound;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`pack smoke: ${what}: not within ${bound} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function cli(...args) {
  return spawnSync(bin, args, { encoding: 'utf8', timeout: 30_000 });
}

async function commandLine() {
  const help = cli('--help');
  check(help.status === 0 && /serve/.test(help.stdout) && /host/.test(help.stdout), 'taskplane --help');
  const { version } = JSON.parse(readFileSync(join(dir, 'node_modules/taskplane/package.json'), 'utf8'));
  const printed = cli('--version');
  check(printed.status === 0 && printed.stdout.trim() === version, `taskplane --version prints ${version}`);

  const serve = spawn(bin, ['serve', '--demo', '--port', '0', '--db', 'sqlite:./data/plane.db'], {
    cwd: dir,
    env: { ...process.env, TASKPLANE_API_KEYS: `default:${KEY}`, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  serve.stdout.setEncoding('utf8').on('data', (d) => (out += d));
  serve.stderr.setEncoding('utf8').on('data', (d) => (err += d));
  const exited = new Promise((resolve) => serve.once('exit', (code, signal) => resolve({ code, signal })));
  try {
    const url = await until('serve --demo ready line', 60_000, () => {
      if (serve.exitCode !== null) throw new Error(`serve exited early (${serve.exitCode}):\n${err}`);
      return out.match(/taskplane serve ready (http:\S+)/)?.[1];
    });
    await until('demo host line', 30_000, () => (/demo host: http/.test(out) ? true : undefined));
    check(true, `serve --demo ready at ${url}`);
    const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
    const created = await fetch(`${url}/v1/tasks`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ target: 'demo', input: { durationMs: 300, steps: 2 } }),
    });
    const task = await created.json();
    // Fast create: 202 once the envelope is durable, the task's URL in Location; the start runs behind.
    check(
      created.status === 202 &&
        typeof task.id === 'string' &&
        created.headers.get('location') === `/v1/tasks/${task.id}`,
      `POST /v1/tasks → 202 (${task.id})`,
    );
    const state = await until('the task to finish', 60_000, async () => {
      const got = await (await fetch(`${url}/v1/tasks/${task.id}`, { headers: auth })).json();
      return ['succeeded', 'failed', 'cancelled', 'expired', 'lost'].includes(got.state)
        ? got.state
        : undefined;
    });
    check(state === 'succeeded', `the task ${state}`);
    // An acceptance schema compiles in the plane's worker thread (dist/server/schema-compile-worker.js).
    const schema = { type: 'object', properties: { note: { type: 'string', pattern: '^(a+)+$' } } };
    const withSchema = await fetch(`${url}/v1/tasks`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ target: 'demo', input: { durationMs: 10, steps: 1 }, acceptance: { schema } }),
    });
    const checked = await withSchema.json();
    check(withSchema.status === 202, `POST /v1/tasks with an acceptance schema → ${withSchema.status}`);
    const decided = await until('its acceptance to be decided', 60_000, async () => {
      const got = await (await fetch(`${url}/v1/tasks/${checked.id}`, { headers: auth })).json();
      return got.acceptance && got.acceptance.status !== 'pending' ? got.acceptance.status : undefined;
    });
    check(['accepted', 'rejected'].includes(decided), `its acceptance decided: ${decided}`);
    const page = await fetch(`${url}/`);
    check(page.status === 200, 'GET / (dashboard) → 200');
    const lab = await fetch(`${url}/lab/lab.js`);
    check(lab.status === 200 && (await lab.text()).length > 1000, 'GET /lab/lab.js → the prebuilt bundle');
  } finally {
    serve.kill('SIGTERM');
    const timer = setTimeout(() => serve.kill('SIGKILL'), 15_000);
    const { code, signal } = await exited;
    clearTimeout(timer);
    if (code !== 0) console.error(`serve stopped with ${code ?? signal}\n${err.slice(-2000)}`);
    check(code === 0, 'serve stops on SIGTERM');
  }
}

/**
 * `host --agent` with a TypeScript file and no tsx installed: Node's type stripping runs it where Node
 * has it (22.18+, 24); elsewhere the host refuses in one line that names the way out.
 */
async function typescriptAgent() {
  writeFileSync(
    join(dir, 'agent.mts'),
    [
      "import { defineAgent, type ExecutionContext } from 'taskplane/host';",
      'const prefix: string = "echo";',
      'export default defineAgent({',
      "  card: { name: 'Typed', description: 'erasable TypeScript', version: '1.0.0' },",
      '  async execute(ctx: ExecutionContext): Promise<string> { return `${prefix}: ${ctx.text}`; },',
      '});',
      '',
    ].join('\n'),
  );
  const host = spawn(bin, ['host', '--agent', './agent.mts', '--port', '0', '--db', 'memory:'], {
    cwd: dir,
    env: { ...process.env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  host.stdout.setEncoding('utf8').on('data', (d) => (out += d));
  host.stderr.setEncoding('utf8').on('data', (d) => (err += d));
  const exited = new Promise((resolve) => host.once('exit', (code) => resolve(code)));
  const outcome = await until('host --agent ./agent.mts to start or refuse', 30_000, () =>
    /taskplane host ready/.test(out) ? 'ready' : host.exitCode !== null ? 'exited' : undefined,
  );
  if (outcome === 'ready') host.kill('SIGTERM');
  const code = await exited;
  if (process.features.typescript) {
    check(outcome === 'ready', `host --agent ./agent.mts runs with Node's type stripping`);
  } else {
    check(
      outcome === 'exited' &&
        code !== 0 &&
        /agent\.mts/.test(err) &&
        /tsx/.test(err) &&
        err.trim().split('\n').length <= 2,
      'host --agent ./agent.mts without type stripping or tsx: one line naming the file and tsx',
    );
  }
}

async function packageExports() {
  const agent = defineAgent({
    card: { name: 'Echo', description: 'answers with its input', version: '1.0.0' },
    resumable: false,
    async execute(ctx) {
      return `echo: ${ctx.text}`;
    },
  });
  const host = await startHost({ port: 0, db: 'memory:', agent, logLevel: 'silent' });
  const store = await openStore('memory:');
  const connector = new A2AConnector({ target: 'echo', baseUrl: host.url, idempotentStart: true });
  const plane = new Plane({
    clock: new SystemClock(),
    random: new CryptoRandom(),
    store,
    connectors: (target) => (target === 'echo' ? connector : undefined),
  });
  try {
    await plane.start();
    const { envelope } = await plane.create({ tenant: 't', target: 'echo', input: 'hello' });
    const state = await until('the embedded task to finish', 30_000, async () => {
      const env = await plane.get('t', envelope.id);
      return ['succeeded', 'failed', 'cancelled', 'expired', 'lost'].includes(env.state)
        ? env.state
        : undefined;
    });
    check(
      state === 'succeeded',
      'taskplane/plane + taskplane/store + taskplane/host: an embedded task succeeded',
    );
  } finally {
    await plane.stop();
    await host.close();
    await store.close();
  }
}

/**
 * The other connectors, built from the package as a library user builds them. The OpenAI one reads a
 * response through the official SDK (imported on first use) from a one-route server on loopback: the
 * SDK declares a newer Node in its engines field than some we support, and this shows it runs here.
 */
async function moreConnectors() {
  const server = createServer((req, res) => {
    const ok = req.method === 'GET' && req.url === '/v1/responses/resp_smoke';
    res.writeHead(ok ? 200 : 404, { 'content-type': 'application/json', 'x-request-id': 'req_smoke' });
    res.end(
      JSON.stringify(
        ok
          ? { id: 'resp_smoke', object: 'response', status: 'completed', created_at: 1, output: [] }
          : { error: { message: 'no such route', type: 'invalid_request_error', param: null, code: null } },
      ),
    );
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const openai = new OpenAIConnector({
      target: 'gpt',
      baseUrl: `http://127.0.0.1:${server.address().port}/v1`,
      apiKey: 'sk-smoke',
      model: 'm',
      maxRetries: 0,
    });
    const snapshot = await openai.get('resp_smoke', AbortSignal.timeout(10_000));
    check(
      snapshot.state === 'succeeded' && snapshot.nativeState === 'completed',
      'taskplane/plane OpenAIConnector: a response read through the openai SDK',
    );
  } finally {
    server.close();
  }
  const claude = new ClaudeConnector({
    target: 'c',
    apiKey: 'k',
    agentId: 'agent_1',
    environmentId: 'env_1',
  });
  const mcp = new McpConnector({ target: 'm', url: 'http://127.0.0.1:9/mcp' });
  check(claude.kind === 'claude' && mcp.kind === 'mcp', 'taskplane/plane ClaudeConnector and McpConnector');
}

console.log(`pack smoke on Node ${process.version} in ${dir}`);
await commandLine();
await typescriptAgent();
await packageExports();
await moreConnectors();
console.log(`pack smoke passed on Node ${process.version}`);
