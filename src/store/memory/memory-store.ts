import type { Envelope, EnvelopeEvent, NewEnvelopeEvent } from '../../core/envelope.ts';
import { TaskplaneError, VersionConflictError, notFound } from '../../core/errors.ts';
import { isTerminal, type NormalizedState } from '../../core/states.ts';
import { ChangeHub, envelopeNotices } from '../change-hub.ts';
import { MemoryAgentHost, clone, cloneOrUndefined, compare, pair } from './memory-agent-host.ts';
import type {
  ApiKeyRecord,
  ChangeNotice,
  CreateGuard,
  TargetUsage,
  UsageQuery,
  WorkflowBudgetRecord,
  EnvelopeQuery,
  EnvelopeVersion,
  EventQuery,
  ExpiredEnvelope,
  InboundDelivery,
  OpenJobsOfTarget,
  Page,
  ReconcileDueQuery,
  Store,
  StoreCapabilities,
  UnwatchedQuery,
} from '../store.ts';
import {
  afterKeyset,
  checkRemoteLookup,
  decodeCursor,
  envelopeLimit,
  eventLimit,
  isReconcileDue,
  openJobsSummary,
  keysetPage,
  START_KEYSET,
  unwatchedLimit,
  watchLeaseName,
} from '../store-query.ts';
import { summarize, workflowTaskLimitError } from '../usage-summary.ts';

/**
 * The Store in plain TypeScript maps: no node: imports and no native code, so the lab can run the real
 * engine in a browser. Every record is deep-copied on the way in and out (structuredClone) so a caller
 * mutating what it passed or got back can never change stored state behind the version check.
 *
 * Each method runs to completion without an await, which makes it one atomic "transaction" on the single
 * JS thread; concurrency between callers happens only between methods, exactly where CAS checks apply.
 */
export class MemoryStore extends MemoryAgentHost implements Store {
  readonly capabilities: StoreCapabilities = {
    durable: false,
    multiProcess: false,
    crossProcessNotify: false,
    ownerLiveness: false,
  };

  private readonly envelopes = new Map<string, Envelope>();
  /** Envelopes per tenant and state (countEnvelopesByState without a pass over every envelope). */
  private readonly stateCounts = new Map<string, Map<NormalizedState, number>>();
  /** Envelope ids per state (a query by state reads only these). */
  private readonly idsByState = new Map<NormalizedState, Set<string>>();
  /** `tenant \u0000 key` → envelope id. */
  private readonly idempotencyKeys = new Map<string, string>();
  /** Index seq - 1; a purged event leaves a hole, so seqs are never reused and stay positions. */
  private readonly events: Array<EnvelopeEvent | undefined> = [];
  private eventSeq = 0;
  /** pair(source, deliveryId) → the envelope it was recorded for. */
  private readonly deliveries = new Map<string, string | null>();
  private readonly leases = new Map<string, { owner: string; expiresAt: number }>();
  private readonly settings = new Map<string, string>();
  private readonly apiKeys = new Map<string, ApiKeyRecord>();
  /** `tenant \u0000 workflowId` → budget. */
  private readonly workflowBudgets = new Map<string, WorkflowBudgetRecord>();
  protected readonly hub = new ChangeHub();
  private closed = false;

  // --- envelopes -----------------------------------------------------------------------------

