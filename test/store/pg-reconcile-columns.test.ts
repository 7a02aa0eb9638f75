import { describe, expect, it, onTestFinished } from 'vitest';
import { migratePostgres } from '../../src/store/postgres/pg-migrate.ts';
import { PG_MIGRATIONS } from '../../src/store/postgres/pg-schema.ts';
import { disposeSchema, freshSchemaName, withPgSchemaAt } from '../support/pg.ts';

/**
 * PostgreSQL migration 14 moves the expressions of migration 12's reconcile_due_at and
 * default_duration_from into functions, dropping and adding the columns again. Every row's values, and
 * the two indexes on them, must come out as migration 12's expressions made them: each branch of the
 * rule (store-query.ts reconcileDueAt) has a document below.
 */
const CREATED = 1_000;
const DOCS: Array<[string, string, string | null, Record<string, unknown>]> = [
  ['unstarted', 'running', null, {}],
  ['unstarted-accepted-timeout', 'accepted', null, { timeoutMs: 50 }],
  ['timeout', 'running', 'r1', { timeoutMs: 500 }],
  ['expected', 'running', 'r2', { expectedDurationMs: 300 }],
  ['timeout-and-expected', 'unknown', 'r3', { timeoutMs: 200, expectedDurationMs: 300 }],
  ['cancel-unacknowledged', 'cancel_requested', 'r4', { timeoutMs: 9, cancel: { requestedAt: 1 } }],
  ['cancel-acknowledged', 'cancel_requested', 'r5', { cancel: { requestedAt: 1, acknowledgedAt: 2 } }],
  ['cancel-not-object', 'cancel_requested', 'r6', { cancel: 'yes', expectedDurationMs: 40 }],
  ['answered', 'waiting_for_input', 'r7', { pendingInput: { answeredAt: 5 } }],
  ['unanswered', 'waiting_for_input', 'r8', { pendingInput: { answeredAt: null }, timeoutMs: 70 }],
  ['request-answered', 'waiting_for_input', 'r9', { pendingInput: { requests: [{}, { answeredAt: 7 }] } }],
  ['request-unanswered', 'waiting_for_input', 'r10', { pendingInput: { requests: [{ answeredAt: null }] } }],
  ['answered-but-running', 'running', 'r11', { pendingInput: { answeredAt: 5 }, expectedDurationMs: 60 }],
  ['finished', 'succeeded', 'r12', { timeoutMs: 1, pendingInput: { answeredAt: 5 } }],
  ['failed-unstarted', 'failed', null, {}],
];

const COLUMNS = `SELECT id, reconcile_due_at, default_duration_from FROM envelopes ORDER BY id`;
const INDEXES = `SELECT indexname, replace(indexdef, $1, 's') AS def FROM pg_indexes
  WHERE schemaname = $1 AND tablename = 'envelopes' ORDER BY indexname`;

describe('postgres migration 14', () => {
  it('keeps every envelope’s reconciliation columns and their indexes as migration 12 made them', async () => {
    const schema = freshSchemaName('tp_reconcile_cols');
    onTestFinished(({ task }) => disposeSchema(schema, task.result?.state === 'fail'));
    await withPgSchemaAt(
      schema,
      (id) => id <= 13,
      async (c) => {
        for (const [id, state, remoteId, fields] of DOCS) {
          await c.query(
            `INSERT INTO envelopes (id, tenant, connector, target, remote_id, state, updated_at, version, doc)
             VALUES ($1, 't', 'a2a', 'agent', $2, $3, 1, 1, $4)`,
            [id, remoteId, state, JSON.stringify({ id, createdAt: CREATED, ...fields })],
          );
        }
        const before = (await c.query(COLUMNS)).rows;
        const indexesBefore = (await c.query(INDEXES, [schema])).rows;
        // Spot checks that the documents reach the branches they are named for.
        expect(before.find((r) => r.id === 'timeout-and-expected')).toMatchObject({
          reconcile_due_at: CREATED + 200,
          default_duration_from: null,
        });
        expect(before.find((r) => r.id === 'answered')).toMatchObject({
          reconcile_due_at: CREATED,
          default_duration_from: CREATED,
        });
        expect(before.filter((r) => r.reconcile_due_at === null).map((r) => r.id)).toEqual([
          'cancel-acknowledged',
          'failed-unstarted',
          'finished',
          'request-unanswered',
        ]);

        await migratePostgres(c, schema, PG_MIGRATIONS, 0);
        expect((await c.query(COLUMNS)).rows).toEqual(before);
        expect((await c.query(INDEXES, [schema])).rows).toEqual(indexesBefore);

        // A write after it computes the columns through the functions: the same values again.
        await c.query(`UPDATE envelopes SET updated_at = 2, doc = doc || '{"version": 2}'`);
        expect((await c.query(COLUMNS)).rows).toEqual(before);
      },
    );
  });
});
