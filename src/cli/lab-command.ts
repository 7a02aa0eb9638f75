import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { Option, type Command } from 'commander';
import { isTaskplaneError, TaskplaneError } from '../core/errors.ts';
import { intOption, numberOption } from './cli-options.ts';
import { MISSIONS, missionById, missionSettings } from '../lab/missions.ts';
import { labPageHandler, readLabAssets } from '../lab/page-assets.ts';
import {
  DEFAULT_SETTINGS,
  parseFaults,
  validateSettings,
  withSettings,
  type LabSettings,
  type SettingsPatch,
} from '../lab/settings.ts';
import {
  formatTable,
  planExample,
  planMissionsSolved,
  runPlan,
  starText,
  toJsonRun,
  describeSetup,
  type PlannedRun,
  type SuiteProgress,
  type SuiteRun,
} from '../lab/suite.ts';

/**
 * `taskplane lab`: the failure lab (docs/lab.md) on the terminal. With no options it prints the worked
 * example (five rows, each against its band in docs/lab.md) and the four missions solved by the default engine
 * configuration, with stars. Rows marked `engine` ran the real plane/ engine on virtual time.
 */
interface LabFlags {
  example?: boolean;
  mission?: string;
  delivery?: LabSettings['delivery'];
  onDrop?: LabSettings['onDrop'];
  pushRetries?: number;
  reconcileMin?: number;
  pollS?: number;
  idempotent?: boolean;
  faults?: string;
  tasks?: number;
  seed?: number;
  webhookFetch?: LabSettings['webhookFetch'];
  client?: LabSettings['client'];
  json?: boolean;
  serve?: boolean;
  port: number;
}

/** The values commander accepts for the enum flags; the ranges of numbers are the settings' to check. */
const DELIVERIES: ReadonlyArray<LabSettings['delivery']> = ['stream', 'push', 'poll'];
const ON_DROP: ReadonlyArray<LabSettings['onDrop']> = ['resend', 'reattach'];
const WEBHOOK_FETCH: ReadonlyArray<LabSettings['webhookFetch']> = ['always', 'when-incomplete'];
const CLIENTS: ReadonlyArray<LabSettings['client']> = ['auto', 'engine', 'naive'];

/** Flags that make a one-off run; --tasks, --seed and --webhook-fetch apply to every run instead. */
const SETTING_FLAGS = [
  'delivery',
  'onDrop',
  'pushRetries',
  'reconcileMin',
  'pollS',
  'idempotent',
  'faults',
  'client',
] as const;

function bad(flag: string, message: string): TaskplaneError {
  return new TaskplaneError('config', `--${flag}: ${message}`, { field: flag });
}

/** The flags as a settings patch; every bad value names its flag. */
function patchFromFlags(f: LabFlags): SettingsPatch {
  const patch: SettingsPatch = {};
  if (f.delivery !== undefined) patch.delivery = f.delivery;
  if (f.onDrop !== undefined) patch.onDrop = f.onDrop;
  if (f.pushRetries !== undefined) patch.pushRetries = f.pushRetries;
  if (f.reconcileMin !== undefined) patch.reconcileMin = f.reconcileMin;
  if (f.pollS !== undefined) patch.pollS = f.pollS;
  if (f.idempotent !== undefined) patch.idempotent = f.idempotent;
  if (f.faults !== undefined) patch.faults = settingsCall(() => parseFaults(f.faults!));
  if (f.client !== undefined) patch.client = f.client;
  return patch;
}

/** Runs `fn`, turning a settings error (fields named as flags) into the CLI's one-line error. */
function settingsCall<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (isTaskplaneError(err) && err.code === 'config' && err.field !== undefined) {
      const prefix = `${err.field}: `;
      if (err.message.startsWith(prefix)) throw bad(err.field, err.message.slice(prefix.length));
    }
    throw err;
  }
}

function check(settings: LabSettings): LabSettings {
  return settingsCall(() => validateSettings(settings));
}

/** A progress bar on stderr, only on a terminal and only once a run has taken over a second. */
function progressBar(): { update: SuiteProgress; end: () => void } {
  const started = Date.now();
  const tty = process.stderr.isTTY === true;
  let drawn = false;
  return {
    update: (done, total, fraction, name) => {
      if (!tty || Date.now() - started < 1000) return;
      const f = Math.min(1, (done + fraction) / Math.max(1, total));
      const width = 30;
      const fill = Math.round(f * width);
      process.stderr.write(
        `\r[${'#'.repeat(fill)}${'-'.repeat(width - fill)}] ${String(Math.round(f * 100)).padStart(3)}% ${name.padEnd(24)}`,
      );
      drawn = true;
    },
    end: () => {
      if (drawn) process.stderr.write('\r' + ' '.repeat(70) + '\r');
    },
  };
}

