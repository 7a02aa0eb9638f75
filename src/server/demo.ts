import { randomUUID } from 'node:crypto';
import type { Logger } from '../core/logger.ts';
import { startHost, type RunningHost } from '../host/start-host.ts';
import type { RunningServer } from './start-server.ts';
import type { TargetConfig } from './targets.ts';

/**
 * `serve --demo` (what `npm start` runs): the demo agent host beside the plane in this process,
 * registered twice: as target `demo` (its A2A interface) and as target `demo-mcp` (its MCP endpoint,
 * the `demo_task` tool), and a handful of sample tasks on each so a newcomer sees them move at once,
 * some waiting for input. The host keeps its own SQLite file; push goes to the plane over loopback,
 * which the host allows for this pairing only.
 */
export const DEMO_TARGET = 'demo';
export const DEMO_MCP_TARGET = 'demo-mcp';

export const DEMO_TASKS: Array<{ label: string; target: string; input: unknown }> = [
  { label: 'quick echo', target: DEMO_TARGET, input: 'hello from the taskplane demo' },
  { label: 'steady work', target: DEMO_TARGET, input: { durationMs: 20_000, steps: 5, artifactChunks: 2 } },
  {
    label: 'asks which edition',
    target: DEMO_TARGET,
    input: { durationMs: 30_000, steps: 6, askInput: 'Which edition? (first / second)', artifactChunks: 2 },
  },
  { label: 'fails on purpose', target: DEMO_TARGET, input: { durationMs: 10_000, steps: 2, fail: true } },
  { label: 'long haul', target: DEMO_TARGET, input: { durationMs: 120_000, steps: 12, artifactChunks: 3 } },
  // The same script as MCP tool calls: the arguments of `demo_task`.
  { label: 'tool call', target: DEMO_MCP_TARGET, input: { durationMs: 25_000, steps: 5 } },
  {
    label: 'tool asks which edition',
    target: DEMO_MCP_TARGET,
    input: { durationMs: 30_000, steps: 4, askInput: 'Which edition? (first / second)' },
  },
  {
    label: 'tool fails on purpose',
    target: DEMO_MCP_TARGET,
    input: { durationMs: 8_000, steps: 2, fail: true },
  },
];

/**
 * The demo host's id, the same on every start. The host leases its tasks under its id for 30 s; with a
 * fresh id per start (the default with port 0), a restarted `npm start` saw its own unfinished demo
 * tasks as another live host's and left them until that lease ran out. With a stable id it owns them
 * and resumes them at once. One demo host per data directory, so no two live processes share it.
 */
export const DEMO_HOST_ID = 'taskplane-demo-host';

/**
 * Starts the demo host. Call before startServer and pass `demoTargets(host)` in its targets, so the
 * plane's restart recovery finds the demo connectors for tasks left from the previous run.
 */
export function startDemoHost(o: { logger: Logger; db?: string; port?: number }): Promise<RunningHost> {
  return startHost({
    port: o.port ?? 0,
    db: o.db ?? 'sqlite:./data/demo-host.db',
    allowPrivateWebhooks: true,
    pushBaseMs: 1000,
    hostId: DEMO_HOST_ID,
    logger: o.logger.child({ part: 'demo-host' }),
  });
}

/**
 * The demo host as the plane's two targets. Our host deduplicates SendMessage on messageId, so a lost
 * A2A start can simply be resent; the MCP target calls the host's `demo_task` tool with each job's
 * input as its arguments.
 */
export function demoTargets(host: RunningHost): Record<string, TargetConfig> {
  return {
    [DEMO_TARGET]: { kind: 'a2a', baseUrl: host.url, idempotentStart: true },
    [DEMO_MCP_TARGET]: { kind: 'mcp', url: `${host.url}/mcp`, tool: 'demo_task' },
  };
}

/** Marks a database the sample tasks were added to; its value says when (and a nonce, so two starts never tie). */
export const DEMO_SEEDED_SETTING = 'demo.seededAt';

/**
 * Starts the sample tasks once per database; returns their ids, or null when an earlier start (this
 * process or another on the same database) added them already. Every `npm start` used to add five more.
 */
export async function seedDemoTasks(server: RunningServer, tenant = 'default'): Promise<string[] | null> {
  const mark = `${new Date().toISOString()} ${randomUUID()}`;
  if ((await server.store.putSettingIfAbsent(DEMO_SEEDED_SETTING, mark)) !== mark) return null;
  const ids: string[] = [];
  for (const t of DEMO_TASKS) {
    const { envelope } = await server.plane.create(
      {
        tenant,
        target: t.target,
        input: t.input,
        actor: 'demo',
        workflowId: `demo:${t.label}`,
        expectedDurationMs:
          typeof t.input === 'object' ? (t.input as { durationMs: number }).durationMs + 60_000 : 60_000,
      },
      // "Started" in the ready banner means the host has them.
      { wait: 'started' },
    );
    ids.push(envelope.id);
  }
  return ids;
}
