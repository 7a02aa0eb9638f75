import type { Envelope, EnvelopeEvent, NewEnvelopeEvent } from '../core/envelope.ts';
import type { NormalizedState } from '../core/states.ts';

/**
 * A Store backend: everything durable that the control plane (envelopes, events, deliveries, leases)
 * and the agent host (agent tasks, push configs, the push outbox) keep. Each user sees only its port,
 * EnvelopeStore or AgentTaskStore; three backends implement both, and each port has one behaviour suite
 * they all run: memory (pure TS, runs in a browser for the lab), sqlite (default) and postgres.
 *
 * Rules every backend keeps:
 * - "now" is always a parameter (from the Clock port), never SQL now(), so the lab can replay.
 * - Every write that two paths can make is checked against a version (optimistic concurrency): a stale
 *   write throws VersionConflictError and changes nothing. No last-writer-wins.
 * - Each method is one transaction: a state change, its events and its outbox rows commit together.
 * - A write stores its arguments as they are at the call: a caller changing them while the write waits
 *   for its transaction cannot change what is stored.
 * - Records a method returns are the caller's, with one exception: the records createAgentTask and
 *   updateAgentTask return for a write they made, and the events updateAgentTask returns, may share the
 *   documents (`task`, `executorState`, event `payload`) with the arguments the caller passed (SQLite and
 *   PostgreSQL return `{ ...task, version, owner }` rather than parse back what they stored: two JSON.parse
 *   of the task per write). So a caller of those two hands the documents over at the call and must not
 *   change them afterwards, through the arguments or the result; to edit a task, edit a copy (TaskWriter's
 *   draft). The memory store copies anyway.
 */
export interface Store extends EnvelopeStore, AgentTaskStore {}

/** What both users of a store need: its capabilities, leases, settings, the change feed and closing it. */
export interface StoreCommon {
  readonly capabilities: StoreCapabilities;

  // --- leases: one owner at a time for a named piece of work (reconciliation, host liveness)
  /**
   * Takes or renews the lease `name` for `owner` until now + ttlMs when it is free, expired or already
   * held by `owner`. Returns true when `owner` holds it afterwards.
   */
  acquireLease(name: string, owner: string, now: number, ttlMs: number): Promise<boolean>;
  releaseLease(name: string, owner: string): Promise<void>;
  /**
   * acquireLease for many names in one statement (a plane renewing every job it watches): returns the
   * names `owner` holds afterwards, in no particular order.
   */
  acquireLeases(names: readonly string[], owner: string, now: number, ttlMs: number): Promise<string[]>;
  /**
   * Ties lease owner `owner` to this store's own connection to the database (`capabilities.ownerLiveness`):
   * once that connection is gone (the process died), any acquireLease may take `owner`'s leases at once
   * instead of waiting for them to expire. Call before taking leases as `owner`. A no-op on backends
   * without the capability, where leases change hands only by expiry.
   */
  bindLeaseOwner(owner: string, now: number): Promise<void>;
  /**
   * Bound lease owners whose process is gone and that still hold leases (`capabilities.ownerLiveness`):
   * their leases can be taken now. One cheap read per call (no per-lease work); [] on backends without
   * the capability.
   */
  deadLeaseOwners(): Promise<string[]>;

  // --- settings (first-start API key, instance id, the host's step-key secret) ----------------
  getSetting(key: string): Promise<string | undefined>;
  /** Sets `key` only if absent; returns the value now stored (so two processes agree). */
  putSettingIfAbsent(key: string, value: string): Promise<string>;

  // --- change feed ----------------------------------------------------------------------------
  /**
   * Calls `listener` soon after envelope events or agent-task events are committed by ANY process
   * sharing this store (in-process for memory/sqlite, LISTEN/NOTIFY for postgres). It only wakes:
   * readers then list events after their last seq, so a missed wake-up loses nothing. One notice per
   * write, carrying that write's last seq; writes without events notify nothing.
   */
  onChange(listener: (change: ChangeNotice) => void): () => void;

