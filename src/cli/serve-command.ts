import { mkdirSync, readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import pino from 'pino';
import { TaskplaneError } from '../core/errors.ts';
import { intOption, LOG_LEVELS, numberOption, retentionDays } from './cli-options.ts';
import { keyLines, withFlagHint } from './serve-banner.ts';
import { parseStoreUrl } from '../store/store-url.ts';
import type { RunningHost } from '../host/start-host.ts';
import { DEFAULT_TENANT_LIMITS as TENANT } from '../server/tenant-limits.ts';
import type { TargetConfig } from '../server/targets.ts';
import type { PlaneOptions } from '../plane/options.ts';

const DAY_MS = 24 * 3600 * 1000;

/** Flags first, then the JSON options over them, one level deep per section (delivery, stream, poll, …). */
function mergePlaneOptions(base: PlaneOptions, json: string | undefined): PlaneOptions {
  if (!json) return base;
  let extra: unknown;
  try {
    extra = JSON.parse(json);
  } catch (err) {
    throw new TaskplaneError('config', `--plane-options is not JSON: ${(err as Error).message}`, {
      field: 'plane-options',
    });
  }
  if (!extra || typeof extra !== 'object' || Array.isArray(extra))
    throw new TaskplaneError('config', '--plane-options must be a JSON object', { field: 'plane-options' });
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(extra)) {
    const prior = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && prior && typeof prior === 'object'
        ? { ...prior, ...v }
        : v;
  }
  return out as PlaneOptions;
}

/**
 * The JSON log level: `--log-level`, else LOG_LEVEL, else `warn` for the demo and `info` otherwise.
 * The demo is what a newcomer runs in a terminal: at info its JSON lines (every push delivery, every
 * start) buried the few lines meant for a person (URL, key, what to try).
 */
export function serveLogLevel(flag: string | undefined, env: string | undefined, demo: boolean): string {
  const level = flag ?? env ?? (demo ? 'warn' : 'info');
  if (!(LOG_LEVELS as readonly string[]).includes(level))
    throw new TaskplaneError('config', `--log-level must be one of ${LOG_LEVELS.join(', ')}`, {
      field: 'log-level',
    });
  return level;
}

/**
 * The lines meant for a person, set apart from the JSON logs on stderr: a rule above and below, and
 * bold on a terminal. The first line stays exactly `taskplane serve ready <url>` (scripts wait on it).
 */
function printForPeople(lines: string[]): void {
  const tty = process.stdout.isTTY === true;
  const rule = '─'.repeat(72);
  const [first, ...rest] = lines;
  console.log(first);
  console.log(tty ? `\x1b[2m${rule}\x1b[0m` : rule);
  for (const line of rest) console.log(tty ? `\x1b[1m${line}\x1b[0m` : line);
  console.log(tty ? `\x1b[2m${rule}\x1b[0m` : rule);
}

