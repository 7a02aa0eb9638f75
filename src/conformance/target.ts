import { A2AConnector, fetchAgentCard } from '../connectors/a2a/a2a-connector.ts';
import type { Connector } from '../connectors/connector.ts';
import { McpConnector } from '../connectors/mcp/mcp-connector.ts';
import { TaskplaneError } from '../core/errors.ts';
import { MCP_WIRE } from './mcp-wire.ts';
import type { AgentFacts } from './report.ts';
import { A2A_WIRE, type WireDialect } from './wire-facts.ts';

/**
 * The target under test: an A2A 1.0 agent (its card at `<url>/.well-known/agent-card.json`) or an MCP
 * tasks server (`<url>` is its Streamable HTTP endpoint, e.g. `…/mcp`). It gives the facts for the
 * report, the wire reader for the proxy, and the connectors the engine and the direct reads use.
 */
export interface Target {
  agent: AgentFacts;
  wire: WireDialect;
  /** A connector to `url` (the proxy's, or the target's own for reads around the proxy). */
  connector(name: string, url: string, headers: Record<string, string>): Connector;
}

export type Protocol = 'a2a' | 'mcp';

const TIMEOUT_MS = 5000;

async function a2aTarget(target: string, headers: Record<string, string>): Promise<Target> {
  const card = await fetchAgentCard(target, AbortSignal.timeout(10_000), { headers });
  const caps = (card.capabilities ?? {}) as { streaming?: boolean; pushNotifications?: boolean };
  return {
    agent: {
      protocol: 'a2a',
      name: typeof card.name === 'string' ? card.name : null,
      version: typeof card.version === 'string' ? card.version : null,
      bindings: (card.supportedInterfaces ?? []).map((i) => `${i.protocolBinding} ${i.protocolVersion}`),
      streaming: caps.streaming === true,
      push: caps.pushNotifications === true,
    },
    wire: A2A_WIRE,
    connector: (name, url, h) =>
      new A2AConnector({ target: name, baseUrl: url, headers: h, timeoutMs: TIMEOUT_MS }),
  };
}

async function mcpTarget(
  target: string,
  headers: Record<string, string>,
  tool: string | undefined,
): Promise<Target> {
  const make = (name: string, url: string, h: Record<string, string>) =>
    new McpConnector({ target: name, url, headers: h, timeoutMs: TIMEOUT_MS, ...(tool ? { tool } : {}) });
  const probe = make('probe', target, headers);
  await probe.prepare(AbortSignal.timeout(10_000));
  const era = probe.negotiated!;
  if (!era.tasks)
    throw new TaskplaneError(
      'unsupported',
      `--target: the MCP server at ${target} does not take tasks (${era.version})`,
      {
        field: 'target',
      },
    );
  if (!tool)
    throw new TaskplaneError(
      'invalid_argument',
      '--tool: an MCP target needs the tool every job calls (e.g. --tool demo_task)',
      {
        field: 'tool',
      },
    );
  return {
    agent: {
      protocol: 'mcp',
      name: null,
      version: null,
      bindings: [`MCP ${era.version}${era.modern ? ' (tasks extension)' : ' (experimental tasks)'}`],
      // Task notifications over subscriptions/listen, which the modern era offers with the extension.
      streaming: era.modern,
      push: false,
    },
    wire: MCP_WIRE,
    connector: make,
  };
}

/**
 * Reads the target as `protocol` says, or, when it says nothing, as an A2A agent first (its card) and
 * then as an MCP server. A target that answers neither is refused naming `--target`.
 */
export async function openTarget(
  target: string,
  headers: Record<string, string>,
  options: { protocol?: Protocol; tool?: string } = {},
): Promise<Target> {
  const errors: string[] = [];
  if (options.protocol !== 'mcp') {
    try {
      return await a2aTarget(target, headers);
    } catch (err) {
      errors.push(
        `the agent card at ${target.replace(/\/+$/, '')}/.well-known/agent-card.json (${(err as Error).message})`,
      );
    }
  }
  if (options.protocol !== 'a2a') {
    try {
      return await mcpTarget(target, headers, options.tool);
    } catch (err) {
      if (err instanceof TaskplaneError && (err.field === 'tool' || err.code === 'unsupported')) throw err;
      errors.push(`an MCP server at ${target} (${(err as Error).message})`);
    }
  }
  throw new TaskplaneError('unavailable', `--target: cannot read ${errors.join(', nor ')}`, {
    field: 'target',
  });
}