  close(): Promise<void>;
}

/** What the control plane keeps: envelopes, their event log, inbound deliveries, settings and API keys. */
export interface EnvelopeStore extends StoreCommon {
  // --- control plane: envelopes -------------------------------------------------------------
  /**
   * Inserts a new envelope (version 1) and its first events. When `(tenant, idempotencyKey)` already
   * exists, inserts nothing and returns the stored envelope with `created: false`.
   */
  createEnvelope(
    envelope: Envelope,
    events: NewEnvelopeEvent[],
    guard?: CreateGuard,
  ): Promise<{ created: boolean; envelope: Envelope }>;
  getEnvelope(id: string): Promise<Envelope | undefined>;
  findEnvelopeByIdempotencyKey(tenant: string, key: string): Promise<Envelope | undefined>;
  findEnvelopeByRemoteId(target: string, remoteId: string): Promise<Envelope | undefined>;
  /**
   * Writes `next` if the stored version is still `expectedVersion`, setting version to
   * expectedVersion + 1, and appends `events` in the same transaction. Throws VersionConflictError
   * otherwise (TaskplaneError `not_found` when there is no such envelope). Returns the stored envelope
   * and the appended events with their sequence numbers.
   */
  updateEnvelope(
    next: Envelope,
    expectedVersion: number,
    events: NewEnvelopeEvent[],
  ): Promise<{ envelope: Envelope; events: EnvelopeEvent[] }>;
  listEnvelopes(query: EnvelopeQuery): Promise<Page<Envelope>>;
  /** Counts by state for one tenant, or all tenants when tenant is undefined. */
  countEnvelopesByState(tenant?: string): Promise<Partial<Record<NormalizedState, number>>>;
  /**
   * State, version and remote id of each envelope in `ids` that exists (a cheap batched read, without the documents),
   * in no particular order: how a plane re-checks the jobs it watches in one query per round.
   */
  envelopeVersions(ids: readonly string[]): Promise<EnvelopeVersion[]>;

  // --- control plane: reconciliation reads (each answered from an index, never a read of every open job)
  /**
   * The targets that have open (non-terminal) envelopes, in no particular order: one index probe per
   * target, whatever the number of open jobs.
   */
  openTargets(): Promise<string[]>;
  /**
   * The tenants with open envelopes on `target` and the earliest `createdAt` among those envelopes (null
   * when there are none): one index probe per tenant.
   */
  openJobsOfTarget(target: string): Promise<OpenJobsOfTarget>;
  /**
   * The open envelopes of `target` that listed remote objects refer to: those whose remote id is in
   * `remoteIds`, and those with no remote id yet whose contextId is in `contextIds`. Indexed lookups, in
   * no particular order; at most 500 ids of each kind per call (more is an `invalid_argument` error).
   */
  findOpenEnvelopesByRemote(
    target: string,
    remoteIds: readonly string[],
    contextIds: readonly string[],
  ): Promise<Envelope[]>;
  /**
   * The open envelopes of `target` that may need a reconciliation round's attention (store-query.ts
   * `isReconcileDue` is the rule, the same on every backend): a superset of what the round acts on, read
   * through indexes of the documents' own deadlines, so jobs quietly running within them are never read.
   * Oldest update first (updatedAt, then id).
   */
  listReconcileDue(target: string, query: ReconcileDueQuery): Promise<Envelope[]>;

  // --- control plane: watch-lease adoption --------------------------------------------------
  /**
   * The open envelopes whose watch lease (`watch:<id>`, plane/watch-leases.ts) is free at `query.now`:
   * no lease, an expired one, or (`capabilities.ownerLiveness`) one held by an owner whose process is
   * gone, as deadLeaseOwners tells them: the jobs acquireLeases would hand to a caller, so the ones no
   * live plane watches. Oldest update first (updatedAt, then id), in pages of `limit`; `nextCursor`
   * (absent on the last page) continues after the page. Read through the open-jobs index and the
   * leases' key: a leased job's document is never read, so a plane's adoption round costs the jobs
   * nobody watches, not every open job.
   */
  listUnwatchedEnvelopes(query: UnwatchedQuery): Promise<Page<Envelope>>;

