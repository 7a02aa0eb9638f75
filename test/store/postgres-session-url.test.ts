import net from 'node:net';
import { once } from 'node:events';
import { describe, expect, it, onTestFinished } from 'vitest';
import { TaskplaneError } from '../../src/core/errors.ts';
import { parsePgUrl } from '../../src/store/postgres/pg-connect.ts';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { event, makeEnvelope } from './suite/fixtures.ts';
import { disposeSchema, freshSchemaName, TEST_PG_URL, urlForSchema, withPgClient } from '../support/pg.ts';

/**
 * Behind a transaction-mode pooler, the store's one session connection (LISTEN, the liveness lock)
 * goes straight to PostgreSQL (`?sessionHost=`/`?sessionPort=`) while the pool goes through the pooler;
 * `?poolMax=` sizes the pool from the URL.
 */

/** A TCP relay standing in for a pooler: counts the connections that go through it. */
async function relay(to: URL): Promise<{ port: number; connections: () => number }> {
  let n = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    n++;
    const upstream = net.connect(Number(to.port || 5432), to.hostname);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const close = () => (client.destroy(), upstream.destroy());
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  onTestFinished(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });
  return { port: (server.address() as net.AddressInfo).port, connections: () => n };
}

describe('postgres store URL: session connection and pool size', () => {
  it('parses sessionHost, sessionPort and poolMax, and refuses bad ones naming the field', () => {
    const t = parsePgUrl(
      'postgres://u:secret@pooler:6432/db?schema=tp&sessionHost=pg&sessionPort=5432&poolMax=4',
    );
    expect(t.connectionString).toBe('postgres://u:secret@pooler:6432/db');
    expect(t.sessionConnectionString).toBe('postgres://u:secret@pg:5432/db');
    expect(t.poolMax).toBe(4);
    expect(parsePgUrl('postgres://u@h/db').sessionConnectionString).toBe('postgres://u@h/db');
    for (const bad of ['poolMax=0', 'poolMax=x', 'sessionPort=abc']) {
      const err = (() => {
        try {
          parsePgUrl(`postgres://u@h/db?${bad}`);
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(TaskplaneError);
      expect((err as TaskplaneError).message).toMatch(bad.split('=')[0]!);
    }
  });

  it('server settings in ?options= apply to every connection beside the schema', async () => {
    const schema = freshSchemaName('tp_options');
    const url = new URL(urlForSchema(schema, 'postgres://postgres@127.0.0.1:5432/test'));
    url.searchParams.set('options', '-c statement_timeout=4321 -c application_name=tp_options_test');
    expect(parsePgUrl(url.toString()).options).toBe(
      '-c statement_timeout=4321 -c application_name=tp_options_test',
    );
    const store = await PostgresStore.open({ url: url.toString(), poolMax: 1 });
    onTestFinished(async () => {
      await store.close();
      await disposeSchema(schema, false);
    });
    // Written into the schema, not the server's default one: the search_path came through too.
    await store.createEnvelope(makeEnvelope({ id: 'env_options' }), []);
    // And the server took the settings: its connections carry the application_name we gave.
    const seen = await withPgClient(async (pg) => ({
      rows: (await pg.query(`SELECT 1 FROM ${schema}.envelopes WHERE id = 'env_options'`)).rowCount,
      sessions: (await pg.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'tp_options_test'`))
        .rowCount,
    }));
    expect(seen.rows).toBe(1);
    expect(seen.sessions).toBeGreaterThan(0);
  });

  it('the pool goes through the pooler and the LISTEN session around it', async () => {
    const direct = new URL(TEST_PG_URL);
    const pooler = await relay(direct);
    const schema = freshSchemaName('tp_session');
    const through = new URL(urlForSchema(schema));
    through.port = String(pooler.port);
    through.hostname = '127.0.0.1';
    through.searchParams.set('poolMax', '1');
    through.searchParams.set('sessionHost', direct.hostname);
    through.searchParams.set('sessionPort', direct.port || '5432');
    const a = await PostgresStore.open({ url: through.toString() });
    const b = await PostgresStore.open({ url: urlForSchema(schema) });
    onTestFinished(async () => {
      await a.close();
      await b.close();
      await disposeSchema(schema, false);
    });
    // One pooled connection through the relay; the session connection did not use it.
    expect(pooler.connections()).toBe(1);
    // And it works: another process's change reaches this store's change feed.
    const heard = new Promise<void>((resolve) => a.onChange(() => resolve()));
    const env = makeEnvelope();
    await b.createEnvelope(env, [event(env, 'created')]);
    await heard;
  }, 30_000);
});
