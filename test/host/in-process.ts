import pino from 'pino';
import type { Clock } from '../../src/core/clock.ts';
import type { AgentDefinition } from '../../src/host/agent-api.ts';
import { startHost, type HostOptions, type RunningHost } from '../../src/host/start-host.ts';
import type { Store } from '../../src/store/store.ts';
import { untilStored } from '../support/until-stored.ts';

export const silent = pino({ level: 'silent' });

/** Raw wire JSON in tests that probe fields directly (the protocol types are checked in src/). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- deliberate: tests read arbitrary wire JSON
export type Wire = any;

/** The host in this process on a free port, over a store the test owns. */
export function startTestHost(
  store: Store,
  options: Partial<HostOptions> & { clock?: Clock; agent?: AgentDefinition } = {},
): Promise<RunningHost> {
  return startHost({ port: 0, db: store, logger: silent, allowPrivateWebhooks: true, ...options });
}

/** Resolves when the stored task satisfies `check`, woken by the store's change feed (no sleeping). */
export function waitForTask(
  store: Store,
  taskId: string,
  check: (task: { state: string; task: Record<string, unknown> }) => boolean,
  timeoutMs = 20_000,
): Promise<void> {
  return untilStored(
    store,
    taskId,
    async () => {
      const t = await store.getAgentTask(taskId);
      return !!t && check(t);
    },
    `task ${taskId}: condition`,
    timeoutMs,
  );
}

export async function call(
  url: string,
  method: string,
  params: unknown,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${url}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'A2A-Version': '1.0', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return {
    status: res.status,
    body: (await res.json()) as { result?: Wire; error?: { code: number; message: string; data?: Wire[] } },
  };
}