  // --- control plane: the event log ---------------------------------------------------------
  /** Events with seq > afterSeq in seq order, optionally for one tenant and/or one envelope. */
  listEvents(query: EventQuery): Promise<EnvelopeEvent[]>;
  /**
   * Usage and acceptance summed per target over the envelopes that match (a tenant, a workflow, or every
   * envelope): what budgets and the cost per accepted completion are computed from. Without a workflow it
   * reads every envelope's usage (one aggregate statement), so callers cache it.
   */
  summarizeUsage(query: UsageQuery): Promise<TargetUsage[]>;

  // --- workflow budgets -----------------------------------------------------------------------
  getWorkflowBudget(tenant: string, workflowId: string): Promise<WorkflowBudgetRecord | undefined>;
  /**
   * Writes a workflow's budget: inserted when `expectedVersion` is null (VersionConflictError when one
   * exists), else replaced if the stored version is still `expectedVersion`. Returns it as stored, its
   * version set (1 when inserted, expectedVersion + 1 when replaced).
   */
  putWorkflowBudget(
    record: WorkflowBudgetRecord,
    expectedVersion: number | null,
  ): Promise<WorkflowBudgetRecord>;

  // --- retention ------------------------------------------------------------------------------
  /**
   * Terminal envelopes whose `retentionUntil` is at or before `now`, earliest deadline first, at most
   * `limit`: what purgeEnvelopes removes next. Read through an index of the deadline, O(limit) whatever
   * is stored.
   */
  listExpiredEnvelopes(now: number, limit: number): Promise<ExpiredEnvelope[]>;
  /**
   * Deletes each envelope of `ids` that is still terminal with `retentionUntil <= now`, with its events,
   * the inbound deliveries recorded for it and its expired watch lease (`watch:<id>`), in one short transaction. An envelope
   * another transaction holds is skipped, never waited for (PostgreSQL `FOR UPDATE SKIP LOCKED`): it is
   * still there for the next purge. Returns the ids deleted, in no particular order. Notifies nothing.
   * Event seqs stay unique: a deleted seq is never handed out again.
   */
  purgeEnvelopes(ids: readonly string[], now: number): Promise<string[]>;

  // --- inbound delivery dedup ---------------------------------------------------------------
  /**
   * Records an inbound delivery (webhook, notification) by `(source, deliveryId)`. Returns true when it
   * is new, false when it was recorded before (a duplicate). Durable before it returns.
   */
  recordDelivery(delivery: InboundDelivery): Promise<boolean>;

  // --- API keys of the control plane (only their hashes) -------------------------------------
  /**
   * Inserts a key unless one with the same id or hash exists; returns the record now stored under that
   * hash (or id), so two processes seeding the same key agree and a revoked key stays revoked.
   */
  putApiKeyIfAbsent(key: ApiKeyRecord): Promise<ApiKeyRecord>;
  getApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined>;
  /** Every key, revoked ones included, oldest first (createdAt, id). */
  listApiKeys(): Promise<ApiKeyRecord[]>;
  /**
   * Marks a key revoked at `now` unless it already is (the first revocation time stays). Returns the
   * stored record, undefined when there is no such id.
   */
  revokeApiKey(id: string, now: number): Promise<ApiKeyRecord | undefined>;
}

