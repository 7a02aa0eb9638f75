import type { Migration } from '../migration.ts';

/**
 * PostgreSQL migrations: numbered, forward-only, bundled in the code; append, never edit. Unqualified
 * names land in the store's schema through search_path. Times are BIGINT epoch ms from the caller.
 */
export const PG_MIGRATIONS: readonly Migration[] = [
  {
    id: 1,
    name: 'initial schema',
    sql: `
      CREATE TABLE envelopes (
        id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        idempotency_key TEXT,
        connector TEXT NOT NULL,
        target TEXT NOT NULL,
        remote_id TEXT,
        state TEXT NOT NULL,
        updated_at BIGINT NOT NULL,
        version INTEGER NOT NULL,
        doc JSONB NOT NULL
      );
      CREATE UNIQUE INDEX envelopes_idempotency ON envelopes (tenant, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
      CREATE INDEX envelopes_remote ON envelopes (target, remote_id) WHERE remote_id IS NOT NULL;
      CREATE INDEX envelopes_updated ON envelopes (updated_at, id);
      CREATE INDEX envelopes_tenant_updated ON envelopes (tenant, updated_at, id);
      CREATE INDEX envelopes_tenant_state ON envelopes (tenant, state);

      CREATE TABLE envelope_events (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        envelope_id TEXT NOT NULL,
        tenant TEXT NOT NULL,
        type TEXT NOT NULL,
        at BIGINT NOT NULL,
        data JSONB NOT NULL
      );
      CREATE INDEX envelope_events_envelope ON envelope_events (envelope_id, seq);
      CREATE INDEX envelope_events_tenant ON envelope_events (tenant, seq);

      CREATE TABLE deliveries (
        source TEXT NOT NULL,
        delivery_id TEXT NOT NULL,
        envelope_id TEXT,
        received_at BIGINT NOT NULL,
        PRIMARY KEY (source, delivery_id)
      );

      CREATE TABLE leases (name TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at BIGINT NOT NULL);
      CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);

      CREATE TABLE agent_tasks (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        context_id TEXT NOT NULL,
        state TEXT NOT NULL,
        status_timestamp BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        version INTEGER NOT NULL,
        task JSONB NOT NULL,
        executor_state JSONB
      );
      CREATE INDEX agent_tasks_owner ON agent_tasks (owner, status_timestamp, id);
      CREATE INDEX agent_tasks_state ON agent_tasks (state);

      CREATE TABLE agent_task_messages (
        owner TEXT NOT NULL,
        message_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        PRIMARY KEY (owner, message_id)
      );

      CREATE TABLE agent_task_events (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        task_id TEXT NOT NULL,
        at BIGINT NOT NULL,
        payload JSONB NOT NULL
      );
      CREATE INDEX agent_task_events_task ON agent_task_events (task_id, seq);

      CREATE TABLE push_configs (
        task_id TEXT NOT NULL,
        id TEXT NOT NULL,
        owner TEXT NOT NULL,
        url TEXT NOT NULL,
        token TEXT,
        authentication JSONB,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (task_id, id)
      );

      CREATE TABLE outbox (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        task_id TEXT NOT NULL,
        config_id TEXT NOT NULL,
        delivery_id TEXT NOT NULL,
        payload JSONB NOT NULL,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        next_attempt_at BIGINT NOT NULL,
        lease_owner TEXT,
        lease_expires_at BIGINT,
        last_error TEXT,
        created_at BIGINT NOT NULL,
        delivered_at BIGINT
      );
      CREATE INDEX outbox_open ON outbox (task_id, config_id, id) WHERE status IN ('pending', 'leased');
      CREATE INDEX outbox_status ON outbox (status, id);
      CREATE INDEX outbox_task ON outbox (task_id, id);
    `,
  },
  {
    id: 2,
    name: 'api keys',
    // Only the SHA-256 of a secret is stored; the unique hash is what a request is looked up by.
    sql: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        read_only BOOLEAN NOT NULL,
        name TEXT,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT
      );
    `,
  },
  {
    id: 3,
    name: 'host scopes as separate owner and tenant columns',
    // As SQLite migration 4: `owner@tenant` strings are split at the first `@` when something follows it,
    // one-to-one, so no row is lost and no two message ids collide.
    sql: `
      ALTER TABLE agent_tasks ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
      UPDATE agent_tasks SET owner = split_part(owner, '@', 1), tenant = substr(owner, strpos(owner, '@') + 1)
        WHERE strpos(owner, '@') BETWEEN 1 AND length(owner) - 1;
      DROP INDEX agent_tasks_owner;
      CREATE INDEX agent_tasks_scope ON agent_tasks (owner, tenant, status_timestamp, id);

      ALTER TABLE agent_task_messages ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
      ALTER TABLE agent_task_messages DROP CONSTRAINT agent_task_messages_pkey;
      UPDATE agent_task_messages SET owner = split_part(owner, '@', 1),
          tenant = substr(owner, strpos(owner, '@') + 1)
        WHERE strpos(owner, '@') BETWEEN 1 AND length(owner) - 1;
      ALTER TABLE agent_task_messages ADD PRIMARY KEY (owner, tenant, message_id);

      ALTER TABLE push_configs ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
      UPDATE push_configs SET owner = split_part(owner, '@', 1), tenant = substr(owner, strpos(owner, '@') + 1)
        WHERE strpos(owner, '@') BETWEEN 1 AND length(owner) - 1;
    `,
  },
  {
    id: 4,
    name: 'no agent_tasks state index',
    // As SQLite migration 2: every state change of a host task updated this index for a query that never
    // used it (the active-task scan is `state NOT IN (…)`, and ListTasks filters within agent_tasks_scope).
    sql: `DROP INDEX agent_tasks_state;`,
  },
  {
    id: 5,
    name: 'agent direct replies',
    // As SQLite migration 5: the Message an agent answered a send with instead of a task.
    sql: `
      CREATE TABLE agent_direct_replies (
        owner TEXT NOT NULL,
        tenant TEXT NOT NULL,
        message_id TEXT NOT NULL,
        reply JSONB NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (owner, tenant, message_id)
      );
    `,
  },
  {
    id: 6,
    name: 'lease owners; agent task counts',
    // lease_owners: a lease owner (a plane or host process) bound to a process. The process holds a session
    // advisory lock on (hashtext of the schema's owner namespace, lock_key) on its LISTEN connection for
    // as long as it lives. When PostgreSQL ends that session (the process died), the lock is free, and
    // acquireLease takes the owner's leases at once rather than after they expire. Owners without a row
    // (older versions, and hosts before they bound theirs) keep the plain expiry rule.
    // agent_task_counts: as SQLite migration 6, tasks per scope and state kept by a trigger in the writing
    // transaction (ListTasks' totalSize without a COUNT(*)). Each change goes to one of 16 slots at random
    // and a count sums the slots: concurrent writers in one scope rarely wait on the same row lock.
    // Both are expand steps: the previous version runs beside them unchanged (its writes fire the trigger).
    sql: `
      CREATE TABLE lease_owners (
        owner TEXT PRIMARY KEY,
        lock_key SERIAL NOT NULL,
        bound_at BIGINT NOT NULL
      );

      CREATE TABLE agent_task_counts (
        owner TEXT NOT NULL,
        tenant TEXT NOT NULL,
        state TEXT NOT NULL,
        slot INTEGER NOT NULL,
        n BIGINT NOT NULL,
        PRIMARY KEY (owner, tenant, state, slot)
      );
      INSERT INTO agent_task_counts (owner, tenant, state, slot, n)
        SELECT owner, tenant, state, 0, COUNT(*) FROM agent_tasks GROUP BY owner, tenant, state;
      CREATE FUNCTION agent_task_counts_apply() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      DECLARE
        s INTEGER := floor(random() * 16)::integer;
      BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
          INSERT INTO agent_task_counts AS c (owner, tenant, state, slot, n)
            VALUES (OLD.owner, OLD.tenant, OLD.state, s, -1)
            ON CONFLICT (owner, tenant, state, slot) DO UPDATE SET n = c.n - 1;
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
          INSERT INTO agent_task_counts AS c (owner, tenant, state, slot, n)
            VALUES (NEW.owner, NEW.tenant, NEW.state, s, 1)
            ON CONFLICT (owner, tenant, state, slot) DO UPDATE SET n = c.n + 1;
        END IF;
        RETURN NULL;
      END
      $$;
      CREATE TRIGGER agent_task_counts_insert AFTER INSERT OR DELETE ON agent_tasks
        FOR EACH ROW EXECUTE FUNCTION agent_task_counts_apply();
      CREATE TRIGGER agent_task_counts_update AFTER UPDATE OF owner, tenant, state ON agent_tasks
        FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.owner IS DISTINCT FROM NEW.owner
          OR OLD.tenant IS DISTINCT FROM NEW.tenant)
        EXECUTE FUNCTION agent_task_counts_apply();
    `,
  },
  {
    id: 7,
    name: 'agent task acknowledgements',
    // As SQLite migration 7: tasks their owner has addressed by id.
    sql: `CREATE TABLE agent_task_acks (task_id TEXT PRIMARY KEY);`,
  },
  {
    id: 8,
    name: 'agent tasks by context; open envelopes; leases by owner',
    // agent_tasks_context: ListTasks by contextId (a conversation) reads the context's own rows in status
    // order instead of walking the whole scope. envelopes_open: the open jobs alone, in the order every
    // listing of open jobs pages them (store-query.ts OPEN_ENVELOPES_SQL): lease, adoption and
    // reconciliation passes cost the open jobs, not the finished ones stored beside them. leases_owner:
    // whether a dead plane still holds leases (deadLeaseOwners) without reading every lease. All are
    // expand steps: older versions ignore them.
    sql: `
      CREATE INDEX agent_tasks_context ON agent_tasks (owner, tenant, context_id, status_timestamp, id);
      CREATE INDEX envelopes_open ON envelopes (updated_at, id)
        WHERE state IN ('accepted', 'running', 'waiting_for_input', 'cancel_requested', 'unknown');
      CREATE INDEX leases_owner ON leases (owner);
    `,
  },
  {
    id: 9,
    name: 'retention: envelope retention deadline; purge indexes',
    // As SQLite migration 9. ADD COLUMN without a default changes only the catalog (no table rewrite).
    // The indexes are built plainly, not CONCURRENTLY (a migration runs in a transaction): on a large
    // table that holds writes on it while it builds, so plan this step for a quiet moment.
    sql: `
      ALTER TABLE envelopes ADD COLUMN retention_until BIGINT;
      CREATE INDEX envelopes_retention ON envelopes (retention_until) WHERE retention_until IS NOT NULL;
      CREATE INDEX deliveries_envelope ON deliveries (envelope_id) WHERE envelope_id IS NOT NULL;
      CREATE INDEX agent_tasks_finished ON agent_tasks (updated_at)
        WHERE state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_CANCELED', 'TASK_STATE_FAILED', 'TASK_STATE_REJECTED');
      CREATE INDEX agent_task_messages_task ON agent_task_messages (task_id);
      CREATE INDEX agent_direct_replies_created ON agent_direct_replies (created_at);
    `,
  },
  {
    id: 10,
    name: 'workflows: workflow index, budgets, due verifications',
    // As SQLite migration 10. STORED (PostgreSQL has no virtual generated columns before 18): adding them
    // rewrites the table once.
    sql: `
      ALTER TABLE envelopes ADD COLUMN workflow_id TEXT
        GENERATED ALWAYS AS (doc->>'workflowId') STORED;
      ALTER TABLE envelopes ADD COLUMN verify_due_at BIGINT
        GENERATED ALWAYS AS ((doc->'acceptance'->'verification'->>'dueAt')::bigint) STORED;
      CREATE INDEX envelopes_workflow ON envelopes (tenant, workflow_id, updated_at, id)
        WHERE workflow_id IS NOT NULL;
      CREATE INDEX envelopes_verify_due ON envelopes (verify_due_at) WHERE verify_due_at IS NOT NULL;

      CREATE TABLE workflow_budgets (
        tenant TEXT NOT NULL,
        workflow_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        updated_at BIGINT NOT NULL,
        doc JSONB NOT NULL,
        PRIMARY KEY (tenant, workflow_id)
      );
    `,
  },
  {
    id: 11,
    name: 'push config protocol version',
    // As SQLite migration 11: the A2A version a push config was registered over.
    sql: `ALTER TABLE push_configs ADD COLUMN protocol_version TEXT NOT NULL DEFAULT '1.0';`,
  },
  {
    id: 12,
    name: 'reconciliation: open jobs by target, reconciliation deadlines',
    // As SQLite migration 12. STORED, and each column computed from the document (PostgreSQL generated
    // columns cannot read each other); one ALTER TABLE, so the table is rewritten once. Double precision,
    // not bigint: a number in the document can never make the write fail on a cast, and pg returns it
    // as a JS number. LEAST ignores NULLs. As migration 9's, the indexes are built plainly (in the
    // migration's transaction), holding writes on the table while they build.
    sql: `
      ALTER TABLE envelopes
        ADD COLUMN created_at DOUBLE PRECISION GENERATED ALWAYS AS ((doc->>'createdAt')::float8) STORED,
        ADD COLUMN reconcile_due_at DOUBLE PRECISION GENERATED ALWAYS AS (
          CASE WHEN state IN ('accepted', 'running', 'waiting_for_input', 'cancel_requested', 'unknown') THEN LEAST(
            CASE WHEN remote_id IS NULL THEN (doc->>'createdAt')::float8 END,
            CASE WHEN state <> 'cancel_requested' THEN (doc->>'createdAt')::float8 + (doc->>'timeoutMs')::float8 END,
            CASE WHEN state = 'cancel_requested' AND remote_id IS NOT NULL AND jsonb_typeof(doc->'cancel') = 'object'
              AND doc->'cancel'->>'acknowledgedAt' IS NULL THEN (doc->>'createdAt')::float8 END,
            CASE WHEN state = 'waiting_for_input'
              AND (jsonb_path_exists(doc, '$.pendingInput ? (@.answeredAt != null)')
                OR jsonb_path_exists(doc, '$.pendingInput.requests[*] ? (@.answeredAt != null)'))
              THEN (doc->>'createdAt')::float8 END,
            CASE WHEN remote_id IS NOT NULL THEN (doc->>'createdAt')::float8 + (doc->>'expectedDurationMs')::float8 END
          ) END) STORED,
        ADD COLUMN default_duration_from DOUBLE PRECISION GENERATED ALWAYS AS (
          CASE WHEN state IN ('accepted', 'running', 'waiting_for_input', 'cancel_requested', 'unknown') AND remote_id IS NOT NULL AND doc->>'expectedDurationMs' IS NULL
            THEN (doc->>'createdAt')::float8 END) STORED;
      CREATE INDEX envelopes_open_target ON envelopes (target, tenant, created_at)
        WHERE state IN ('accepted', 'running', 'waiting_for_input', 'cancel_requested', 'unknown');
      CREATE INDEX envelopes_unstarted ON envelopes (target)
        WHERE remote_id IS NULL AND state IN ('accepted', 'running', 'waiting_for_input', 'cancel_requested', 'unknown');
      CREATE INDEX envelopes_reconcile_due ON envelopes (target, reconcile_due_at)
        WHERE reconcile_due_at IS NOT NULL;
      CREATE INDEX envelopes_default_duration ON envelopes (target, default_duration_from)
        WHERE default_duration_from IS NOT NULL;
    `,
  },
  {
    id: 13,
    name: 'envelope counts by tenant and state',
    // As SQLite migration 13: envelopes per tenant and state kept by a trigger in the writing transaction,
    // spread over 16 slots as agent_task_counts (migration 6) so concurrent writers of one tenant rarely
    // wait on one row lock. The triggers are made before the backfill: CREATE TRIGGER locks envelopes
    // against writes until this transaction commits, so no row written by another process (of either
    // version) falls between the backfill's snapshot and the first trigger. Expand-only.
    sql: `
      CREATE TABLE envelope_counts (
        tenant TEXT NOT NULL,
        state TEXT NOT NULL,
        slot INTEGER NOT NULL,
        n BIGINT NOT NULL,
        PRIMARY KEY (tenant, state, slot)
      );
      CREATE FUNCTION envelope_counts_apply() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
      DECLARE
        s INTEGER := floor(random() * 16)::integer;
      BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
          INSERT INTO envelope_counts AS c (tenant, state, slot, n) VALUES (OLD.tenant, OLD.state, s, -1)
            ON CONFLICT (tenant, state, slot) DO UPDATE SET n = c.n - 1;
        END IF;
        IF TG_OP IN ('UPDATE', 'INSERT') THEN
          INSERT INTO envelope_counts AS c (tenant, state, slot, n) VALUES (NEW.tenant, NEW.state, s, 1)
            ON CONFLICT (tenant, state, slot) DO UPDATE SET n = c.n + 1;
        END IF;
        RETURN NULL;
      END
      $$;
      CREATE TRIGGER envelope_counts_insert AFTER INSERT OR DELETE ON envelopes
        FOR EACH ROW EXECUTE FUNCTION envelope_counts_apply();
      CREATE TRIGGER envelope_counts_update AFTER UPDATE OF tenant, state ON envelopes
        FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state OR OLD.tenant IS DISTINCT FROM NEW.tenant)
        EXECUTE FUNCTION envelope_counts_apply();
      INSERT INTO envelope_counts (tenant, state, slot, n)
        SELECT tenant, state, 0, COUNT(*) FROM envelopes GROUP BY tenant, state;
    `,
  },
  {
    id: 14,
    name: 'cheaper envelope writes: reconciliation columns through functions, count trigger without SET',
    // Two per-statement costs of every envelope write (docs/deploy.md, "How cost grows"):
    // - PostgreSQL reads a generated column's expression from the catalog (its stored node tree), plans and
    //   compiles it at the start of every INSERT and UPDATE statement, however few rows it writes;
    //   migration 12's reconcile_due_at and default_duration_from trees were most of that work. The same
    //   expressions now sit in two IMMUTABLE PL/pgSQL functions (compiled once per connection; an SQL
    //   function would be inlined, its body parsed again on every statement), and the columns are a call
    //   of three columns. PostgreSQL 15 cannot change a generated expression in place, so the columns are
    //   dropped and added again under the same names in one ALTER TABLE: one table rewrite and their two
    //   partial indexes rebuilt, holding writes on envelopes meanwhile (plan it for a quiet moment on a
    //   large table, as migration 12).
    // - envelope_counts_apply (migration 13) ran under SET search_path, which saves and restores the
    //   setting around every call (and the catalog lookups a changed search_path brings): most of the
    //   trigger's cost on a state change. It now names its table with the store's schema, resolved once
    //   here, and runs in the caller's path; otherwise the same body.
    // Expand-only: column values, names and indexes, and the counts, stay as they were, so the previous
    // version's reads and writes run unchanged beside it (test/store/pg-reconcile-columns.test.ts compares
    // each branch of the rule before and after; store-query.ts reconcileDueAt is the rule in TypeScript).
    sql: `
      CREATE FUNCTION envelope_reconcile_due_at(state TEXT, remote_id TEXT, doc JSONB) RETURNS DOUBLE PRECISION
      LANGUAGE plpgsql IMMUTABLE AS $$
      BEGIN
        RETURN CASE WHEN state IN ('accepted', 'running', 'waiting_for_input', 'cancel_requested', 'unknown') THEN LEAST(
          CASE WHEN remote_id IS NULL THEN (doc->>'createdAt')::float8 END,
          CASE WHEN state <> 'cancel_requested' THEN (doc->>'createdAt')::float8 + (doc->>'timeoutMs')::float8 END,
          CASE WHEN state = 'cancel_requested' AND remote_id IS NOT NULL AND jsonb_typeof(doc->'cancel') = 'object'
            AND doc->'cancel'->>'acknowledgedAt' IS NULL THEN (doc->>'createdAt')::float8 END,
          CASE WHEN state = 'waiting_for_input'
            AND (jsonb_path_exists(doc, '$.pendingInput ? (@.answeredAt != null)')
              OR jsonb_path_exists(doc, '$.pendingInput.requests[*] ? (@.answeredAt != null)'))
            THEN (doc->>'createdAt')::float8 END,
          CASE WHEN remote_id IS NOT NULL THEN (doc->>'createdAt')::float8 + (doc->>'expectedDurationMs')::float8 END
        ) END;
      END
      $$;
      CREATE FUNCTION envelope_default_duration_from(state TEXT, remote_id TEXT, doc JSONB)
      RETURNS DOUBLE PRECISION LANGUAGE plpgsql IMMUTABLE AS $$
      BEGIN
        RETURN CASE WHEN state IN ('accepted', 'running', 'waiting_for_input', 'cancel_requested', 'unknown') AND remote_id IS NOT NULL AND doc->>'expectedDurationMs' IS NULL
          THEN (doc->>'createdAt')::float8 END;
      END
      $$;
      ALTER TABLE envelopes
        DROP COLUMN reconcile_due_at,
        DROP COLUMN default_duration_from,
        ADD COLUMN reconcile_due_at DOUBLE PRECISION
          GENERATED ALWAYS AS (envelope_reconcile_due_at(state, remote_id, doc)) STORED,
        ADD COLUMN default_duration_from DOUBLE PRECISION
          GENERATED ALWAYS AS (envelope_default_duration_from(state, remote_id, doc)) STORED;
      CREATE INDEX envelopes_reconcile_due ON envelopes (target, reconcile_due_at)
        WHERE reconcile_due_at IS NOT NULL;
      CREATE INDEX envelopes_default_duration ON envelopes (target, default_duration_from)
        WHERE default_duration_from IS NOT NULL;
      DO $do$ BEGIN EXECUTE format($fn$
        CREATE OR REPLACE FUNCTION envelope_counts_apply() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
          s INTEGER := floor(random() * 16)::integer;
        BEGIN
          IF TG_OP IN ('UPDATE', 'DELETE') THEN
            INSERT INTO %1$I.envelope_counts AS c (tenant, state, slot, n) VALUES (OLD.tenant, OLD.state, s, -1)
              ON CONFLICT (tenant, state, slot) DO UPDATE SET n = c.n - 1;
          END IF;
          IF TG_OP IN ('UPDATE', 'INSERT') THEN
            INSERT INTO %1$I.envelope_counts AS c (tenant, state, slot, n) VALUES (NEW.tenant, NEW.state, s, 1)
              ON CONFLICT (tenant, state, slot) DO UPDATE SET n = c.n + 1;
          END IF;
          RETURN NULL;
        END
        $$;
      $fn$, current_schema()); END $do$;
    `,
  },
];
