import { describe, expect, it } from 'vitest';
import { SystemClock } from '../../src/core/clock.ts';
import { silentLogger } from '../../src/core/logger.ts';
import { CryptoRandom } from '../../src/core/random.ts';
import {
  connectTarget,
  parseTargets,
  parseTargetsFile,
  type ConnectorDeps,
} from '../../src/server/targets.ts';
import { startServer } from '../../src/server/start-server.ts';
import { startSdkPeer } from '../peers/sdk-peer.ts';

const deps = (env: Record<string, string> = {}): ConnectorDeps => ({
  clock: new SystemClock(),
  random: new CryptoRandom(),
  logger: silentLogger,
  env,
});

describe('targets: --target, the targets file and their settings', () => {
  it('picks the kind from the URL scheme and refuses schemes no kind takes', () => {
    expect(parseTargets('a=http://127.0.0.1:1/, b = https://agent.example')).toEqual({
      a: { kind: 'a2a', baseUrl: 'http://127.0.0.1:1/' },
      b: { kind: 'a2a', baseUrl: 'https://agent.example' },
    });
    expect(() => parseTargets('a=ftp://x')).toThrow(
      /'a=ftp:\/\/x': expected name=URL with a URL starting http:\/\//,
    );
    expect(() => parseTargets('=http://x')).toThrow(/expected name=URL/);
    expect(() => parseTargets('a b=http://x')).toThrow(/target name 'a b'/);
  });

  it('reads a targets file and names the target and setting at fault', () => {
    expect(parseTargetsFile('{"docs":{"kind":"a2a","baseUrl":"http://x"}}', 'f.json')).toEqual({
      docs: { kind: 'a2a', baseUrl: 'http://x' },
    });
    expect(() => parseTargetsFile('{', 'f.json')).toThrow(/^targets-file: f.json is not JSON/);
    expect(() => parseTargetsFile('[]', 'f.json')).toThrow(/must hold an object of targets by name/);
    expect(() => parseTargetsFile('{"docs":{"kind":"smtp"}}', 'f.json')).toThrow(
      /^targets.docs.kind: must be one of a2a/,
    );
    expect(() => parseTargetsFile('{"docs":7}', 'f.json')).toThrow(
      /^targets.docs: must be an object with a kind/,
    );
  });

  it('takes secrets from named environment variables and never prints their values', () => {
    const config = { kind: 'a2a', baseUrl: 'http://x', headers: { authorization: { env: 'DOCS_KEY' } } };
    expect(() => connectTarget('docs', config, deps())).toThrow(
      'targets.docs.headers.authorization: environment variable DOCS_KEY is not set',
    );
    expect(connectTarget('docs', config, deps({ DOCS_KEY: 'Bearer s3cret-value' })).kind).toBe('a2a');
    let message = '';
    try {
      connectTarget('docs', { ...config, timeoutMs: -5 }, deps({ DOCS_KEY: 'Bearer s3cret-value' }));
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe('targets.docs.timeoutMs: must be an integer >= 1');
    expect(() => connectTarget('docs', { ...config, headers: { a: { env: 'X', y: 1 } } }, deps())).toThrow(
      'targets.docs.headers.a: must be a string or {"env": "VARIABLE"}',
    );
  });

  it('refuses a setting the kind does not know, listing the ones it does', () => {
    expect(() =>
      connectTarget('docs', { kind: 'a2a', baseUrl: 'http://x', baseURL: 'http://y' }, deps()),
    ).toThrow(/^targets.docs.baseURL: unknown setting for kind a2a \(known: baseUrl, headers/);
    expect(() => connectTarget('docs', { kind: 'a2a', baseUrl: 'mailto:x' }, deps())).toThrow(
      'targets.docs.baseUrl: must be a http or https URL',
    );
  });

  it('takes card signature trust for an a2a target, refusing settings that cannot check anything', () => {
    const jwk = { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'k1' };
    const ok = { kind: 'a2a', baseUrl: 'http://x', cardSignatures: { keys: [jwk], required: true } };
    expect(connectTarget('docs', ok, deps()).kind).toBe('a2a');
    expect(() =>
      connectTarget('docs', { kind: 'a2a', baseUrl: 'http://x', cardSignatures: { required: true } }, deps()),
    ).toThrow(/^targets\.docs\.cardSignatures: needs keys or jwksUrl/);
    expect(() =>
      connectTarget('docs', { kind: 'a2a', baseUrl: 'http://x', cardSignatures: { keys: ['nope'] } }, deps()),
    ).toThrow(/^targets\.docs\.cardSignatures\.keys\[0\]: must be a public JWK or a PEM public key/);
    expect(() =>
      connectTarget(
        'docs',
        { kind: 'a2a', baseUrl: 'http://x', cardSignatures: { keys: [jwk], jwks: 'x' } },
        deps(),
      ),
    ).toThrow(/^targets\.docs\.cardSignatures\.jwks: unknown setting/);
  });

  it("takes a target's input schema, refusing one that is not an object or does not compile", () => {
    const inputSchema = { type: 'object', required: ['kind'] };
    const c = connectTarget('docs', { kind: 'a2a', baseUrl: 'http://x', inputSchema }, deps());
    expect(c.inputSchema).toEqual(inputSchema);
    expect(() =>
      connectTarget('docs', { kind: 'a2a', baseUrl: 'http://x', inputSchema: 'x' }, deps()),
    ).toThrow('targets.docs.inputSchema: must be a JSON Schema object');
    expect(() =>
      connectTarget('docs', { kind: 'a2a', baseUrl: 'http://x', inputSchema: { type: 'nonsense' } }, deps()),
    ).toThrow(/^targets.docs.inputSchema: schema is invalid/);
  });

  it('a plane started with a target config (URL from the environment) runs a task on it', async () => {
    const peer = await startSdkPeer({ autoFinishMs: 1 });
    const server = await startServer({
      port: 0,
      db: 'memory:',
      defaultMetrics: false,
      dashboard: false,
      lab: false,
      targets: { docs: { kind: 'a2a', baseUrl: { env: 'DOCS_URL' } } },
      env: { DOCS_URL: peer.base },
    });
    try {
      const { envelope } = await server.plane.create(
        { tenant: 'default', target: 'docs', input: 'hello' },
        { wait: 'started' },
      );
      expect(envelope.target).toBe('docs');
      expect(envelope.remoteId).not.toBeNull();
    } finally {
      await server.close();
      await peer.close();
    }
  });
});