/** What the agent host keeps: its A2A tasks and their events, push configs and the push outbox. */
export interface AgentTaskStore extends StoreCommon {
  // --- agent host: tasks ----------------------------------------------------------------------
  /**
   * Creates an agent task at version 1 (whatever `task.version` says). When `(owner, tenant, messageId)` was
   * used before, creates nothing and returns the existing task with `created: false` (SendMessage idempotent on
   * messageId per caller), unless that task was acknowledged (acknowledgeAgentTask): then the pair is
   * taken over by the new task. Outbox rows get `createdAt = task.updatedAt`. The created record may share
   * `task.task` and `task.executorState` with the argument: neither side changes them afterwards (see
   * above); the existing task of a duplicate is read from the store.
   */
  createAgentTask(
    task: AgentTaskRecord,
    messageId: string,
    events: NewAgentTaskEvent[],
    outbox: NewOutboxRow[],
  ): Promise<{ created: boolean; task: AgentTaskRecord }>;
  /**
   * The task when it exists and belongs to `scope` (both owner and tenant equal); scope undefined = any
   * scope, for the host itself.
   */
  getAgentTask(id: string, scope?: AgentScope): Promise<AgentTaskRecord | undefined>;
  /**
   * Records that `scope` addressed task `id` by its id (a follow-up, GetTask, CancelTask, a subscription, a
   * push config operation), so the send that created it was evidently answered: from then on
   * createAgentTask with one of that task's `messageId`s creates a new task instead of returning this
   * one (docs/host.md, "Idempotent sends"). Durable before it resolves; a no-op when the task is not
   * `scope`'s (another owner's acknowledgement does not count) or is acknowledged already.
   */
  acknowledgeAgentTask(id: string, scope: AgentScope): Promise<void>;
  /** Task id a `(scope, messageId)` pair created, if any. */
  findAgentTaskByMessageId(scope: AgentScope, messageId: string): Promise<string | undefined>;
  /**
   * CAS write of a task (version check as updateEnvelope), with its events and outbox rows in the same
   * transaction. `messageId`, when given, is recorded for (owner, tenant, messageId) idempotency; if that is
   * already recorded the write is refused with `duplicate: true` and nothing changes; that check comes
   * before the version check, so a retried message reads as a duplicate, not a conflict. The scope never
   * changes (the stored owner and tenant are kept). Outbox rows get `createdAt = next.updatedAt`. TaskplaneError
   * `not_found` when there is no such task. The written record and the returned events (`events` with
   * their seqs) may share `next.task`, `next.executorState` and the event payloads with the arguments:
   * neither side changes them afterwards (see above).
   */
  updateAgentTask(
    next: AgentTaskRecord,
    expectedVersion: number,
    events: NewAgentTaskEvent[],
    outbox: NewOutboxRow[],
    messageId?: string,
  ): Promise<{ duplicate: boolean; task: AgentTaskRecord; events: AgentTaskEvent[] }>;
  listAgentTasks(query: AgentTaskQuery): Promise<AgentTaskPage>;
  /** Every task not in a terminal state (restart recovery). */
  listActiveAgentTasks(): Promise<AgentTaskRecord[]>;
  /**
   * Task events with seq > afterSeq, in order (SubscribeToTask replay, Last-Event-ID). Task event seqs
   * come from one sequence shared by all tasks: increasing per task, with gaps between a task's events.
   */
  listAgentTaskEvents(taskId: string, afterSeq: number, limit?: number): Promise<AgentTaskEvent[]>;

  // --- agent host: retention ------------------------------------------------------------------
  /**
   * Deletes up to `limit` tasks in a terminal state whose last write (`updatedAt`) is before
   * `finishedBefore`, oldest first, each with its events, push configs, outbox rows (whatever their
   * status), `messageId` records and acknowledgement, in one short transaction; and up to `limit` direct
   * replies created before `finishedBefore` (PostgreSQL: in a second statement). Rows another transaction holds are skipped, never waited
   * for (PostgreSQL `SKIP LOCKED`). A `messageId` of a purged task is free again: sending it once more
   * creates a new task. Event seqs are never handed out twice (SQLite keeps the newest event row of the
   * table as a blank tombstone when it was a purged task's: sqlite-schema.ts migration 2). Notifies nothing.
   */
  purgeAgentTasks(finishedBefore: number, limit: number): Promise<AgentTaskPurge>;

