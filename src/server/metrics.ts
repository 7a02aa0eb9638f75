import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { Plane } from '../plane/plane.ts';

/**
 * /metrics in Prometheus text format. Values are read from plane.signals() at scrape time (one store
 * scan of active envelopes), so the lifecycle signals (docs/a2a-notes.md) are what Prometheus sees: orphans,
 * observation delay per mechanism, input/auth-required by age, duplicates absorbed, reused messageIds,
 * TaskNotFound on own tasks, and requests per task. This is the operator's view: the process scope, all
 * tenants together (plane.signals() without a tenant); /v1/signals shows a tenant only its own jobs.
 */
export function createMetrics(plane: Plane, options: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (options.defaultMetrics ?? true)
    collectDefaultMetrics({ register: registry, prefix: 'taskplane_process_' });
  let pending: ReturnType<Plane['signals']> | null = null;
  // One signals() per scrape however many gauges ask.
  const signals = () => (pending ??= plane.signals().finally(() => setTimeout(() => (pending = null), 0)));
  const gauge = (
    name: string,
    help: string,
    labelNames: string[],
    fill: (g: Gauge, s: Awaited<ReturnType<Plane['signals']>>) => void,
  ) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        this.reset();
        fill(this, await signals());
      },
    });

  gauge('taskplane_tasks', 'Tracked tasks by normalized state', ['state'], (g, s) => {
    for (const [state, n] of Object.entries(s.byState)) g.set({ state }, n ?? 0);
  });
  gauge('taskplane_orphans', 'Non-terminal tasks past expected duration plus margin', [], (g, s) =>
    g.set(s.orphans),
  );
  gauge(
    'taskplane_requests_total',
    'Remote calls made, by kind (requests per task is the cost unit the lab reports)',
    ['kind'],
    (g, s) => {
      for (const [kind, n] of Object.entries(s.requests.byKind)) g.set({ kind }, n);
    },
  );
  gauge('taskplane_requests_per_task', 'Remote calls per tracked task', [], (g, s) =>
    g.set(s.requests.perTask ?? 0),
  );
  gauge(
    'taskplane_observation_delay_ms',
    'Remote status timestamp to processing, per mechanism',
    ['source', 'quantile'],
    (g, s) => {
      for (const [source, d] of Object.entries(s.observationDelay)) {
        if (!d) continue;
        if (d.p50Ms !== null) g.set({ source, quantile: '0.5' }, d.p50Ms);
        if (d.p99Ms !== null) g.set({ source, quantile: '0.99' }, d.p99Ms);
      }
    },
  );
  gauge('taskplane_input_required', 'Tasks waiting for input, by age bucket', ['age'], (g, s) => {
    for (const [age, n] of Object.entries(s.inputRequiredByAge)) g.set({ age }, n);
  });
  gauge('taskplane_auth_required', 'Tasks waiting for authorization, by age bucket', ['age'], (g, s) => {
    for (const [age, n] of Object.entries(s.authRequiredByAge)) g.set({ age }, n);
  });
  gauge(
    'taskplane_duplicates_absorbed_total',
    'Duplicate deliveries and observations absorbed',
    ['kind'],
    (g, s) => {
      g.set({ kind: 'webhook' }, s.duplicatesAbsorbed.webhook);
      g.set({ kind: 'observation' }, s.duplicatesAbsorbed.observation);
    },
  );
  const simple: Array<[string, string, (s: Awaited<ReturnType<Plane['signals']>>) => number]> = [
    [
      'taskplane_reused_message_ids_total',
      'Starts sent with a messageId used before',
      (s) => s.reusedMessageIds,
    ],
    [
      'taskplane_task_not_found_own_total',
      'TaskNotFound on tasks we created (agent lost state)',
      (s) => s.taskNotFoundOwn,
    ],
    ['taskplane_stream_drops_total', 'Streams that dropped', (s) => s.streamDrops],
    ['taskplane_stream_reattaches_total', 'SubscribeToTask reattaches after a drop', (s) => s.reattaches],
    ['taskplane_resubmitted_total', 'Lost tasks resubmitted', (s) => s.resubmitted],
    ['taskplane_escalated_total', 'Lost tasks escalated', (s) => s.escalated],
    ['taskplane_webhooks_rejected_total', 'Webhooks refused for bad credentials', (s) => s.webhooksRejected],
  ];
  for (const [name, help, get] of simple) gauge(name, help, [], (g, s) => g.set(get(s)));
  return registry;
}