  async createEnvelope(
    envelope: Envelope,
    events: NewEnvelopeEvent[],
    guard: CreateGuard = {},
  ): Promise<{ created: boolean; envelope: Envelope }> {
    this.assertOpen();
    if (envelope.idempotencyKey !== null) {
      const existing = this.idempotencyKeys.get(pair(envelope.tenant, envelope.idempotencyKey));
      if (existing !== undefined) return { created: false, envelope: clone(this.envelopes.get(existing)!) };
    }
    if (guard.workflowTaskLimit !== undefined && envelope.workflowId !== null) {
      let n = 0;
      for (const e of this.envelopes.values())
        if (e.tenant === envelope.tenant && e.workflowId === envelope.workflowId) n++;
      if (n >= guard.workflowTaskLimit)
        throw workflowTaskLimitError(envelope.workflowId, guard.workflowTaskLimit);
    }
    if (this.envelopes.has(envelope.id))
      throw new TaskplaneError('conflict', `envelope ${envelope.id} already exists`);
    const stored = clone(envelope);
    stored.version = 1;
    this.envelopes.set(stored.id, stored);
    this.indexState(stored, 1);
    if (stored.idempotencyKey !== null)
      this.idempotencyKeys.set(pair(stored.tenant, stored.idempotencyKey), stored.id);
    const appended = this.appendEvents(events);
    this.hub.emit(envelopeNotices(stored.id, appended));
    return { created: true, envelope: clone(stored) };
  }

  async getEnvelope(id: string): Promise<Envelope | undefined> {
    return cloneOrUndefined(this.envelopes.get(id));
  }

  async findEnvelopeByIdempotencyKey(tenant: string, key: string): Promise<Envelope | undefined> {
    const id = this.idempotencyKeys.get(pair(tenant, key));
    return id === undefined ? undefined : cloneOrUndefined(this.envelopes.get(id));
  }

  async findEnvelopeByRemoteId(target: string, remoteId: string): Promise<Envelope | undefined> {
    for (const envelope of this.envelopes.values()) {
      if (envelope.target === target && envelope.remoteId === remoteId) return clone(envelope);
    }
    return undefined;
  }

  async updateEnvelope(
    next: Envelope,
    expectedVersion: number,
    events: NewEnvelopeEvent[],
  ): Promise<{ envelope: Envelope; events: EnvelopeEvent[] }> {
    this.assertOpen();
    const current = this.envelopes.get(next.id);
    if (!current) throw notFound(`envelope ${next.id}`);
    if (current.version !== expectedVersion) throw new VersionConflictError(`envelope ${next.id}`);
    if (next.tenant !== current.tenant || next.idempotencyKey !== current.idempotencyKey) {
      // The unique (tenant, idempotencyKey) index is fixed at creation, as in the SQL backends.
      const key = next.idempotencyKey === null ? undefined : pair(next.tenant, next.idempotencyKey);
      if (key !== undefined && this.idempotencyKeys.has(key)) {
        throw new TaskplaneError('conflict', `idempotency key already used in tenant ${next.tenant}`);
      }
      if (current.idempotencyKey !== null)
        this.idempotencyKeys.delete(pair(current.tenant, current.idempotencyKey));
      if (key !== undefined) this.idempotencyKeys.set(key, next.id);
    }
    const stored = clone(next);
    stored.version = expectedVersion + 1;
    this.envelopes.set(stored.id, stored);
    this.indexState(current, -1);
    this.indexState(stored, 1);
    const appended = this.appendEvents(events);
    this.hub.emit(envelopeNotices(stored.id, appended));
    return { envelope: clone(stored), events: clone(appended) };
  }

  async listEnvelopes(query: EnvelopeQuery): Promise<Page<Envelope>> {
    const limit = envelopeLimit(query.limit);
    const order = query.order ?? 'desc';
    const keyset = decodeCursor(query.cursor);
    const states = query.states && new Set<NormalizedState>(query.states);
    // A query by state (the engine's open jobs) looks only at the jobs in those states, however many
    // have finished: as the SQL stores' index on state does.
    const candidates = states ? this.inStates(states) : this.envelopes.values();
    const matching = [...candidates].filter(
      (e) =>
        (query.tenant === undefined || e.tenant === query.tenant) &&
        (query.workflowId === undefined || e.workflowId === query.workflowId) &&
        (query.verificationDue !== true || typeof e.acceptance?.verification?.dueAt === 'number') &&
        (states === undefined || states.has(e.state)) &&
        (query.target === undefined || e.target === query.target) &&
        (query.connector === undefined || e.connector === query.connector) &&
        (query.updatedAfter === undefined || e.updatedAt > query.updatedAfter) &&
        (keyset === undefined || afterKeyset(e.updatedAt, e.id, keyset, order)),
    );
    const sign = order === 'desc' ? -1 : 1;
    matching.sort((a, b) => sign * (a.updatedAt - b.updatedAt || compare(a.id, b.id)));
    return keysetPage(matching.slice(0, limit + 1).map(clone), limit);
  }

