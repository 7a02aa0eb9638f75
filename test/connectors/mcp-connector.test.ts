import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SystemClock } from '../../src/core/clock.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { CryptoRandom } from '../../src/core/random.ts';
import { TaskplaneError } from '../../src/core/errors.ts';
import { McpConnector } from '../../src/connectors/mcp/mcp-connector.ts';
import {
  connectTarget,
  parseTargets,
  parseTargetsFile,
  type ConnectorDeps,
} from '../../src/server/targets.ts';
import { startMcpSdkPeer, type McpSdkPeer } from '../peers/mcp-sdk-peer.ts';
import { startModernMcpPeer, type ModernMcpPeer } from '../peers/mcp-modern-peer.ts';
import { connectorBehaviour } from './suite/connector-suite.ts';

/**
 * The connector behaviour suite on the MCP connector, against a server on the official
 * @modelcontextprotocol/sdk 1.x (2025-11-25 experimental tasks) and against our 2026-07-28 peer; and
 * the `mcp` target kind's settings.
 */
let sdk: McpSdkPeer;
let modern: ModernMcpPeer;
beforeAll(async () => {
  sdk = await startMcpSdkPeer({ autoFinishMs: 120_000 });
  modern = await startModernMcpPeer();
});
afterAll(async () => {
  await sdk?.close();
  await modern?.close();
});

connectorBehaviour(
  'mcp 2025-11-25 (@modelcontextprotocol/sdk 1.x server)',
  async () => new McpConnector({ target: 'sdk', url: sdk.url, tool: 'work', timeoutMs: 5_000 }),
  { input: () => ({ label: 'suite' }) },
);
connectorBehaviour(
  'mcp 2026-07-28 (wire-layer peer)',
  async () => new McpConnector({ target: 'modern', url: modern.url, tool: 'slow_compute', timeoutMs: 5_000 }),
  // notifications/tasks frames carry no event id: the stream is not resumable (2026-07-28).
  { input: () => ({ seconds: 120, label: 'suite' }), streamEventIds: false },
);

const never = new AbortController().signal;
const deps = (env: Record<string, string> = {}): ConnectorDeps => ({
  clock: new SystemClock(),
  random: new CryptoRandom(),
  logger: silentLogger,
  env,
});

describe('the mcp connector negotiates the era', () => {
  it('2026-07-28 where server/discover answers, 2025-11-25 (initialize, a session) where it does not', async () => {
    const a = new McpConnector({ target: 'm', url: modern.url });
    await a.prepare(never);
    expect(a.negotiated).toMatchObject({ modern: true, version: '2026-07-28', tasks: true, session: null });
    const b = new McpConnector({ target: 's', url: sdk.url });
    await b.prepare(never);
    expect(b.negotiated).toMatchObject({ modern: false, version: '2025-11-25', tasks: true });
    expect(b.negotiated?.session).toBeTruthy();
  });

  it('a job input that names no tool is refused naming the field, before anything is sent', async () => {
    const c = new McpConnector({ target: 'm', url: modern.url });
    const err = await c
      .start({ envelopeId: 'e', messageId: 'm1', contextId: null, input: { arguments: {} } }, never)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskplaneError);
    expect((err as TaskplaneError).field).toBe('input.name');
    expect((err as TaskplaneError).retryable).toBe(false);
  });

  it('an answer that is not MCP (an HTML 404) is unavailable, route not_protocol: never an outcome', async () => {
    const fake = new McpConnector({
      target: 'h',
      url: 'http://127.0.0.1:9/mcp',
      era: 'modern',
      fetch: async () =>
        new Response('<html>404</html>', { status: 404, headers: { 'content-type': 'text/html' } }),
    });
    const err = await fake.get('some-task', never).catch((e: unknown) => e);
    expect((err as TaskplaneError).code).toBe('unavailable');
    expect((err as TaskplaneError).details?.route).toBe('not_protocol');
  });
});

describe('targets of kind mcp', () => {
  it('--target picks mcp from mcp+http and mcp+https', () => {
    expect(parseTargets('docs=mcp+http://127.0.0.1:4100/mcp,b=mcp+https://tools.example/mcp')).toEqual({
      docs: { kind: 'mcp', url: 'http://127.0.0.1:4100/mcp' },
      b: { kind: 'mcp', url: 'https://tools.example/mcp' },
    });
  });

  it('the targets file: url, tool, headers with secrets from the environment; unknown settings refused', () => {
    const file = parseTargetsFile(
      JSON.stringify({
        docs: {
          kind: 'mcp',
          url: 'https://tools.example/mcp',
          tool: 'search',
          headers: { authorization: { env: 'DOCS_TOKEN' } },
          timeoutMs: 10_000,
        },
      }),
      'targets.json',
    );
    const c = connectTarget('docs', file.docs!, deps({ DOCS_TOKEN: 'Bearer s3cret' }));
    expect(c.kind).toBe('mcp');
    expect(() => connectTarget('docs', file.docs!, deps())).toThrow(
      /targets\.docs\.headers\.authorization: environment variable DOCS_TOKEN is not set/,
    );
    expect(() => connectTarget('docs', { kind: 'mcp', url: 'https://x/mcp', tools: 'a' }, deps())).toThrow(
      /targets\.docs\.tools: unknown setting for kind mcp/,
    );
    expect(() => connectTarget('docs', { kind: 'mcp', url: 'ftp://x/mcp' }, deps())).toThrow(
      /targets\.docs\.url: must be a http or https URL/,
    );
    expect(() => connectTarget('docs', { kind: 'mcp', url: 'https://x/mcp', era: 'old' }, deps())).toThrow(
      /targets\.docs\.era: must be one of auto, modern, legacy/,
    );
  });

  it('sends the configured headers on every call', async () => {
    const seen: Array<string | null> = [];
    const spy = new McpConnector({
      target: 'docs',
      url: modern.url,
      headers: { authorization: 'Bearer abc' },
      fetch: async (input, init) => {
        seen.push(new Headers(init?.headers).get('authorization'));
        return fetch(input, init);
      },
    });
    await spy.prepare(never);
    await spy.start(
      {
        envelopeId: 'e',
        messageId: 'h1',
        contextId: null,
        input: { name: 'greet', arguments: { name: 'x' } },
      },
      never,
    );
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen.every((h) => h === 'Bearer abc')).toBe(true);
  });
});
