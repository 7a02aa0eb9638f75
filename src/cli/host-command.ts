import { readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { TaskplaneError } from '../core/errors.ts';
import pino from 'pino';
import { intOption, LOG_LEVELS, retentionDays } from './cli-options.ts';
import { loadKeys } from '../host/auth.ts';
import { registerHostOutboxCommand } from './host-outbox-command.ts';

/**
 * `taskplane host`: the durable A2A 1.0 agent host. Prints the card URL and both binding URLs when
 * ready (the first line is `taskplane host ready <url>` so scripts and tests can wait on it) and shuts
 * down cleanly on SIGTERM/SIGINT: in-flight tasks stay stored and resume on the next start.
 */
export function registerHostCommand(program: Command): void {
  const host = program
    .command('host')
    .description('Run the durable agent host: A2A 1.0, and MCP (2026-07-28 tasks, 2025-11-25) at /mcp')
    .option('--port <port>', 'TCP port (0 = any free port)', intOption(0, 65535), 4100)
    .option('--bind <address>', 'interface to bind (default 127.0.0.1)')
    .option('--db <url>', 'sqlite:PATH | postgres://… | memory:', 'sqlite:./data/host.db')
    .option(
      '--agent <path>',
      'module whose default export is defineAgent({card, execute, tools}) (default: demo agent)',
    )
    .addOption(
      new Option('--auth <mode>', 'who may call: keys from TASKPLANE_HOST_KEYS=owner:key,… or --keys-file')
        .choices(['none', 'keys'])
        .default('none'),
    )
    .option('--keys-file <path>', 'file with one owner:key per line')
    .option('--public-url <url>', 'base URL to publish in the agent card')
    .option(
      '--grpc-port <port>',
      'also serve A2A over gRPC on this port (0 = any free port)',
      intOption(0, 65535),
    )
    .option('--grpc-public-url <host:port>', 'gRPC target to publish in the agent card')
    .option(
      '--host-id <id>',
      'stable name of this host process for task ownership (default <hostname>:<port>)',
    )
    .option(
      '--card-signing-key <file>',
      'sign the agent card (JWS) with this private key: PEM or JWK file (EC, Ed25519 or RSA)',
    )
    .option('--allow-private-webhooks', 'allow push to private, loopback and link-local addresses', false)
    .option('--push-base-ms <ms>', 'first push retry delay, doubling', intOption(1), 5000)
    .option('--push-attempts <n>', 'push attempts before dead-lettering', intOption(1), 8)
    .option('--push-timeout-ms <ms>', 'timeout of one push call', intOption(1), 15000)
    .option('--input-timeout-ms <ms>', 'INPUT_REQUIRED longer than this fails the task', intOption(1), 900000)
    .option(
      '--mcp-task-ttl-ms <ms>',
      'lifetime of an MCP task from its creation (ttlMs)',
      intOption(1),
      86400000,
    )
    .option('--mcp-poll-interval-ms <ms>', 'pollIntervalMs suggested to MCP clients', intOption(1), 1000)
    .option(
      '--retention-days <days>',
      'keep finished tasks this many days after their last update, then purge them with their events; "never" keeps them',
      retentionDays,
      30,
    )
    .option(
      '--host-lease-ms <ms>',
      "a crashed host's tasks are taken over by another host this long after its last renewal (on PostgreSQL: once its session ends)",
      intOption(1),
      30000,
    )
    .option(
      '--shutdown-grace-ms <ms>',
      'on SIGTERM, how long to wait for running executes to stop after their abort signal; the rest resume on the next start',
      intOption(1),
      10000,
    )
    .addOption(
      new Option('--log-level <level>', 'JSON log level on stderr')
        .choices(LOG_LEVELS)
        .default('info')
        .env('LOG_LEVEL'),
    )
    .action(async (opts: Record<string, unknown>) => {
      const auth = opts.auth as 'none' | 'keys';
      // --auth none serves anyone who can connect, so it binds to loopback unless told otherwise.
      const bind = (opts.bind as string | undefined) ?? '127.0.0.1';
      // Loaded here, not at the top: `taskplane --help` and the other commands do not pay for the host.
      const { startHost } = await import('../host/start-host.ts');
      const host = await startHost({
        port: opts.port as number,
        bind,
        db: opts.db as string,
        auth,
        ...(auth === 'keys'
          ? { keys: loadKeys(process.env.TASKPLANE_HOST_KEYS, opts.keysFile as string | undefined) }
          : {}),
        ...(opts.agent ? { agent: opts.agent as string } : {}),
        ...(opts.publicUrl ? { publicUrl: opts.publicUrl as string } : {}),
        ...(opts.grpcPort !== undefined ? { grpcPort: opts.grpcPort as number } : {}),
        ...(opts.grpcPublicUrl ? { grpcPublicUrl: opts.grpcPublicUrl as string } : {}),
        ...(opts.hostId ? { hostId: opts.hostId as string } : {}),
        ...(opts.cardSigningKey ? { cardSigningKey: readKeyFile(opts.cardSigningKey as string) } : {}),
        allowPrivateWebhooks: opts.allowPrivateWebhooks === true,
        pushBaseMs: opts.pushBaseMs as number,
        pushAttempts: opts.pushAttempts as number,
        pushTimeoutMs: opts.pushTimeoutMs as number,
        // A secret, so from the environment only: a flag would show in the process list.
        ...(process.env.TASKPLANE_HOST_PUSH_SIGNING_SECRET
          ? { pushSigningSecret: process.env.TASKPLANE_HOST_PUSH_SIGNING_SECRET }
          : {}),
        // A secret too: from the environment only.
        ...(process.env.TASKPLANE_HOST_METRICS_TOKEN
          ? { metricsToken: process.env.TASKPLANE_HOST_METRICS_TOKEN }
          : {}),
        inputTimeoutMs: opts.inputTimeoutMs as number,
        mcpTaskTtlMs: opts.mcpTaskTtlMs as number,
        mcpPollIntervalMs: opts.mcpPollIntervalMs as number,
        taskRetentionMs:
          opts.retentionDays === null ? null : Math.round((opts.retentionDays as number) * 86_400_000),
        hostLeaseMs: opts.hostLeaseMs as number,
        shutdownGraceMs: opts.shutdownGraceMs as number,
        // Logs go to stderr so stdout carries only the ready lines scripts wait for.
        logger: pino({ level: opts.logLevel as string }, pino.destination(2)),
      });
      console.log(`taskplane host ready ${host.url}`);
      console.log(`  agent card: ${host.cardUrl}`);
      console.log(`  JSON-RPC:   ${host.jsonRpcUrl}`);
      console.log(`  HTTP+JSON:  ${host.restUrl}`);
      console.log(`  MCP:        ${host.mcpUrl}`);
      if (host.grpcUrl) console.log(`  gRPC:       ${host.grpcUrl}`);
      const r = host.recovered;
      console.log(`  recovered:  ${r.resumed} resumed, ${r.failed} failed, ${r.waiting} waiting for input`);
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off('SIGTERM', stop);
          process.off('SIGINT', stop);
          void host.close().then(resolve, (err: unknown) => {
            console.error('taskplane host: shutdown failed', err);
            resolve();
          });
        };
        process.on('SIGTERM', stop);
        process.on('SIGINT', stop);
      });
      console.log('taskplane host stopped');
    });
  registerHostOutboxCommand(host);
}

/** The signing key file's text; a file that cannot be read is a config error naming the option. */
function readKeyFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new TaskplaneError('config', `--card-signing-key: cannot read ${path}: ${(err as Error).message}`, {
      field: 'cardSigningKey',
    });
  }
}
