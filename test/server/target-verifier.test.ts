import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/server/start-server.ts';

/** A target's `verifier` setting in the targets file: the plane's, whatever the kind. */
let server: RunningServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('targets file: verifier', () => {
  it("goes to the plane's acceptance verifiers and never reaches the connector's settings check", async () => {
    server = await startServer({
      port: 0,
      db: 'memory:',
      targets: {
        pay: {
          kind: 'a2a',
          baseUrl: 'http://127.0.0.1:9/',
          verifier: { url: 'https://ledger.example/verify', maxAttempts: 3 },
        },
      },
      apiKeys: 'default:key-target-verifier-01',
      defaultMetrics: false,
      dashboard: false,
      lab: false,
      logger: pino({ level: 'silent' }),
    });
    expect(server.plane.config.acceptance.verifiers).toEqual({
      pay: { url: 'https://ledger.example/verify', maxAttempts: 3 },
    });
  });

  it('a verifier URL that is not http(s) stops the start naming the field', async () => {
    await expect(
      startServer({
        port: 0,
        db: 'memory:',
        targets: {
          pay: { kind: 'a2a', baseUrl: 'http://127.0.0.1:9/', verifier: { url: 'file:///etc/passwd' } },
        },
        defaultMetrics: false,
        dashboard: false,
        lab: false,
        logger: pino({ level: 'silent' }),
      }),
    ).rejects.toMatchObject({ code: 'config', field: 'acceptance.verifiers.pay.url' });
  });
});