  async countEnvelopesByState(tenant?: string): Promise<Partial<Record<NormalizedState, number>>> {
    const counts: Partial<Record<NormalizedState, number>> = {};
    for (const [t, byState] of this.stateCounts) {
      if (tenant !== undefined && t !== tenant) continue;
      for (const [state, n] of byState) if (n > 0) counts[state] = (counts[state] ?? 0) + n;
    }
    return counts;
  }

  private *inStates(states: ReadonlySet<NormalizedState>): Iterable<Envelope> {
    for (const state of states)
      for (const id of this.idsByState.get(state) ?? []) yield this.envelopes.get(id)!;
  }

  /**
   * Kept on every write, as the SQL backends' envelope_counts: a count is per tenant and state, not per
   * job; and the ids in each state, the index a query by state reads.
   */
  private indexState(e: Pick<Envelope, 'id' | 'tenant' | 'state'>, delta: 1 | -1): void {
    let ids = this.idsByState.get(e.state);
    if (!ids) this.idsByState.set(e.state, (ids = new Set()));
    if (delta === 1) ids.add(e.id);
    else ids.delete(e.id);
    let byState = this.stateCounts.get(e.tenant);
    if (!byState) this.stateCounts.set(e.tenant, (byState = new Map()));
    const n = (byState.get(e.state) ?? 0) + delta;
    if (n === 0) byState.delete(e.state);
    else byState.set(e.state, n);
    if (byState.size === 0) this.stateCounts.delete(e.tenant);
  }

  async envelopeVersions(ids: readonly string[]): Promise<EnvelopeVersion[]> {
    const out: EnvelopeVersion[] = [];
    for (const id of ids) {
      const e = this.envelopes.get(id);
      if (e) out.push({ id, state: e.state, version: e.version, remoteId: e.remoteId });
    }
    return out;
  }

  async openTargets(): Promise<string[]> {
    const targets = new Set<string>();
    for (const e of this.envelopes.values()) if (!isTerminal(e.state)) targets.add(e.target);
    return [...targets];
  }

  async openJobsOfTarget(target: string): Promise<OpenJobsOfTarget> {
    const oldest = new Map<string, number>();
    for (const e of this.envelopes.values()) {
      if (e.target !== target || isTerminal(e.state)) continue;
      oldest.set(e.tenant, Math.min(oldest.get(e.tenant) ?? Infinity, e.createdAt));
    }
    return openJobsSummary([...oldest].map(([tenant, at]) => ({ tenant, oldest: at })));
  }

  async findOpenEnvelopesByRemote(
    target: string,
    remoteIds: readonly string[],
    contextIds: readonly string[],
  ): Promise<Envelope[]> {
    checkRemoteLookup(remoteIds, contextIds);
    const remote = new Set(remoteIds);
    const context = new Set(contextIds);
    return [...this.envelopes.values()]
      .filter(
        (e) =>
          e.target === target &&
          !isTerminal(e.state) &&
          (e.remoteId !== null ? remote.has(e.remoteId) : e.contextId !== null && context.has(e.contextId)),
      )
      .map(clone);
  }

  async listReconcileDue(target: string, query: ReconcileDueQuery): Promise<Envelope[]> {
    return [...this.envelopes.values()]
      .filter((e) => e.target === target && isReconcileDue(e, query))
      .sort((a, b) => a.updatedAt - b.updatedAt || compare(a.id, b.id))
      .map(clone);
  }

