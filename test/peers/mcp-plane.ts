import pino from 'pino';
import type { PlaneOptions } from '../../src/plane/options.ts';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';
import type { TargetConfig } from '../../src/server/targets.ts';

/**
 * `taskplane serve` in process (startServer) with one MCP target, driven through its HTTP API as a
 * caller would. Real time, because the peers are real HTTP servers; waits re-read the task until a
 * condition holds, with a guard that only stops a hung test.
 */
export interface TaskJson {
  id: string;
  state: string;
  nativeState: string | null;
  connector: string;
  remoteId: string | null;
  result: unknown;
  error: { code: string; message: string } | null;
  pendingInput: {
    requestId: string;
    prompt: string;
    answeredAt?: number | null;
    requests?: Array<{
      requestId: string;
      prompt: string;
      method?: string;
      schema?: Record<string, unknown>;
    }>;
  } | null;
  cancel: { outcome: string | null; acknowledgedAt: number | null } | null;
  reconciliation: { result: string; note?: string } | null;
}

export interface McpPlane {
  server: RunningServer;
  create(input: unknown): Promise<TaskJson>;
  get(id: string): Promise<TaskJson>;
  answer(
    id: string,
    requestId: string,
    value: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  cancel(id: string): Promise<TaskJson>;
  until(id: string, test: (t: TaskJson) => boolean, what: string): Promise<TaskJson>;
  history(id: string): Promise<Array<{ type: string; data: Record<string, unknown> }>>;
  close(): Promise<void>;
}

const KEY = 'mcp-plane-test-key-0123';
const GUARD_MS = 15_000;

export async function mcpPlane(
  target: TargetConfig,
  plane: PlaneOptions = {},
  /** A store URL to start again on (a restart test); @default a fresh memory store */
  db = 'memory:',
): Promise<McpPlane> {
  const server = await startServer({
    port: 0,
    db,
    targets: { docs: target },
    apiKeys: `t:${KEY}`,
    dashboard: false,
    defaultMetrics: false,
    logger: pino({ level: 'silent' }),
    plane: {
      delivery: { stream: false, push: false, poll: true },
      poll: { intervalMs: 20, maximumIntervalMs: 200, jitterRatio: 0.1 },
      requestTimeoutMs: 3_000,
      startRetry: { initialIntervalMs: 50, maximumIntervalMs: 200 },
      ...plane,
    },
  });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const get = async (id: string) => (await call('GET', `/v1/tasks/${id}`)).body as unknown as TaskJson;
  return {
    server,
    async create(input) {
      const r = await call('POST', '/v1/tasks', { target: 'docs', input });
      if (r.status >= 300) throw new Error(`create: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body as unknown as TaskJson;
    },
    get,
    answer: (id, requestId, value) => call('POST', `/v1/tasks/${id}/input`, { requestId, value }),
    async cancel(id) {
      return (await call('POST', `/v1/tasks/${id}/cancel`, {})).body as unknown as TaskJson;
    },
    async until(id, test, what) {
      const started = Date.now();
      for (;;) {
        const t = await get(id);
        if (test(t)) return t;
        if (Date.now() - started > GUARD_MS)
          throw new Error(
            `${what}: not reached; task is ${t.state} (${t.nativeState}) ${JSON.stringify(t.error)}`,
          );
        await new Promise((r) => setTimeout(r, 15));
      }
    },
    async history(id) {
      return (await call('GET', `/v1/tasks/${id}/history`)).body.events as Array<{
        type: string;
        data: Record<string, unknown>;
      }>;
    },
    close: () => server.close(),
  };
}

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'expired', 'lost']);