  // --- agent host: direct replies -------------------------------------------------------------
  /**
   * Records `reply`, the Message the agent answered `(scope, messageId)` with instead of creating a task,
   * unless that pair already has a reply: returns the stored one (the earlier reply on a retry), so
   * every retry of a send gets the same Message, across restarts. `reply` is stored as it is at the
   * call; the result is the caller's. Kept as long as the `messageId` records of tasks.
   */
  putDirectReply(
    scope: AgentScope,
    messageId: string,
    reply: Record<string, unknown>,
    now: number,
  ): Promise<Record<string, unknown>>;
  /** The reply recorded for `(scope, messageId)`, if any. */
  getDirectReply(scope: AgentScope, messageId: string): Promise<Record<string, unknown> | undefined>;

  // --- agent host: push configs ---------------------------------------------------------------
  putPushConfig(config: PushConfigRecord): Promise<PushConfigRecord>;
  getPushConfig(taskId: string, id: string): Promise<PushConfigRecord | undefined>;
  listPushConfigs(taskId: string): Promise<PushConfigRecord[]>;
  /** Idempotent: deleting an absent config is not an error. */
  deletePushConfig(taskId: string, id: string): Promise<void>;

  // --- agent host: push outbox ----------------------------------------------------------------
  /**
   * Leases up to `limit` deliverable rows: status pending with nextAttemptAt <= now, or leased with an
   * expired lease (the sweeper case), and only the oldest undelivered row per (taskId, configId) so
   * delivery stays in order. Sets lease owner and expiry and increments attempts, atomically
   * (FOR UPDATE SKIP LOCKED / BEGIN IMMEDIATE).
   */
  claimOutbox(owner: string, now: number, leaseMs: number, limit: number): Promise<OutboxRow[]>;
  /** Marks a leased row delivered. Ignored unless `owner` still holds the lease. */
  completeOutbox(id: number, owner: string, now: number): Promise<void>;
  /** Returns a leased row to pending with a next attempt time, or dead-letters it (`nextAttemptAt` null). */
  failOutbox(id: number, owner: string, error: string, nextAttemptAt: number | null): Promise<void>;
  listOutbox(query: { status?: OutboxStatus; taskId?: string; limit?: number }): Promise<OutboxRow[]>;
  /**
   * Gives dead-lettered rows (of one task, when given) a fresh set of attempts: status pending, attempts
   * 0, next attempt at `now`; the last error stays until the next attempt. Returns how many rows. A
   * requeued row is delivered after the rows of its (task, config) sent while it was dead (the receiver
   * orders by the event inside, deduplicates by delivery id).
   */
  requeueDeadOutbox(now: number, taskId?: string): Promise<number>;
}

/** What a backend can do; code branches on these flags, never on backend names (pg-boss). */
export interface StoreCapabilities {
  /** Data survives the process. */
  durable: boolean;
  /** Several processes may share it. */
  multiProcess: boolean;
  /** Other processes' commits reach onChange. */
  crossProcessNotify: boolean;
  /** A dead process's leases can be taken before they expire (bindLeaseOwner). */
  ownerLiveness: boolean;
}

/** An envelope past its retention deadline (listExpiredEnvelopes). */
export interface ExpiredEnvelope {
  id: string;
  tenant: string;
  retentionUntil: number;
}

/** What one purgeAgentTasks call deleted. */
export interface AgentTaskPurge {
  /** Ids of the tasks deleted. */
  tasks: string[];
  /** How many direct replies were deleted. */
  directReplies: number;
}

/** openJobsOfTarget: who has open jobs on a target, and since when. */
export interface OpenJobsOfTarget {
  tenants: string[];
  oldestCreatedAt: number | null;
}