  async listUnwatchedEnvelopes(query: UnwatchedQuery): Promise<Page<Envelope>> {
    const limit = unwatchedLimit(query.limit);
    const after = decodeCursor(query.cursor) ?? START_KEYSET;
    const found = [...this.envelopes.values()]
      .filter((e) => {
        if (isTerminal(e.state) || !afterKeyset(e.updatedAt, e.id, after, 'asc')) return false;
        const lease = this.leases.get(watchLeaseName(e.id));
        return lease === undefined || lease.expiresAt <= query.now;
      })
      .sort((a, b) => a.updatedAt - b.updatedAt || compare(a.id, b.id))
      .slice(0, limit + 1);
    return keysetPage(found.map(clone), limit);
  }

  // --- event log -----------------------------------------------------------------------------

  async listEvents(query: EventQuery): Promise<EnvelopeEvent[]> {
    const limit = eventLimit(query.limit);
    const out: EnvelopeEvent[] = [];
    // seq starts at 1 and has no gaps here, so the start index is afterSeq itself.
    for (let i = Math.max(0, Math.floor(query.afterSeq)); i < this.events.length && out.length < limit; i++) {
      const event = this.events[i];
      if (event === undefined) continue;
      if (query.tenant !== undefined && event.tenant !== query.tenant) continue;
      if (query.envelopeId !== undefined && event.envelopeId !== query.envelopeId) continue;
      out.push(clone(event));
    }
    return out;
  }

  // --- retention -------------------------------------------------------------------------------

  async listExpiredEnvelopes(now: number, limit: number): Promise<ExpiredEnvelope[]> {
    const out: ExpiredEnvelope[] = [];
    for (const e of this.envelopes.values()) {
      if (e.retentionUntil !== null && e.retentionUntil <= now && isTerminal(e.state))
        out.push({ id: e.id, tenant: e.tenant, retentionUntil: e.retentionUntil });
    }
    out.sort((a, b) => a.retentionUntil - b.retentionUntil || compare(a.id, b.id));
    return out.slice(0, Math.max(0, limit));
  }

  async purgeEnvelopes(ids: readonly string[], now: number): Promise<string[]> {
    this.assertOpen();
    const gone = new Set<string>();
    for (const id of new Set(ids)) {
      const e = this.envelopes.get(id);
      if (!e || e.retentionUntil === null || e.retentionUntil > now || !isTerminal(e.state)) continue;
      this.envelopes.delete(id);
      this.indexState(e, -1);
      if (e.idempotencyKey !== null) this.idempotencyKeys.delete(pair(e.tenant, e.idempotencyKey));
      const lease = this.leases.get(`watch:${id}`);
      if (lease && lease.expiresAt <= now) this.leases.delete(`watch:${id}`);
      gone.add(id);
    }
    if (gone.size === 0) return [];
    for (let i = 0; i < this.events.length; i++) {
      const event = this.events[i];
      if (event !== undefined && gone.has(event.envelopeId)) this.events[i] = undefined;
    }
    for (const [key, envelopeId] of this.deliveries)
      if (envelopeId !== null && gone.has(envelopeId)) this.deliveries.delete(key);
    return [...gone];
  }

  async summarizeUsage(query: UsageQuery): Promise<TargetUsage[]> {
    const rows = [];
    for (const e of this.envelopes.values()) {
      if (query.tenant !== undefined && e.tenant !== query.tenant) continue;
      if (query.workflowId !== undefined && e.workflowId !== query.workflowId) continue;
      rows.push({
        target: e.target,
        terminal: isTerminal(e.state),
        state: e.state,
        acceptance: e.acceptance?.status ?? null,
        usage: e.usage,
        createdAt: e.createdAt,
      });
    }
    return summarize(rows);
  }

  // --- workflow budgets ----------------------------------------------------------------------

  async getWorkflowBudget(tenant: string, workflowId: string): Promise<WorkflowBudgetRecord | undefined> {
    return cloneOrUndefined(this.workflowBudgets.get(pair(tenant, workflowId)));
  }