function readOptionFile(path: string, flag: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new TaskplaneError(
      'config',
      `--${flag}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      { field: flag },
    );
  }
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/**
 * `taskplane serve`: the control plane (API, dashboard, engine). `--demo` also runs the demo agent host
 * in this process as targets `demo` (A2A) and `demo-mcp` (MCP) and starts a few sample tasks on each. The first stdout line is
 * `taskplane serve ready <url>` so scripts and tests can wait on it.
 */
export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('Run the control plane: API under /v1, dashboard at /, /metrics')
    .option('--port <port>', 'TCP port (0 = any free port)', intOption(0, 65535), 8080)
    .option('--bind <address>', 'interface to bind', '127.0.0.1')
    .option('--db <url>', 'sqlite:PATH | postgres://… | memory:', 'sqlite:./data/taskplane.db')
    .option(
      '--public-url <url>',
      'base URL agents can reach this plane at (enables push webhooks); "self" = the listening URL',
    )
    .option(
      '--target <name=url>',
      'a target to track tasks on; the URL scheme picks its kind (http(s):// = A2A agent; repeatable; also TASKPLANE_TARGETS=name=url,…)',
      collect,
      [],
    )
    .option(
      '--targets-file <path>',
      'targets as JSON {"name": {"kind": …, …settings}}; secrets as {"env": "VAR"} (docs/plane.md; also TASKPLANE_TARGETS_FILE)',
    )
    .option('--keys-file <path>', 'API keys, one tenant:key per line (else TASKPLANE_API_KEYS=tenant:key,…)')
    .option('--reconcile-interval-ms <ms>', 'reconciliation interval per target', intOption(1), 600_000)
    .option(
      '--metrics-token <token>',
      'bearer token /metrics requires (also TASKPLANE_METRICS_TOKEN); without one /metrics is open on loopback and refused beyond it',
    )
    .option(
      '--allow-private-verifiers',
      'let acceptance verifiers be on private, loopback or link-local addresses (a verifier beside the plane)',
      false,
    )
    .option(
      '--max-body-bytes <bytes>',
      'request body limit of the /v1 routes (413 past it)',
      intOption(1),
      1_048_576,
    )
    .option('--max-webhook-bytes <bytes>', 'request body limit of the webhook route', intOption(1), 65_536)
    .option('--max-json-depth <levels>', 'nesting a JSON body may have (400 past it)', intOption(1), 64)
    .option(
      '--tenant-writes-per-second <n>',
      'per tenant: keyed POSTs a second, sustained (429 past it; docs/security.md)',
      numberOption,
      TENANT.writesPerSecondPerTenant,
    )
    .option(
      '--tenant-write-burst <n>',
      'per tenant: POSTs at once after a pause',
      intOption(1),
      TENANT.writeBurstPerTenant,
    )
    .option(
      '--tenant-creates-in-flight <n>',
      'per tenant: creates handled or waiting their turn at once',
      intOption(1),
      TENANT.maxCreatesInFlightPerTenant,
    )
    .option(
      '--tenant-fair-creates <n>',
      'per tenant: creates handled at once while another tenant has creates (the rest wait their turn)',
      intOption(1),
      TENANT.fairCreatesInFlightPerTenant,
    )
    .option(
      '--tenant-refusals-per-second <n>',
      "per tenant: refused requests a second before the tenant's next requests wait at the door",
      numberOption,
      TENANT.refusalsPerSecondPerTenant,
    )
    .option(
      '--tenant-refusal-burst <n>',
      'per tenant: refusals taken without delay after a quiet spell',
      intOption(1),
      TENANT.refusalBurstPerTenant,
    )
    .option(
      '--tenant-compile-ms-per-second <ms>',
      'per tenant: acceptance schema compile time a second (429 for a new schema past it)',
      numberOption,
      TENANT.schemaCompileMsPerSecondPerTenant,
    )
    .option(
      '--tenant-compile-burst-ms <ms>',
      'per tenant: compile time taken without delay after a quiet spell',
      numberOption,
      TENANT.schemaCompileBurstMsPerTenant,
    )
    .option(
      '--tenant-streams <n>',
      'per tenant: SSE streams open at once',
      intOption(1),
      TENANT.maxStreamsPerTenant,
    )
    .option(
      '--tenant-stream-sends-per-second <n>',
      'per tenant: sends of its busy SSE streams a second, together',
      numberOption,
      TENANT.streamSendsPerSecondPerTenant,
    )
    .option(
      '--tenant-body-bytes-per-second <bytes>',
      'per tenant: request body bytes read a second (past it, bodies are read more slowly)',
      numberOption,
      TENANT.bodyBytesPerSecondPerTenant,
    )
    .option(
      '--retention-days <days>',
      'keep finished tasks this many days, then purge them with their events (per tenant: --plane-options retention.tenants); "never" keeps them',
      retentionDays,
      30,
    )
    .option(
      '--export-before-purge <dir>',
      'append the events of each task to <dir>/purged-<date>.jsonl (fsynced) before it is purged',
    )
    .option('--no-stream', 'do not watch tasks over streams')
    .option('--poll', 'poll every task (fallback mechanism)', false)
    .addOption(
      new Option('--lost-policy <policy>', 'what to do with tasks the agent no longer knows')
        .choices(['resubmit', 'escalate'])
        .default('resubmit'),
    )
    .option(
      '--plane-options <json>',
      'engine options as JSON (see docs/plane.md; also TASKPLANE_PLANE_OPTIONS), merged over the flags',
    )
    .option(
      '--demo',
      'also run the demo agent host as targets "demo" (A2A) and "demo-mcp" (MCP) and start sample tasks',
      false,
    )
    .option(
      '--demo-tasks-file <path>',
      'with --demo: more sample tasks as JSON [{"target", "label", "input", "budget"?}] (npm start adds its emulator targets\' this way)',
    )
    .addOption(
      new Option('--log-level <level>', 'JSON log level on stderr (default: warn with --demo, else info)')
        .choices(LOG_LEVELS)
        .env('LOG_LEVEL'),
    )
    .addHelpText(
      'after',
      `
Node.js flags go in NODE_OPTIONS. A smaller V8 young generation (--max-semi-space-size) shortens the
collector's pauses of a plane following many streams, for more collector CPU; it helped in some
measurements and hurt in others, so it is not a default: docs/deploy.md, "Young generation".`,
    )
    .action(async (opts: Record<string, unknown>) => {
      // Commander has read LOG_LEVEL into the flag's value already, and checked it.
      const level = serveLogLevel(opts.logLevel as string | undefined, undefined, opts.demo === true);
      const logger = pino({ level }, pino.destination(2));
      // The server, its connectors and the demo host load here, not at the top: `taskplane --help` and
      // the other commands do not pay for them.
      const [{ startServer }, { parseTargetSigningSecrets, parseTargets, parseTargetsFile }, demo] =
        await Promise.all([
          import('../server/start-server.ts'),
          import('../server/targets.ts'),
          opts.demo ? import('../server/demo.ts') : null,
        ]);
      const db = opts.db as string;
      const parsed = parseStoreUrl(db);
      if (parsed.kind === 'sqlite' && parsed.path.includes('/'))
        mkdirSync(parsed.path.slice(0, parsed.path.lastIndexOf('/')), { recursive: true });
      const targetsFile = (opts.targetsFile as string | undefined) ?? process.env.TASKPLANE_TARGETS_FILE;
      const targets: Record<string, TargetConfig> = {
        ...(targetsFile ? parseTargetsFile(readOptionFile(targetsFile, 'targets-file'), targetsFile) : {}),
        ...parseTargets(process.env.TASKPLANE_TARGETS),
        ...parseTargets((opts.target as string[]).join(',')),
      };
      const secrets = parseTargetSigningSecrets(
        process.env.TASKPLANE_TARGET_SIGNING_SECRETS,
        new Set(Object.keys(targets).filter((name) => targets[name]!.kind === 'a2a')),
      );
      for (const [name, webhookSigningSecret] of Object.entries(secrets))
        targets[name] = { ...targets[name]!, webhookSigningSecret };
      const demoTasksFile = opts.demoTasksFile as string | undefined;
      if (demoTasksFile && !demo)
        throw new TaskplaneError('config', '--demo-tasks-file goes with --demo', {
          field: 'demo-tasks-file',
        });
      // Read and checked before anything starts, so a mistake in it stops nothing half-way.
      const extraDemoTasks =
        demoTasksFile && demo
          ? demo.parseDemoTasks(readOptionFile(demoTasksFile, 'demo-tasks-file'), demoTasksFile)
          : [];
      let host: RunningHost | null = null;
      if (demo) {
        mkdirSync('data', { recursive: true });
        host = await demo.startDemoHost({ logger });
        Object.assign(targets, demo.demoTargets(host));
      }
      const lostPolicy = opts.lostPolicy as 'resubmit' | 'escalate';
      const server = await startServer({
        port: opts.port as number,
        bind: opts.bind as string,
        db,
        targets,
        env: process.env,
        ...(process.env.TASKPLANE_API_KEYS ? { apiKeys: process.env.TASKPLANE_API_KEYS } : {}),
        ...(opts.keysFile ? { apiKeysFile: opts.keysFile as string } : {}),
        ...(((opts.metricsToken as string | undefined) ?? process.env.TASKPLANE_METRICS_TOKEN)
          ? {
              metricsToken: (opts.metricsToken as string | undefined) ?? process.env.TASKPLANE_METRICS_TOKEN!,
            }
          : {}),
        allowPrivateVerifiers: opts.allowPrivateVerifiers === true,
        limits: {
          maxBodyBytes: opts.maxBodyBytes as number,
          maxWebhookBytes: opts.maxWebhookBytes as number,
          maxJsonDepth: opts.maxJsonDepth as number,
          writesPerSecondPerTenant: opts.tenantWritesPerSecond as number,
          writeBurstPerTenant: opts.tenantWriteBurst as number,
          maxCreatesInFlightPerTenant: opts.tenantCreatesInFlight as number,
          fairCreatesInFlightPerTenant: opts.tenantFairCreates as number,
          refusalsPerSecondPerTenant: opts.tenantRefusalsPerSecond as number,
          refusalBurstPerTenant: opts.tenantRefusalBurst as number,
          schemaCompileMsPerSecondPerTenant: opts.tenantCompileMsPerSecond as number,
          schemaCompileBurstMsPerTenant: opts.tenantCompileBurstMs as number,
          maxStreamsPerTenant: opts.tenantStreams as number,
          streamSendsPerSecondPerTenant: opts.tenantStreamSendsPerSecond as number,
          bodyBytesPerSecondPerTenant: opts.tenantBodyBytesPerSecond as number,
        },
        // The demo host is on this machine, so push to the listening URL works and shows the fast path.
        publicUrl: (opts.publicUrl as string | undefined) ?? (opts.demo ? 'self' : null),
        plane: mergePlaneOptions(
          {
            delivery: { stream: opts.stream !== false, push: true, poll: opts.poll === true },
            reconcile: { intervalMs: opts.reconcileIntervalMs as number },
            lostPolicy,
            retention: {
              terminalMs:
                opts.retentionDays === null ? null : Math.round((opts.retentionDays as number) * DAY_MS),
            },
          },
          (opts.planeOptions as string | undefined) ?? process.env.TASKPLANE_PLANE_OPTIONS,
        ),
        ...(opts.exportBeforePurge ? { exportBeforePurge: opts.exportBeforePurge as string } : {}),
        logger,
      }).catch((err: unknown) => {
        if (err instanceof TaskplaneError && err.field === 'exportBeforePurge')
          throw new TaskplaneError(
            'config',
            err.message.replace(/^exportBeforePurge/, '--export-before-purge'),
            {
              field: 'export-before-purge',
            },
          );
        throw withFlagHint(err);
      });
      const lines = [
        `taskplane serve ready ${server.url}`,
        `  dashboard: ${server.dashboardUrl}`,
        `  failure lab: ${server.url}/lab/`,
      ];
      lines.push(...keyLines(server, db, !process.env.TASKPLANE_API_KEYS && !opts.keysFile));
      if (host && demo) {
        const { DEMO_MCP_TARGET, DEMO_TARGET, DEMO_EXTRA_SEEDED_SETTING, seedDemoTasks } = demo;
        const ids = await seedDemoTasks(server);
        lines.push(
          ids
            ? `  demo host: ${host.url} (target "${DEMO_TARGET}", A2A; target "${DEMO_MCP_TARGET}", MCP at /mcp); started ${ids.length} sample tasks, two will ask "Which edition?"`
            : `  demo host: ${host.url} (target "${DEMO_TARGET}", A2A; target "${DEMO_MCP_TARGET}", MCP at /mcp); its sample tasks were added on this database's first start`,
        );
        if (extraDemoTasks.length > 0) {
          const more = await seedDemoTasks(server, 'default', extraDemoTasks, DEMO_EXTRA_SEEDED_SETTING);
          const on = [...new Set(extraDemoTasks.map((t) => t.target))].join(', ');
          lines.push(
            more
              ? `  more sample tasks: started ${more.length} on ${on} (--demo-tasks-file)`
              : `  more sample tasks on ${on}: added on this database's first start (--demo-tasks-file)`,
          );
        }
      }
      lines.push(`  logs: JSON on stderr at level ${level} (--log-level to change)`);
      printForPeople(lines);
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off('SIGTERM', stop);
          process.off('SIGINT', stop);
          process.off('disconnect', stop);
          void server
            .close()
            .then(() => host?.close())
            .then(resolve, (err: unknown) => {
              console.error('taskplane serve: shutdown failed', err);
              resolve();
            });
        };
        process.on('SIGTERM', stop);
        process.on('SIGINT', stop);
        // Started by a parent over IPC (`npm start`): when that channel closes the parent is gone, even
        // if it was killed without a word, and serve stops in order rather than run on orphaned.
        if (process.channel) {
          process.channel.unref();
          process.once('disconnect', stop);
        }
      });
      console.log('taskplane serve stopped');
    });
}