/** listReconcileDue: the round's time and the margin of jobs that state no expected duration. */
export interface ReconcileDueQuery {
  /** Jobs whose own deadline (store-query.ts `reconcileDueAt`) is at or before this. */
  now: number;
  /**
   * Started jobs with no `expectedDurationMs` that were created at or before this (the round's
   * `now - defaultExpectedDurationMs - orphanMarginMs`): the orphans of the configured default.
   */
  defaultOrphanCreatedBefore: number;
}

export interface EnvelopeVersion {
  id: string;
  state: NormalizedState;
  version: number;
  remoteId: string | null;
}

export interface ChangeNotice {
  kind: 'envelope' | 'agentTask';
  /** Envelope or agent task id. */
  id: string;
  seq: number;
}

export interface Page<T> {
  items: T[];
  /** Opaque; absent on the last page. */
  nextCursor?: string;
}

/**
 * A condition a create must meet in the same transaction as its insert (two concurrent creates cannot
 * both pass it). Failing it throws TaskplaneError `failed_precondition` (field `budget.tasks`) and writes
 * nothing; an idempotent repeat (same tenant and key) still returns its envelope.
 */
export interface CreateGuard {
  /** The envelope's workflow may hold at most this many envelopes, this one included. */
  workflowTaskLimit?: number;
}

export interface UsageQuery {
  tenant?: string;
  workflowId?: string;
}

/** One target's sums over the envelopes a UsageQuery matched. */
export interface TargetUsage {
  target: string;
  tasks: number;
  /** Envelopes in a terminal state. */
  finished: number;
  /** Envelopes whose acceptance is `accepted`, `rejected`, and those that never asked for acceptance. */
  accepted: number;
  rejected: number;
  /** Succeeded envelopes with no acceptance asked for (completion is then the only verdict there is). */
  succeededUnchecked: number;
  /** Usage the remote reported, summed per unit (`cents`, `total_tokens`, …). */
  usage: Record<string, number>;
  /** The earliest createdAt among them. */
  firstCreatedAt: number;
}

/**
 * A budget over every task of one workflow (a tenant's workflowId): usage per unit, a task count and
 * wall time from its first task, enforced at create and, when `cancelRunning`, on running tasks.
 */
export interface WorkflowBudgetRecord {
  tenant: string;
  workflowId: string;
  limits: WorkflowLimits;
  /** Cancel the workflow's open tasks once a limit is passed (else only new tasks are refused). */
  cancelRunning: boolean;
  /** Each limit seen passed, first time only, with what was used then: the overshoot is kept, not hidden. */
  exceeded: BudgetExceeded[];
  createdAt: number;
  updatedAt: number;
  version: number;
}

export interface WorkflowLimits {
  /** Caps per usage unit, in the remote's unit (`cents`, `total_tokens`). */
  usage?: Record<string, number>;
  /** Most tasks the workflow may have. */
  tasks?: number;
  /** Longest the workflow may run, from its first task's creation. */
  wallTimeMs?: number;
}

export interface BudgetExceeded {
  /** `usage.<unit>`, `tasks` or `wallTimeMs`. */
  budget: string;
  limit: number;
  used: number;
  at: number;
}

export interface EnvelopeQuery {
  tenant?: string;
  /** Only the envelopes of this workflow. */
  workflowId?: string;
  /** Only envelopes whose acceptance verifier call is due or being retried. */
  verificationDue?: boolean;
  states?: NormalizedState[];
  target?: string;
  connector?: string;
  /** Only envelopes with updatedAt > this. */
  updatedAfter?: number;
  /** Newest first by default (updatedAt desc, id desc); 'asc' for oldest first. */
  order?: 'desc' | 'asc';
  cursor?: string;
  /** @default 50, at most 500 */
  limit?: number;
}

/** listUnwatchedEnvelopes: the time leases are judged at, and one page. */
export interface UnwatchedQuery {
  /** A lease whose expiry is at or before this is free (acquireLease's rule). */
  now: number;
  cursor?: string;
  /** @default 500, at most 1000 */
  limit?: number;
}

