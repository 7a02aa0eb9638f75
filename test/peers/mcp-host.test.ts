import { startHost } from '../../src/host/start-host.ts';
import { silentLogger } from '../../src/core/logger.ts';
import conformanceAgent from '../host/mcp/conformance-agent.ts';
import { mcpTasksBehaviour } from './mcp-tasks-behaviour.ts';

/**
 * The plane's MCP end-to-end tests (test/peers/mcp-tasks-behaviour.ts) pointed at `taskplane host`'s /mcp
 * with the conformance fixture tools: the plane's connector against our own host's MCP surface. The
 * fault tests need the peer's injected faults and are skipped here.
 */
mcpTasksBehaviour('taskplane host /mcp', async () => {
  const host = await startHost({ port: 0, db: 'memory:', agent: conformanceAgent, logger: silentLogger });
  return { url: `${host.url}/mcp`, close: () => host.close() };
});