async function serve(port: number): Promise<void> {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const assets = await readLabAssets(root);
  const handle = labPageHandler(assets, '/lab');
  const server = createServer((req, res) => {
    const url = `http://localhost${req.url === '/' ? '/lab/' : (req.url ?? '/')}`;
    const response = handle(new Request(url, { method: req.method ?? 'GET' }));
    if (!response) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const headers: Record<string, string> = {};
    response.headers.forEach((value, key) => (headers[key] = value));
    res.writeHead(response.status, headers);
    void response.text().then((body) => res.end(req.method === 'HEAD' ? undefined : body));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const actual = typeof address === 'object' && address ? address.port : port;
  console.log(`taskplane lab: page at http://127.0.0.1:${actual}/lab/ (Ctrl-C to stop)`);
}

async function runLabCommand(f: LabFlags): Promise<void> {
  // `taskplane lab | head` closes the pipe early: stop quietly instead of throwing EPIPE.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  if (f.serve) {
    await serve(f.port);
    return;
  }
  const patch = patchFromFlags(f);
  const base = withSettings(DEFAULT_SETTINGS, {});
  if (f.tasks !== undefined) base.tasks = f.tasks;
  if (f.seed !== undefined) base.seed = f.seed;
  if (f.webhookFetch !== undefined) base.webhookFetch = f.webhookFetch;
  check(base);
  const oneOff = SETTING_FLAGS.some((k) => f[k] !== undefined);

  let plan: PlannedRun[] = [];
  let title = '';
  if (f.mission !== undefined) {
    const mission = missionById(Number(f.mission));
    if (!mission) throw bad('mission', `must be one of ${MISSIONS.map((m) => m.id).join(', ')}`);
    const start = withSettings(missionSettings(mission, 'broken', base), patch);
    // An attempt takes the defaults --help states (an idempotent handler unless --no-idempotent) over
    // the broken start's naive handler, which is only the start's.
    const attempt = withSettings(missionSettings(mission, 'broken', base), { idempotent: true, ...patch });
    plan = oneOff
      ? [{ name: `mission:${mission.id}`, settings: check(attempt), mission }]
      : [
          { name: `mission:${mission.id}:start`, settings: check(start), mission },
          ...planMissionsSolved(base, [mission.id]),
        ];
    title = `Mission ${mission.id}: ${mission.title}. ${mission.brief}`;
  } else if (oneOff && !f.example) {
    plan = [{ name: 'custom', settings: check(withSettings(base, patch)) }];
    title = 'One run';
  } else {
    plan = planExample(base);
    if (!f.example) plan.push(...planMissionsSolved(base));
    title = `Worked example (the lab's reference world: ${base.tasks} tasks over 2 h, seed ${base.seed})`;
  }
  for (const p of plan) check(p.settings);

  const bar = progressBar();
  let runs: SuiteRun[];
  try {
    runs = await runPlan(plan, bar.update);
  } finally {
    bar.end();
  }
  if (f.json) {
    console.log(JSON.stringify({ runs: runs.map(toJsonRun) }));
    return;
  }
  console.log(title + '\n');
  const examples = runs.filter((r) => r.bandMisses !== undefined);
  const rest = runs.filter((r) => r.bandMisses === undefined);
  if (examples.length) {
    console.log(formatTable(examples));
    console.log(
      "\nreq/task charges reconciliation one GetTask per in-flight task checked (the seed's way); list = as ListTasks pages.",
    );
    for (const r of examples) console.log(`  ${r.result.name}: ${describeSetup(r.result.settings)}`);
  }
  if (rest.length) {
    if (examples.length) console.log('\nMissions, solved by the default engine configuration:\n');
    console.log(formatTable(rest));
    for (const r of rest) {
      const m = r.mission;
      console.log(`  ${r.result.name} ${starText(r.stars)}: ${describeSetup(r.result.settings)}`);
      if (m) console.log(`    ${m.thresholds.join(' · ')}`);
    }
  }
}

export function registerLabCommand(program: Command): void {
  program
    .command('lab')
    .description(
      'Run the failure lab: the real engine against a simulated A2A agent under flaps, an outage, lost acks and a restart',
    )
    .option('--example', 'only the worked example (five rows against their bands)')
    .addOption(
      new Option(
        '--mission <n>',
        'a mission: its broken start and the default engine solution; with setting flags, your attempt',
      ).choices(MISSIONS.map((m) => String(m.id))),
    )
    .addOption(new Option('--delivery <how>', 'how the client receives updates').choices(DELIVERIES))
    .addOption(new Option('--on-drop <what>', 'what the client does when a stream drops').choices(ON_DROP))
    .option('--push-retries <k>', "the agent's push retries (base 5 s, doubling)", numberOption)
    .option('--reconcile-min <m>', 'reconciliation interval in minutes, 0 = none', numberOption)
    .option('--poll-s <p>', 'polling interval in seconds (delivery poll)', numberOption)
    .option('--idempotent', 'the completion handler absorbs repeats (default)')
    .option('--no-idempotent', 'the completion handler acts on every delivery')
    .option('--faults <list>', 'flaps,outage,lostacks,restart (or all, none)')
    .addOption(
      new Option(
        '--webhook-fetch <mode>',
        'engine: when to GetTask after a push (default when-incomplete)',
      ).choices(WEBHOOK_FETCH),
    )
    .addOption(new Option('--client <which>', 'which client runs (default auto)').choices(CLIENTS))
    .option('--tasks <n>', 'number of tasks (default 240)', numberOption)
    .option('--seed <s>', 'random seed (default 4)', numberOption)
    .option('--json', 'print {"runs":[…]} as JSON')
    .option('--serve', 'serve the lab page')
    .option('--port <port>', 'port for --serve', intOption(0, 65535), 8090)
    .action(async (flags: LabFlags, cmd: Command) => {
      // Commander gives `idempotent: true` by default because of --no-idempotent; only count it when typed.
      const typed = cmd.getOptionValueSource('idempotent') === 'cli';
      await runLabCommand({ ...flags, ...(typed ? {} : { idempotent: undefined }) });
    });
}