  async putWorkflowBudget(
    record: WorkflowBudgetRecord,
    expectedVersion: number | null,
  ): Promise<WorkflowBudgetRecord> {
    this.assertOpen();
    const key = pair(record.tenant, record.workflowId);
    const current = this.workflowBudgets.get(key);
    if ((current?.version ?? null) !== expectedVersion)
      throw new VersionConflictError(`workflow budget ${record.workflowId}`);
    const stored = { ...clone(record), version: (expectedVersion ?? 0) + 1 };
    this.workflowBudgets.set(key, stored);
    return clone(stored);
  }

  // --- deliveries, leases, settings -------------------------------------------------------------

  async recordDelivery(delivery: InboundDelivery): Promise<boolean> {
    this.assertOpen();
    const key = pair(delivery.source, delivery.deliveryId);
    if (this.deliveries.has(key)) return false;
    this.deliveries.set(key, delivery.envelopeId);
    return true;
  }

  async acquireLease(name: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    this.assertOpen();
    const lease = this.leases.get(name);
    if (lease && lease.owner !== owner && lease.expiresAt > now) return false;
    this.leases.set(name, { owner, expiresAt: now + ttlMs });
    return true;
  }

  async acquireLeases(
    names: readonly string[],
    owner: string,
    now: number,
    ttlMs: number,
  ): Promise<string[]> {
    const held: string[] = [];
    for (const name of new Set(names)) if (await this.acquireLease(name, owner, now, ttlMs)) held.push(name);
    return held;
  }

  async bindLeaseOwner(): Promise<void> {
    // One process: nobody else can outlive or survive it.
  }

  async deadLeaseOwners(): Promise<string[]> {
    return [];
  }

  async releaseLease(name: string, owner: string): Promise<void> {
    if (this.leases.get(name)?.owner === owner) this.leases.delete(name);
  }

  async getSetting(key: string): Promise<string | undefined> {
    return this.settings.get(key);
  }

  async putSettingIfAbsent(key: string, value: string): Promise<string> {
    this.assertOpen();
    const existing = this.settings.get(key);
    if (existing !== undefined) return existing;
    this.settings.set(key, value);
    return value;
  }

  // --- API keys ----------------------------------------------------------------------------------

  async putApiKeyIfAbsent(key: ApiKeyRecord): Promise<ApiKeyRecord> {
    this.assertOpen();
    const existing = [...this.apiKeys.values()].find((k) => k.hash === key.hash) ?? this.apiKeys.get(key.id);
    if (existing) return { ...existing };
    this.apiKeys.set(key.id, { ...key });
    return { ...key };
  }

  async getApiKeyByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const found = [...this.apiKeys.values()].find((k) => k.hash === hash);
    return found ? { ...found } : undefined;
  }

  async listApiKeys(): Promise<ApiKeyRecord[]> {
    return [...this.apiKeys.values()]
      .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((k) => ({ ...k }));
  }

  async revokeApiKey(id: string, now: number): Promise<ApiKeyRecord | undefined> {
    this.assertOpen();
    const key = this.apiKeys.get(id);
    if (!key) return undefined;
    if (key.revokedAt === null) key.revokedAt = now;
    return { ...key };
  }

  // --- change feed -----------------------------------------------------------------------------

  onChange(listener: (change: ChangeNotice) => void): () => void {
    return this.hub.subscribe(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.hub.clear();
  }

  // --- internals -------------------------------------------------------------------------------

  protected assertOpen(): void {
    if (this.closed) throw new TaskplaneError('unavailable', 'store is closed', { retryable: false });
  }

  private appendEvents(events: NewEnvelopeEvent[]): EnvelopeEvent[] {
    return events.map((event) => {
      const stored = clone(event) as EnvelopeEvent;
      stored.seq = ++this.eventSeq;
      this.events.push(stored);
      return stored;
    });
  }
}
