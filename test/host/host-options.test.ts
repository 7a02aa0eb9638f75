import { describe, expect, it } from 'vitest';
import { TaskplaneError } from '../../src/core/errors.ts';
import { hostConfig, type HostOptions } from '../../src/host/host-options.ts';
import { startHost } from '../../src/host/start-host.ts';

/** Each bad host option is refused up front as a `config` error that names the field it is about. */
function refusal(options: HostOptions): TaskplaneError {
  try {
    hostConfig(options);
  } catch (err) {
    expect(err).toBeInstanceOf(TaskplaneError);
    return err as TaskplaneError;
  }
  throw new Error(`accepted ${JSON.stringify(options)}`);
}

const BAD: Array<[field: keyof HostOptions, value: unknown]> = [
  ['port', -1],
  ['port', 70000],
  ['port', 80.5],
  ['port', '4100'],
  ['bind', ''],
  ['db', ''],
  ['agent', ''],
  ['agent', { card: {} }],
  ['auth', 'basic'],
  ['allowPrivateWebhooks', 'yes'],
  ['pushBaseMs', 0],
  ['pushAttempts', 0],
  ['pushAttempts', 2.5],
  ['pushTimeoutMs', Number.NaN],
  ['pushSigningSecret', 'whsec_short'],
  ['inputTimeoutMs', -5],
  ['publicUrl', 'agent.example.com'],
  ['grpcPort', -1],
  ['grpcPort', 70000],
  ['grpcPort', '50051'],
  ['grpcPublicUrl', 'https://a2a.example.com'],
  ['grpcPublicUrl', 'a2a.example.com'],
  ['keepAliveMs', 0],
  ['maxBodyBytes', -1],
  ['maxBodyBytes', 1.5],
  ['maxJsonDepth', 0],
  ['hostId', ''],
  ['hostLeaseMs', Number.POSITIVE_INFINITY],
  ['shutdownGraceMs', 0],
  ['agent', { card: { name: 'a' }, tools: [] }],
  ['mcpTaskTtlMs', 0],
  ['mcpTaskTtlMs', 1.5],
  ['mcpPollIntervalMs', -1],
];

describe('host options', () => {
  it('gives every default when nothing is set', () => {
    expect(hostConfig()).toEqual({
      port: 4100,
      bind: '127.0.0.1',
      db: 'sqlite:./data/host.db',
      agent: undefined,
      auth: 'none',
      keys: undefined,
      allowPrivateWebhooks: false,
      pushBaseMs: 5000,
      pushAttempts: 8,
      pushTimeoutMs: 15_000,
      pushSigningSecret: undefined,
      inputTimeoutMs: 900_000,
      publicUrl: undefined,
      grpcPort: undefined,
      grpcPublicUrl: undefined,
      keepAliveMs: 15_000,
      maxBodyBytes: 1024 * 1024,
      maxJsonDepth: 64,
      hostId: undefined,
      hostLeaseMs: 30_000,
      shutdownGraceMs: 10_000,
      mcpTaskTtlMs: 86_400_000,
      mcpPollIntervalMs: 1000,
      taskRetentionMs: 30 * 86_400_000,
      purgeIntervalMs: 60_000,
      purgeBatchSize: 100,
    });
  });

  it.each(BAD)('refuses %s = %j, naming the field', (field, value) => {
    const err = refusal({ [field]: value } as HostOptions);
    expect(err.code).toBe('config');
    expect(err.field).toBe(field);
    expect(err.message.startsWith(`${field}: `)).toBe(true);
  });

  it("asks for keys when auth is 'keys'", () => {
    for (const keys of [undefined, new Map<string, string>()]) {
      const err = refusal({ auth: 'keys', ...(keys ? { keys } : {}) });
      expect(err.field).toBe('keys');
    }
    expect(hostConfig({ auth: 'keys', keys: new Map([['digest', 'alice']]) }).keys?.size).toBe(1);
  });

  it('keeps the public URL without its trailing slash', () => {
    expect(hostConfig({ publicUrl: 'https://agent.example.com/' }).publicUrl).toBe(
      'https://agent.example.com',
    );
  });

  it('startHost refuses a bad option before it opens a store or a port', async () => {
    const err = await startHost({ db: 'memory:', port: 0, maxJsonDepth: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskplaneError);
    expect((err as TaskplaneError).field).toBe('maxJsonDepth');
  });
});
