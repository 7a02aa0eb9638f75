import { describe, expect, it, onTestFinished } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/pg-store.ts';
import { listenerApplicationName } from '../../src/store/postgres/pg-listener.ts';
import type { ChangeNotice } from '../../src/store/store.ts';
import { silentLogger, type Logger } from '../../src/core/logger.ts';
import { disposeSchema, freshSchemaName, urlForSchema, withPgClient } from '../support/pg.ts';
import { event, makeEnvelope, nextChange } from './suite/fixtures.ts';

/** A logger that lets a test wait for a message: the listener's reconnect is an event, not a timeout. */
function waitingLogger(): Logger & { next(fragment: string): Promise<string> } {
  const waiters: { fragment: string; resolve: (msg: string) => void }[] = [];
  const log = (objOrMsg: object | string, text?: string) => {
    const msg = typeof objOrMsg === 'string' ? objOrMsg : `${text ?? ''} ${JSON.stringify(objOrMsg)}`;
    for (const w of waiters.filter((x) => msg.includes(x.fragment))) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(msg);
    }
  };
  return {
    ...silentLogger,
    info: log,
    warn: log,
    next: (fragment) => new Promise((resolve) => waiters.push({ fragment, resolve })),
  };
}

describe('postgres change listener', () => {
  it('postgres: reconnects after its connection is killed and keeps delivering notices', async () => {
    const schema = freshSchemaName('tp_listen');
    onTestFinished(({ task }) => disposeSchema(schema, task.result?.state === 'fail'));
    const url = urlForSchema(schema);
    const logger = waitingLogger();
    const listener = await PostgresStore.open({ url, logger });
    const writer = await PostgresStore.open({ url, listen: false });
    onTestFinished(() => Promise.all([listener.close(), writer.close()]).then(() => undefined));

    const lost = logger.next('lost its connection');
    const reconnected = logger.next('reconnected');
    const killed = await withPgClient((c) =>
      c.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [
        listenerApplicationName(`taskplane_${schema}`),
      ]),
    );
    expect(killed.rowCount).toBe(1);
    await lost;
    await reconnected;

    const env = makeEnvelope();
    const seen = nextChange<ChangeNotice>(
      (l) => listener.onChange(l),
      (c) => c.id === env.id,
    );
    await writer.createEnvelope(env, [event(env, 'created')]);
    expect((await seen).kind).toBe('envelope');
  });
});
