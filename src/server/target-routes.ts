import type { Hono } from 'hono';
import type { Connector } from '../connectors/connector.ts';
import type { Envelope } from '../core/envelope.ts';
import { TaskplaneError } from '../core/errors.ts';
import { isTerminal, type NormalizedState } from '../core/states.ts';
import type { Plane } from '../plane/plane.ts';
import { ACTIVE_STATES } from '../plane/reconciler.ts';
import type { EnvelopeStore } from '../store/store.ts';
import type { ServerEnv } from './task-routes.ts';

/**
 * GET /v1/targets and /v1/targets/{name}: the targets this plane tracks jobs on, as an operator reads
 * them. What a target is (kind, capabilities, the A2A agent card it published) is the same for every
 * tenant, as any key may create jobs on any target; everything about jobs (counts, reconciliation,
 * delays, failures) is the asking tenant's own.
 */
export interface TargetRouteDeps {
  plane: Plane;
  store: EnvelopeStore;
  /** The configured targets: name and connector (a target added at run time shows up at once). */
  targets: () => Iterable<[string, Connector]>;
}

/** Failures listed per target: enough to see what is wrong, bounded per request. */
const RECENT_FAILURES = 5;
/** Text the remote wrote into its card is cut here: a card is theirs, the answer's size is ours. */
const CARD_TEXT = 500;
const CARD_SKILLS = 50;
const FAILED_STATES: NormalizedState[] = ['failed', 'unknown', 'lost'];
/** Open jobs read per target and request: past it the counts say `capped` (the oldest are counted). */
const ACTIVE_READ = 2000;
const PAGE = 500;

/** The tenant's open jobs on one target, oldest first, at most ACTIVE_READ of them. */
async function openJobs(store: EnvelopeStore, tenant: string, target: string) {
  const out: Envelope[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.listEnvelopes({
      tenant,
      target,
      states: ACTIVE_STATES,
      order: 'asc',
      limit: PAGE,
      ...(cursor ? { cursor } : {}),
    });
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && out.length < ACTIVE_READ);
  return { jobs: out.slice(0, ACTIVE_READ), capped: cursor !== undefined };
}

const cut = (v: unknown): string | null =>
  typeof v === 'string' ? (v.length > CARD_TEXT ? `${v.slice(0, CARD_TEXT - 1)}…` : v) : null;

/** The parts of an A2A agent card an operator reads; null for kinds that publish none. */
function cardView(connector: Connector): Record<string, unknown> | null {
  const card = (connector as { card?: unknown }).card;
  if (!card || typeof card !== 'object') return null;
  const c = card as Record<string, unknown>;
  const caps = c.capabilities && typeof c.capabilities === 'object' ? c.capabilities : {};
  const flag = (name: string) => (caps as Record<string, unknown>)[name] === true;
  const provider = c.provider as { organization?: unknown } | undefined;
  const skills = Array.isArray(c.skills) ? c.skills.slice(0, CARD_SKILLS) : [];
  return {
    name: cut(c.name),
    description: cut(c.description),
    version: cut(c.version),
    provider: cut(provider?.organization),
    capabilities: { streaming: flag('streaming'), pushNotifications: flag('pushNotifications') },
    skills: skills
      .filter((s): s is Record<string, unknown> => !!s && typeof s === 'object')
      .map((s) => ({ id: cut(s.id) ?? '', name: cut(s.name), description: cut(s.description) })),
  };
}

async function targetView(deps: TargetRouteDeps, tenant: string, name: string, connector: Connector) {
  const caps = connector.capabilities;
  const { jobs: active, capped } = await openJobs(deps.store, tenant, name);
  const byState: Partial<Record<NormalizedState, number>> = {};
  for (const env of active) byState[env.state] = (byState[env.state] ?? 0) + 1;
  const ended = await deps.store.listEnvelopes({
    tenant,
    target: name,
    states: FAILED_STATES,
    limit: RECENT_FAILURES,
  });
  // A start or cancel that cannot reach the remote, on an open job, is the target's trouble too.
  const failing = active
    .filter((e) => e.lastError)
    .sort((a, b) => b.lastError!.at - a.lastError!.at)
    .map((e) => ({
      taskId: e.id,
      state: e.state,
      at: e.lastError!.at,
      code: e.lastError!.code,
      message: e.lastError!.message,
    }));
  const finished = ended.items.map((e) => ({
    taskId: e.id,
    state: e.state,
    at: e.updatedAt,
    code: e.error?.code ?? e.state,
    message: e.error?.message ?? e.reconciliation?.note ?? e.statusMessage ?? e.state,
  }));
  const activity = deps.plane.targetActivity(tenant, name);
  return {
    name,
    kind: connector.kind,
    capabilities: {
      idempotentStart: caps.idempotentStart,
      list: caps.list,
      stream: caps.stream,
      streamResume: caps.streamResume,
      push: caps.push,
      input: caps.input,
      cancel: caps.cancel,
      pollIntervalMs: caps.pollIntervalMs ?? null,
      notFound: caps.notFound ?? 'lost',
    },
    revision: connector.revision ?? null,
    inputSchema: connector.inputSchema ?? null,
    card: cardView(connector),
    tasks: { active: active.length, byState, capped },
    lastReconciledAt: activity.lastReconciledAt,
    lastError: activity.lastError,
    notificationDelay: activity.notificationDelay,
    recentFailures: [...failing, ...finished]
      .sort((a, b) => b.at - a.at)
      .slice(0, RECENT_FAILURES)
      .map((f) => ({ ...f, terminal: isTerminal(f.state) })),
  };
}

export function registerTargetRoutes(app: Hono<ServerEnv>, deps: TargetRouteDeps): void {
  app.get('/v1/targets', async (c) => {
    const tenant = c.get('tenant');
    const all = [...deps.targets()].sort(([a], [b]) => a.localeCompare(b));
    const targets = [];
    for (const [name, connector] of all) targets.push(await targetView(deps, tenant, name, connector));
    return c.json({ targets });
  });

  app.get('/v1/targets/:name', async (c) => {
    const name = c.req.param('name');
    const connector = [...deps.targets()].find(([n]) => n === name)?.[1];
    if (!connector) throw new TaskplaneError('not_found', `target '${name.slice(0, 64)}' is not configured`);
    return c.json(await targetView(deps, c.get('tenant'), name, connector));
  });
}
