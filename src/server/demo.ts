import { randomUUID } from 'node:crypto';
import { configError } from '../core/errors.ts';
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

export interface DemoTask {
  label: string;
  target: string;
  input: unknown;
  budget?: { limit: number; unit: string };
  /** @default the input's `durationMs` plus a minute, else a minute */
  expectedDurationMs?: number;
}

export const DEMO_TASKS: DemoTask[] = [
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

/**
 * More sample tasks, from `serve --demo --demo-tasks-file`: a JSON array of `{target, label, input,
 * budget?, expectedDurationMs?}` (`npm start` puts its emulator targets' tasks there). Checked before
 * anything starts; errors name `demo-tasks[i].<field>`.
 */
export function parseDemoTasks(text: string, path: string): DemoTask[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw configError('demo-tasks-file', `${path} is not JSON`);
  }
  if (!Array.isArray(json)) throw configError('demo-tasks-file', `${path} must hold an array of tasks`);
  return json.map((raw: unknown, i): DemoTask => {
    const t = (raw ?? {}) as Record<string, unknown>;
    const field = (name: string) => `demo-tasks[${i}].${name}`;
    if (typeof t.target !== 'string' || t.target === '') throw configError(field('target'), 'is required');
    if (typeof t.label !== 'string' || t.label === '') throw configError(field('label'), 'is required');
    if (t.input === undefined) throw configError(field('input'), 'is required');
    const b = t.budget as { limit?: unknown; unit?: unknown } | undefined;
    if (b !== undefined && (typeof b?.limit !== 'number' || typeof b.unit !== 'string'))
      throw configError(field('budget'), 'must be {limit: number, unit: string}');
    const d = t.expectedDurationMs;
    if (d !== undefined && (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 1))
      throw configError(field('expectedDurationMs'), 'must be an integer >= 1');
    return {
      target: t.target,
      label: t.label,
      input: t.input,
      ...(b ? { budget: { limit: b.limit as number, unit: b.unit as string } } : {}),
      ...(d !== undefined ? { expectedDurationMs: d as number } : {}),
    };
  });
}

function expectedDuration(t: DemoTask): number {
  if (t.expectedDurationMs !== undefined) return t.expectedDurationMs;
  const ms = (t.input as { durationMs?: unknown } | null)?.durationMs;
  return (typeof ms === 'number' ? ms : 0) + 60_000;
}

/** Marks a database the sample tasks were added to; its value says when (and a nonce, so two starts never tie). */
export const DEMO_SEEDED_SETTING = 'demo.seededAt';
/** The same mark for the tasks of `--demo-tasks-file` (npm start's emulator targets). */
export const DEMO_EXTRA_SEEDED_SETTING = 'demo.extraSeededAt';

/**
 * Starts the sample tasks (the built-in ones unless others are given) once per database and `setting`
 * (a settings key); returns their ids, or null when an earlier start (this process or another on the same
 * database) added them already.
 */
export async function seedDemoTasks(
  server: RunningServer,
  tenant = 'default',
  tasks: readonly DemoTask[] = DEMO_TASKS,
  setting = DEMO_SEEDED_SETTING,
): Promise<string[] | null> {
  const mark = `${new Date().toISOString()} ${randomUUID()}`;
  if ((await server.store.putSettingIfAbsent(setting, mark)) !== mark) return null;
  const ids: string[] = [];
  for (const t of tasks) {
    const { envelope } = await server.plane.create(
      {
        tenant,
        target: t.target,
        input: t.input,
        actor: 'demo',
        workflowId: `demo:${t.label}`,
        expectedDurationMs: expectedDuration(t),
        ...(t.budget ? { budget: t.budget } : {}),
      },
      // "Started" in the ready banner means the remote has them.
      { wait: 'started' },
    );
    ids.push(envelope.id);
  }
  return ids;
}
