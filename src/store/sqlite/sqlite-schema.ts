import type { Migration } from '../migration.ts';

/**
 * SQLite migrations: numbered, forward-only, bundled in the code. Never edit a released entry; append a
 * new one. Documents are JSON text; the columns beside them exist only to be indexed and queried.
 * Times are INTEGER epoch ms passed in by the caller (never SQL now()).
 */

export const SQLITE_MIGRATIONS: readonly Migration[] = [
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
        updated_at INTEGER NOT NULL,
        version INTEGER NOT NULL,
        doc TEXT NOT NULL
      );
      CREATE UNIQUE INDEX envelopes_idempotency ON envelopes (tenant, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
      CREATE INDEX envelopes_remote ON envelopes (target, remote_id) WHERE remote_id IS NOT NULL;
      CREATE INDEX envelopes_updated ON envelopes (updated_at, id);
      CREATE INDEX envelopes_tenant_updated ON envelopes (tenant, updated_at, id);
      CREATE INDEX envelopes_tenant_state ON envelopes (tenant, state);

      CREATE TABLE envelope_events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        envelope_id TEXT NOT NULL,
        tenant TEXT NOT NULL,
        type TEXT NOT NULL,
        at INTEGER NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX envelope_events_envelope ON envelope_events (envelope_id, seq);
      CREATE INDEX envelope_events_tenant ON envelope_events (tenant, seq);

      CREATE TABLE deliveries (
        source TEXT NOT NULL,
        delivery_id TEXT NOT NULL,
        envelope_id TEXT,
        received_at INTEGER NOT NULL,
        PRIMARY KEY (source, delivery_id)
      );

      CREATE TABLE leases (name TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at INTEGER NOT NULL);
      CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);

      CREATE TABLE agent_tasks (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        context_id TEXT NOT NULL,
        state TEXT NOT NULL,
        status_timestamp INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        version INTEGER NOT NULL,
        task TEXT NOT NULL,
        executor_state TEXT
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
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL,
        at INTEGER NOT NULL,
        payload TEXT NOT NULL
      );
      CREATE INDEX agent_task_events_task ON agent_task_events (task_id, seq);

      CREATE TABLE push_configs (
        task_id TEXT NOT NULL,
        id TEXT NOT NULL,
        owner TEXT NOT NULL,
        url TEXT NOT NULL,
        token TEXT,
        authentication TEXT,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (task_id, id)
      );

      CREATE TABLE outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL,
        config_id TEXT NOT NULL,
        delivery_id TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        next_attempt_at INTEGER NOT NULL,
        lease_owner TEXT,
        lease_expires_at INTEGER,
        last_error TEXT,
        created_at INTEGER NOT NULL,
        delivered_at INTEGER
      );
      -- The claim looks only at open rows; the partial index keeps it small as delivered rows pile up.
      CREATE INDEX outbox_open ON outbox (task_id, config_id, id) WHERE status IN ('pending', 'leased');
      CREATE INDEX outbox_status ON outbox (status, id);
      CREATE INDEX outbox_task ON outbox (task_id, id);
    `,
  },
  {
    id: 2,
    name: 'agent task events without AUTOINCREMENT; no agent_tasks state index',
    // Two costs on every host send, measured with a throwaway benchmark of the send's own statements
    // (batches of 32 tasks, CPU per task created and completed; the store-level figure is
    // test/bench/store-agent-bench.ts): AUTOINCREMENT reads and rewrites its sqlite_sequence row on every
    // event insert, and agent_tasks_state was updated by every state change (docs/performance.md, "SQLite: migration 2") for
    // a query that does not need it: listActiveAgentTasks' `state NOT IN (…)` never used it, and ListTasks'
    // state filter runs on agent_tasks_owner like the rest of the listing (its COUNT already scans the
    // owner's range).
    //
    // Rule for agent_task_events from here on: rows are never deleted (nor the table truncated). Without
    // AUTOINCREMENT a new seq is max(seq) + 1, which is strictly increasing and never reused only while
    // the row with the highest seq stays; subscribers resume from a seq (Last-Event-ID), so a retention
    // job that deletes old events must keep the newest row of the table (or bring AUTOINCREMENT back).
    // The copy keeps every seq, so ids already handed out stay valid and new ones continue above them.
    sql: `
      CREATE TABLE agent_task_events_v2 (
        seq INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        at INTEGER NOT NULL,
        payload TEXT NOT NULL
      );
      INSERT INTO agent_task_events_v2 (seq, task_id, at, payload)
        SELECT seq, task_id, at, payload FROM agent_task_events ORDER BY seq;
      DROP TABLE agent_task_events;
      ALTER TABLE agent_task_events_v2 RENAME TO agent_task_events;
      CREATE INDEX agent_task_events_task ON agent_task_events (task_id, seq);
      DROP INDEX agent_tasks_state;
    `,
  },
  {
    id: 3,
    name: 'api keys',
    // Only the SHA-256 of a secret is stored; the unique hash is what a request is looked up by.
    sql: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        read_only INTEGER NOT NULL,
        name TEXT,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
      );
    `,
  },
  {
    id: 4,
    name: 'host scopes as separate owner and tenant columns',
    // Scopes used to be one string, `owner@tenant` with a tenant and `owner` without, so owner `alice` in
    // tenant `x` and owner `alice@x` were the same scope. Rows written then are split at the first `@`
    // when something follows it: owners loaded from keys can no longer contain `@`, so this gives every
    // such row to the owner and tenant that can still reach it. A value with no `@`, or ending in one,
    // keeps its owner and gets tenant ''. The split is one-to-one (a split row always has a non-empty
    // tenant and an owner without `@`), so no two message ids collide and no row is lost.
    sql: `
      ALTER TABLE agent_tasks ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
      UPDATE agent_tasks SET owner = substr(owner, 1, instr(owner, '@') - 1),
          tenant = substr(owner, instr(owner, '@') + 1)
        WHERE instr(owner, '@') BETWEEN 1 AND length(owner) - 1;
      DROP INDEX agent_tasks_owner;
      CREATE INDEX agent_tasks_scope ON agent_tasks (owner, tenant, status_timestamp, id);

      CREATE TABLE agent_task_messages_v3 (
        owner TEXT NOT NULL,
        tenant TEXT NOT NULL,
        message_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        PRIMARY KEY (owner, tenant, message_id)
      );
      INSERT INTO agent_task_messages_v3 (owner, tenant, message_id, task_id)
        SELECT
          CASE WHEN instr(owner, '@') BETWEEN 1 AND length(owner) - 1
            THEN substr(owner, 1, instr(owner, '@') - 1) ELSE owner END,
          CASE WHEN instr(owner, '@') BETWEEN 1 AND length(owner) - 1
            THEN substr(owner, instr(owner, '@') + 1) ELSE '' END,
          message_id, task_id
        FROM agent_task_messages;
      DROP TABLE agent_task_messages;
      ALTER TABLE agent_task_messages_v3 RENAME TO agent_task_messages;

      ALTER TABLE push_configs ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
      UPDATE push_configs SET owner = substr(owner, 1, instr(owner, '@') - 1),
          tenant = substr(owner, instr(owner, '@') + 1)
        WHERE instr(owner, '@') BETWEEN 1 AND length(owner) - 1;
    `,
  },
  {
    id: 5,
    name: 'agent direct replies',
    // The Message an agent answered a send with instead of a task, keyed like agent_task_messages, so
    // a retried send gets the same Message back.
    sql: `
      CREATE TABLE agent_direct_replies (
        owner TEXT NOT NULL,
        tenant TEXT NOT NULL,
        message_id TEXT NOT NULL,
        reply TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (owner, tenant, message_id)
      );
    `,
  },
  {
    id: 6,
    name: 'lease owners; agent task counts',
    // lease_owners: as PostgreSQL migration 6, which uses it to take a dead process's leases before they
    // expire. SQLite cannot tell whether another process lives, so it keeps the table empty.
    // agent_task_counts: how many tasks each scope has per state, kept by triggers in the writing
    // transaction, so ListTasks' totalSize is a lookup instead of a COUNT(*) over the scope's tasks. The
    // slot column spreads PostgreSQL's writers over several rows; SQLite has one writer and uses slot 0.
    // Triggers rather than code: a process of the previous version writing beside this one keeps the
    // counts right too.
    sql: `
      CREATE TABLE lease_owners (
        owner TEXT PRIMARY KEY,
        lock_key INTEGER NOT NULL,
        bound_at INTEGER NOT NULL
      );

      CREATE TABLE agent_task_counts (
        owner TEXT NOT NULL,
        tenant TEXT NOT NULL,
        state TEXT NOT NULL,
        slot INTEGER NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (owner, tenant, state, slot)
      );
      INSERT INTO agent_task_counts (owner, tenant, state, slot, n)
        SELECT owner, tenant, state, 0, COUNT(*) FROM agent_tasks GROUP BY owner, tenant, state;
      CREATE TRIGGER agent_task_counts_insert AFTER INSERT ON agent_tasks BEGIN
        INSERT INTO agent_task_counts (owner, tenant, state, slot, n) VALUES (NEW.owner, NEW.tenant, NEW.state, 0, 1)
          ON CONFLICT (owner, tenant, state, slot) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER agent_task_counts_update AFTER UPDATE OF owner, tenant, state ON agent_tasks
        WHEN OLD.state IS NOT NEW.state OR OLD.owner IS NOT NEW.owner OR OLD.tenant IS NOT NEW.tenant BEGIN
        INSERT INTO agent_task_counts (owner, tenant, state, slot, n) VALUES (OLD.owner, OLD.tenant, OLD.state, 0, -1)
          ON CONFLICT (owner, tenant, state, slot) DO UPDATE SET n = n - 1;
        INSERT INTO agent_task_counts (owner, tenant, state, slot, n) VALUES (NEW.owner, NEW.tenant, NEW.state, 0, 1)
          ON CONFLICT (owner, tenant, state, slot) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER agent_task_counts_delete AFTER DELETE ON agent_tasks BEGIN
        INSERT INTO agent_task_counts (owner, tenant, state, slot, n) VALUES (OLD.owner, OLD.tenant, OLD.state, 0, -1)
          ON CONFLICT (owner, tenant, state, slot) DO UPDATE SET n = n - 1;
      END;
    `,
  },
  {
    id: 7,
    name: 'agent task acknowledgements',
    // Tasks their owner has addressed by id: a resend of the message that created one is a new message,
    // not a retry of a send whose answer was lost (docs/host.md, "Idempotent sends"). A table of its own,
    // not a column of agent_task_messages, so marking one needs no index on task_id there.
    sql: `
      CREATE TABLE agent_task_acks (
        task_id TEXT PRIMARY KEY
      ) WITHOUT ROWID;
    `,
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
    // envelopes.retention_until mirrors the document's retentionUntil (set when a job ends) so the purge
    // finds what is due through a small partial index instead of reading documents. Indexes on the
    // columns a purge deletes by (deliveries.envelope_id, agent_task_messages.task_id) keep each batch
    // O(batch) rather than a scan of the table; agent_tasks_finished holds only terminal tasks, the host
    // purge's candidates (the state list is TERMINAL_AGENT_TASK_STATES in store-query.ts). Expand-only: a
    // process of the previous version writing beside this one leaves retention_until as it is.
    sql: `
      ALTER TABLE envelopes ADD COLUMN retention_until INTEGER;
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
    // Generated from the document, so no write path lists them: a job's workflow never changes, and the
    // verifier's due time is set and cleared with the acceptance record it belongs to. VIRTUAL: computed on
    // read, stored only in the indexes. The budget row is one per workflow, written with a version check.
    sql: `
      ALTER TABLE envelopes ADD COLUMN workflow_id TEXT
        GENERATED ALWAYS AS (json_extract(doc, '$.workflowId')) VIRTUAL;
      ALTER TABLE envelopes ADD COLUMN verify_due_at INTEGER
        GENERATED ALWAYS AS (json_extract(doc, '$.acceptance.verification.dueAt')) VIRTUAL;
      CREATE INDEX envelopes_workflow ON envelopes (tenant, workflow_id, updated_at, id)
        WHERE workflow_id IS NOT NULL;
      CREATE INDEX envelopes_verify_due ON envelopes (verify_due_at) WHERE verify_due_at IS NOT NULL;

      CREATE TABLE workflow_budgets (
        tenant TEXT NOT NULL,
        workflow_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        doc TEXT NOT NULL,
        PRIMARY KEY (tenant, workflow_id)
      );
    `,
  },
  {
    id: 11,
    name: 'push config protocol version',
    // The A2A version a push config was registered over: a 0.3 client's webhook gets 0.3 bodies.
    sql: `
      ALTER TABLE push_configs ADD COLUMN protocol_version TEXT NOT NULL DEFAULT '1.0';
    `,
  },
  {
    id: 12,
    name: 'reconciliation: open jobs by target, reconciliation deadlines',
    // What a reconciliation round reads, from indexes, so a round costs the jobs that changed or are due
    // attention rather than every open job (plane/reconciler.ts; docs/deploy.md, "A reconciliation pass
    // against what changed"). Generated from the document like migration 10's columns, so no write path
    // lists them and a process of the previous version writing beside this one keeps them right.
    // - created_at: the document's createdAt. envelopes_open_target holds the open jobs by target and
    //   tenant: the targets with open jobs, a target's tenants and its oldest open job are each a few
    //   index probes (store-query.ts OPEN_ENVELOPES_SQL is its predicate, word for word).
    // - envelopes_unstarted: open jobs with no remote id yet (few: starts in flight), matched to a listed
    //   task by its contextId.
    // - reconcile_due_at: store-query.ts reconcileDueAt, the earliest time the job's own fields may need a
    //   round (timeout, unacknowledged cancel, recorded answer, unconfirmed start, expected duration); the
    //   round adds its configured margins. 9e18 stands for "none" inside min(), which is NULL if any
    //   argument is.
    // - default_duration_from: created_at of a started open job that states no expected duration: an
    //   orphan once older than the configured default plus margin, which the round passes as a bound.
    //
    // STORED, and migration 10's workflow_id and verify_due_at made STORED with them: every envelope
    // write rewrites the document, so every column generated from it is computed on every write anyway,
    // and a VIRTUAL one is computed again for each index that holds it and each partial-index predicate
    // that reads it, for the old row (to find the entry to delete) as well as the new one; a STORED one
    // is computed once, for the new row, and read back for the old. Measured with
    // test/bench/store-write.ts (npm run bench:store-write): these columns as VIRTUAL nearly doubled the
    // CPU of an envelope UPDATE; STORED, the write costs about a third more than before this migration
    // (docs/deploy.md). SQLite cannot add a STORED column with ALTER TABLE, so the table is rebuilt with
    // the same columns in the same order (the documented way to change a table's definition) and its
    // indexes made again: the migration copies every envelope once, as PostgreSQL's does. Expand-only
    // still: the columns, their values and the index names are the ones a process of the previous
    // version reads and writes beside it.
    sql: `
      CREATE TABLE envelopes_v12 (
        id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        idempotency_key TEXT,
        connector TEXT NOT NULL,
        target TEXT NOT NULL,
        remote_id TEXT,
        state TEXT NOT NULL,
        updated_at INTEGER NOT NULL,
        version INTEGER NOT NULL,
        doc TEXT NOT NULL,
        retention_until INTEGER,
        workflow_id TEXT GENERATED ALWAYS AS (json_extract(doc, '$.workflowId')) STORED,
        verify_due_at INTEGER GENERATED ALWAYS AS (json_extract(doc, '$.acceptance.verification.dueAt')) STORED,
        created_at INTEGER GENERATED ALWAYS AS (json_extract(doc, '$.createdAt')) STORED,
        reconcile_due_at INTEGER GENERATED ALWAYS AS (
          CASE WHEN state IN ('accepted', 'running', 'waiting_for_input', 'cancel_requested', 'unknown') THEN NULLIF(min(
            CASE WHEN remote_id IS NULL THEN created_at ELSE 9e18 END,
            CASE WHEN state <> 'cancel_requested'
              THEN coalesce(created_at + json_extract(doc, '$.timeoutMs'), 9e18) ELSE 9e18 END,
            CASE WHEN state = 'cancel_requested' AND remote_id IS NOT NULL AND json_type(doc, '$.cancel') = 'object'
              AND json_extract(doc, '$.cancel.acknowledgedAt') IS NULL THEN created_at ELSE 9e18 END,
            CASE WHEN state = 'waiting_for_input' AND json_extract(doc, '$.pendingInput') GLOB '*"answeredAt":[0-9]*'
              THEN created_at ELSE 9e18 END,
            CASE WHEN remote_id IS NOT NULL
              THEN coalesce(created_at + json_extract(doc, '$.expectedDurationMs'), 9e18) ELSE 9e18 END
          ), 9e18) END) STORED,
        default_duration_from INTEGER GENERATED ALWAYS AS (
          CASE WHEN state IN ('accepted', 'running', 'waiting_for_input', 'cancel_requested', 'unknown') AND remote_id IS NOT NULL AND json_extract(doc, '$.expectedDurationMs') IS NULL
            THEN created_at END) STORED
      );
      INSERT INTO envelopes_v12 (id, tenant, idempotency_key, connector, target, remote_id, state, updated_at,
          version, doc, retention_until)
        SELECT id, tenant, idempotency_key, connector, target, remote_id, state, updated_at, version, doc,
          retention_until
        FROM envelopes;
      DROP TABLE envelopes;
      ALTER TABLE envelopes_v12 RENAME TO envelopes;
      -- migrations 1, 8, 9 and 10's indexes, as they were
      CREATE UNIQUE INDEX envelopes_idempotency ON envelopes (tenant, idempotency_key)
        WHERE idempotency_key IS NOT NULL;
      CREATE INDEX envelopes_remote ON envelopes (target, remote_id) WHERE remote_id IS NOT NULL;
      CREATE INDEX envelopes_updated ON envelopes (updated_at, id);
      CREATE INDEX envelopes_tenant_updated ON envelopes (tenant, updated_at, id);
      CREATE INDEX envelopes_tenant_state ON envelopes (tenant, state);
      CREATE INDEX envelopes_open ON envelopes (updated_at, id)
        WHERE state IN ('accepted', 'running', 'waiting_for_input', 'cancel_requested', 'unknown');
      CREATE INDEX envelopes_retention ON envelopes (retention_until) WHERE retention_until IS NOT NULL;
      CREATE INDEX envelopes_workflow ON envelopes (tenant, workflow_id, updated_at, id)
        WHERE workflow_id IS NOT NULL;
      CREATE INDEX envelopes_verify_due ON envelopes (verify_due_at) WHERE verify_due_at IS NOT NULL;
      -- this migration's
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
    // How many envelopes each tenant has per state, kept by triggers in the writing transaction (as
    // agent_task_counts, migration 6), so /metrics and /v1/signals read a row per tenant and state instead
    // of a COUNT(*) over every envelope on each scrape. Triggers rather than code: a process of the
    // previous version writing beside this one keeps the counts right too. Only a change of tenant or
    // state fires the update trigger, not the observations that rewrite a job's document. SQLite has one
    // writer and uses slot 0. Expand-only: the previous version ignores the table.
    sql: `
      CREATE TABLE envelope_counts (
        tenant TEXT NOT NULL,
        state TEXT NOT NULL,
        slot INTEGER NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (tenant, state, slot)
      ) WITHOUT ROWID;
      INSERT INTO envelope_counts (tenant, state, slot, n)
        SELECT tenant, state, 0, COUNT(*) FROM envelopes GROUP BY tenant, state;
      CREATE TRIGGER envelope_counts_insert AFTER INSERT ON envelopes BEGIN
        INSERT INTO envelope_counts (tenant, state, slot, n) VALUES (NEW.tenant, NEW.state, 0, 1)
          ON CONFLICT (tenant, state, slot) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER envelope_counts_update AFTER UPDATE OF tenant, state ON envelopes
        WHEN OLD.state IS NOT NEW.state OR OLD.tenant IS NOT NEW.tenant BEGIN
        INSERT INTO envelope_counts (tenant, state, slot, n) VALUES (OLD.tenant, OLD.state, 0, -1)
          ON CONFLICT (tenant, state, slot) DO UPDATE SET n = n - 1;
        INSERT INTO envelope_counts (tenant, state, slot, n) VALUES (NEW.tenant, NEW.state, 0, 1)
          ON CONFLICT (tenant, state, slot) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER envelope_counts_delete AFTER DELETE ON envelopes BEGIN
        INSERT INTO envelope_counts (tenant, state, slot, n) VALUES (OLD.tenant, OLD.state, 0, -1)
          ON CONFLICT (tenant, state, slot) DO UPDATE SET n = n - 1;
      END;
    `,
  },
];
