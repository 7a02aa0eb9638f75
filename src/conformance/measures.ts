import type { JobEvidence, Measure, RowReport } from './report.ts';
import type { RowKit } from './row-kit.ts';
import type { WireCall } from './wire-proxy.ts';

/** The failure matrix's measures for a run, from the rows' samples and evidence; null where this run cannot tell. */
export function aggregateMeasures(
  kits: RowKit[],
  rows: RowReport[],
  calls: WireCall[],
): Record<string, Measure> {
  const all = (name: string) => kits.flatMap((k) => k.samples[name] ?? []);
  const sum = (name: string) => all(name).reduce((a, b) => a + b, 0);
  const median = (name: string): number | null => {
    const v = all(name).sort((a, b) => a - b);
    if (v.length === 0) return null;
    return v[Math.floor((v.length - 1) / 2)]!;
  };
  const jobs = rows.flatMap((r) => r.jobs);
  const n = jobs.length;
  const rate = (count: number, of: number) => (of === 0 ? null : Math.round((count / of) * 1000) / 1000);
  const outcomeChecks = rows
    .flatMap((r) => r.checks)
    .filter((c) => c.name.endsWith(': one outcome recorded'));
  const attempts = sum('unauthorizedAttempts');
  const ms = (name: string, note: string): Measure => ({ value: median(name), unit: 'ms (median)', note });
  const jobRequests = jobs.reduce((a, j) => a + j.requests, 0);
  return {
    taskStartLatency: ms('startLatencyMs', 'job created → the agent named its task'),
    timeToFirstProgress: ms('firstProgressMs', 'job created → first state past accepted'),
    completionNotificationDelay: ms(
      'notifyDelayMs',
      "the agent's final status timestamp → the engine recorded it (includes clock skew between the two)",
    ),
    duplicateDeliveryRate: {
      value: rate(outcomeChecks.filter((c) => !c.ok).length, outcomeChecks.length),
      unit: 'share of jobs',
      note: `jobs whose outcome was recorded more than once; ${sum('duplicatesAbsorbed')} duplicate push deliveries were absorbed`,
    },
    lostEventRate: {
      value: rate(
        n - jobs.filter((j) => ['succeeded', 'failed', 'cancelled', 'expired'].includes(j.finalState)).length,
        n,
      ),
      unit: 'share of jobs',
      note: 'jobs whose final outcome the engine never learned within the row',
    },
    recoveryTime: ms('recoveryMs', 'hook done → every job of the row final again (restart and deploy rows)'),
    cancellationLatency: ms('cancelLatencyMs', 'cancel asked while working → cancelled recorded'),
    unauthorizedAccessRate: {
      value: attempts === 0 ? null : rate(sum('unauthorizedAnswered'), attempts),
      unit: 'share of attempts',
      note:
        attempts === 0
          ? 'not measured: needs --other-header or --revoke-cmd'
          : "reads of the run's tasks with another caller's or revoked credentials that the agent answered",
    },
    ambiguousOutcomeRate: {
      value: rate(jobs.filter((j) => j.finalState === 'unknown').length, n),
      unit: 'share of jobs',
      note: 'jobs left unknown',
    },
    acceptedTaskRate: {
      value: rate(sum('accepted'), sum('jobs')),
      unit: 'share of jobs',
      note: 'jobs the agent took on (answered with a task); conformance jobs set no business acceptance schema',
    },
    costPerAcceptedCompletion: costPerCompletion(jobs),
    requestsPerJob: {
      value: n === 0 ? null : Math.round((jobRequests / n) * 100) / 100,
      unit: 'requests',
      note: `requests naming a job's context or task, per job; ${calls.length} requests in all, ${calls.filter((c) => c.method === 'ListTasks').length} of them ListTasks pages`,
    },
    duplicateTasks: {
      value: n === 0 ? null : jobs.filter((j) => j.remoteTaskIds.length > 1).length,
      unit: 'jobs',
      note: 'jobs for which the agent created more than one task',
    },
  };
}

/**
 * Everything the run's tasks cost, as the agent reported it, over the jobs that ended succeeded
 * (conformance jobs set no acceptance schema, so a success is an accepted completion). Failed, cancelled
 * and duplicated work counts in the cost, not in the completions. In the first unit the agent reported;
 * the note gives every unit.
 */
function costPerCompletion(jobs: JobEvidence[]): Measure {
  const reported = jobs.filter((j) => j.usage !== null);
  if (reported.length === 0)
    return {
      value: null,
      unit: 'usage unit',
      note: 'not measured: the agent reported no usage (metadata.usage on its tasks or artifacts)',
    };
  const total: Record<string, number> = {};
  for (const j of reported)
    for (const [unit, v] of Object.entries(j.usage!)) total[unit] = (total[unit] ?? 0) + v;
  const completions = jobs.filter((j) => j.finalState === 'succeeded').length;
  const units = Object.keys(total);
  const per = (unit: string) => Math.round((total[unit]! / completions) * 100) / 100;
  const all = units.map((u) => `${total[u]} ${u}`).join(', ');
  return {
    value: completions === 0 ? null : per(units[0]!),
    unit: units[0]!,
    note:
      completions === 0
        ? `not measured: no job completed (reported usage: ${all})`
        : `usage the agent reported for the run's tasks (${all}; ${reported.length} of ${jobs.length} jobs reported) over ${completions} accepted completions${units.length > 1 ? `; per completion: ${units.map((u) => `${per(u)} ${u}`).join(', ')}` : ''}`,
  };
}
