import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLI_FROM_SOURCE, freePort, spawnProcess } from '../support/process.ts';

/**
 * Agents under test for the conformance tests, run in the background by agent-ctl.mjs so that the
 * --restart-cmd / --deploy-cmd / --revoke-cmd hooks can SIGKILL and start them again on the same port.
 */
const CTL = fileURLToPath(new URL('./agent-ctl.mjs', import.meta.url));
const SDK_AGENT = fileURLToPath(new URL('./sdk-contract-agent.ts', import.meta.url));
const SDK_MCP_SERVER = fileURLToPath(new URL('./sdk-mcp-contract-server.ts', import.meta.url));
const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export interface AgentUnderTest {
  url: string;
  dir: string;
  /** Shell command: SIGKILL the agent, start it again, return once its card answers. */
  restartCmd: string;
  stop(): Promise<void>;
}

async function ctl(args: string[]): Promise<void> {
  const p = await spawnProcess(process.execPath, [CTL, ...args]);
  const { code } = await p.exited;
  if (code !== 0) throw new Error(`agent-ctl ${args[0]} failed (${code}): ${p.stderr}`);
}

async function startAgent(
  command: (port: number, dir: string) => string[],
  path = '',
): Promise<AgentUnderTest> {
  const dir = mkdtempSync(join(tmpdir(), 'taskplane-conformance-agent-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}${path}`;
  await ctl(['start', dir, url, '--', ...command(port, dir)]);
  return {
    url,
    dir,
    restartCmd: `${sh(process.execPath)} ${sh(CTL)} restart ${sh(dir)}`,
    stop: () => ctl(['stop', dir]),
  };
}

export const HOST_KEY = 'conformance-key-0123456789';
export const OTHER_KEY = 'other-caller-key-0123456789';

/** `taskplane host` (demo agent, SQLite, API keys for two callers) that may push to loopback. */
export async function startHostAgent(
  extraArgs: string[] = [],
): Promise<AgentUnderTest & { keysFile: string }> {
  let keysFile = '';
  const agent = await startAgent((port, dir) => {
    keysFile = join(dir, 'keys');
    writeFileSync(keysFile, `conformance:${HOST_KEY}\nother:${OTHER_KEY}\n`);
    return [
      process.execPath,
      CLI_FROM_SOURCE,
      'host',
      '--port',
      String(port),
      '--db',
      `sqlite:${join(dir, 'host.db')}`,
      '--auth',
      'keys',
      '--keys-file',
      keysFile,
      '--allow-private-webhooks',
      '--push-base-ms',
      '200',
      '--log-level',
      'warn',
      ...extraArgs,
    ];
  });
  return { ...agent, keysFile };
}

/** The plain @a2a-js/sdk agent with its in-memory store (sdk-contract-agent.ts). */
export function startSdkAgent(): Promise<AgentUnderTest> {
  return startAgent((port) => [process.execPath, '--import', 'tsx', SDK_AGENT, '--port', String(port)]);
}

/** A shell command that withdraws the first caller's key and restarts the host (it reads keys at start). */
export function revokeCmd(agent: AgentUnderTest & { keysFile: string }): string {
  return `echo ${sh(`other:${OTHER_KEY}`)} > ${sh(agent.keysFile)} && ${agent.restartCmd}`;
}

/** The plain MCP tasks server on @modelcontextprotocol/sdk with its in-memory store (sdk-mcp-contract-server.ts). */
export function startSdkMcpServer(): Promise<AgentUnderTest> {
  return startAgent(
    (port) => [process.execPath, '--import', 'tsx', SDK_MCP_SERVER, '--port', String(port)],
    '/mcp',
  );
}