export interface EventQuery {
  afterSeq: number;
  tenant?: string;
  envelopeId?: string;
  /** @default 500 */
  limit?: number;
}

export interface InboundDelivery {
  /** Which ingress: `a2a-push:<target>`, `openai-webhook`, … */
  source: string;
  deliveryId: string;
  envelopeId: string | null;
  receivedAt: number;
}

/** A control-plane API key: the SHA-256 of its secret, never the secret. */
export interface ApiKeyRecord {
  /** `key_…`, shown to people and recorded on the envelopes the key creates. */
  id: string;
  tenant: string;
  /** `sha256:<hex>` of the secret. */
  hash: string;
  /** Reads only: every write is refused with 403. */
  readOnly: boolean;
  /** A label for people (`ci`, `dashboard`); not unique. */
  name: string | null;
  createdAt: number;
  revokedAt: number | null;
}

/**
 * Who a host task or push config belongs to: the authenticated caller and the A2A tenant it addressed
 * (`''` when the request named none). Two parts compared separately, never joined into one string: a
 * joined `owner@tenant` let owner `alice` in tenant `x` and owner `alice@x` read each other's tasks.
 */
export interface AgentScope {
  owner: string;
  /** The request's tenant; `''` for none. */
  tenant: string;
}

/** The host's stored A2A task. `task` is the A2A 1.0 Task in its ProtoJSON wire shape. */
export interface AgentTaskRecord extends AgentScope {
  id: string;
  contextId: string;
  /** A2A TaskState name, e.g. `TASK_STATE_WORKING`. */
  state: string;
  /** Status timestamp in epoch ms (ListTasks sorts and filters on it). */
  statusTimestamp: number;
  task: Record<string, unknown>;
  /** Executor bookkeeping that survives restarts (resume point, pending input request). */
  executorState: Record<string, unknown> | null;
  createdAt: number;
  updatedAt: number;
  version: number;
}

export interface NewAgentTaskEvent {
  taskId: string;
  at: number;
  /** A StreamResponse in wire shape: `{statusUpdate: …}`, `{artifactUpdate: …}`, `{task: …}`. */
  payload: Record<string, unknown>;
}

export interface AgentTaskEvent extends NewAgentTaskEvent {
  seq: number;
}

/** Lists one scope's tasks: owner and tenant both match. */
export interface AgentTaskQuery extends AgentScope {
  contextId?: string;
  state?: string;
  /** Tasks whose statusTimestamp >= this (proto: "at or after"). */
  statusTimestampAfter?: number;
  /** Sorted by statusTimestamp desc, id desc. */
  cursor?: string;
  /** @default 50 */
  pageSize?: number;
}

export interface AgentTaskPage {
  tasks: AgentTaskRecord[];
  nextCursor: string | undefined;
  totalSize: number;
}

export interface PushConfigRecord extends AgentScope {
  id: string;
  taskId: string;
  url: string;
  /** The A2A `token` field, returned to its owner. */
  token: string | null;
  /** Credentials are stored to send them, and never returned by Get/List. */
  authentication: { scheme: string; credentials?: string } | null;
  createdAt: number;
  /**
   * The A2A version the config was registered over, when not 1.0: a config a 0.3 client registered
   * gets 0.3 push bodies (the bare event with `kind`). Absent: 1.0.
   */
  protocolVersion?: string;
}

export type OutboxStatus = 'pending' | 'leased' | 'delivered' | 'dead';

export interface NewOutboxRow {
  taskId: string;
  configId: string;
  /** Stable across attempts: receivers deduplicate on it. */
  deliveryId: string;
  /** StreamResponse wire shape. */
  payload: Record<string, unknown>;
  nextAttemptAt: number;
}

export interface OutboxRow extends NewOutboxRow {
  id: number;
  status: OutboxStatus;
  attempts: number;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  lastError: string | null;
  createdAt: number;
  deliveredAt: number | null;
}
