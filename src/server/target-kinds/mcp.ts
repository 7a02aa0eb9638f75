import { McpConnector } from '../../connectors/mcp/mcp-connector.ts';
import { TargetSettings, type TargetKind } from '../targets.ts';

/**
 * Targets of kind `mcp`: an MCP server's Streamable HTTP endpoint, one tool call per job
 * (docs/plane.md, "MCP"). `--target docs=mcp+http://127.0.0.1:4100/mcp` stands for
 * `{ "kind": "mcp", "url": "http://127.0.0.1:4100/mcp" }`; a `tool` setting fixes the tool and makes
 * the job input its arguments.
 */
export const mcpTarget: TargetKind = {
  schemes: ['mcp+http:', 'mcp+https:'],
  fromUrl: (url) => ({ kind: 'mcp', url: url.replace(/^mcp\+/i, '') }),
  connect(name, config, deps) {
    const s = new TargetSettings(name, config, deps.env);
    s.only(['url', 'tool', 'headers', 'timeoutMs', 'era', 'legacyTtlMs']);
    const tool = s.string('tool');
    const headers = s.strings('headers');
    const timeoutMs = s.int('timeoutMs', 1);
    const era = s.oneOf('era', ['auto', 'modern', 'legacy'] as const);
    const legacyTtlMs = s.int('legacyTtlMs', 1);
    return new McpConnector({
      target: name,
      url: s.url('url'),
      clock: deps.clock,
      ...(tool !== undefined ? { tool } : {}),
      ...(headers ? { headers } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(era ? { era } : {}),
      ...(legacyTtlMs !== undefined ? { legacyTtlMs } : {}),
    });
  },
};
