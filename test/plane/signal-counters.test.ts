import { describe, expect, it } from 'vitest';
import { SignalCounters } from '../../src/plane/signals.ts';

describe('SignalCounters memory (a long-running plane holds per-job entries for open jobs only)', () => {
  it('lets go of finished jobs, keeps counting them, and keeps the recent ones readable', () => {
    const c = new SignalCounters();
    const jobs = 25_000;
    for (let i = 0; i < jobs; i++) {
      const id = `env-${i}`;
      const tenant = i % 2 ? 'A' : 'B';
      c.track(id, tenant);
      c.request('start', { id, tenant });
      c.request('get', { id });
      c.finished(id, tenant);
    }
    c.track('still-open', 'A');
    c.request('start', { id: 'still-open' });

    // Bounded: the open job plus at most the recent finished ones' request counts.
    expect(c.retainedJobs()).toBeLessThanOrEqual(10_001);
    const all = c.snapshot();
    expect(all.requests.tasksTracked).toBe(jobs + 1);
    expect(all.requests.total).toBe(2 * jobs + 1);
    expect(c.snapshot('A').requests.tasksTracked).toBe(jobs / 2 + 1);
    // A request naming only the job id still reaches its tenant while the job is open.
    expect(c.snapshot('A').requests.total).toBe(jobs + 1);
    expect(c.requestsFor(`env-${jobs - 1}`)).toBe(2);
    expect(c.requestsFor('env-0')).toBe(0);
    expect(c.requestsFor('still-open')).toBe(1);
  });

  it('counts a job tracked twice (created, then recovered) once', () => {
    const c = new SignalCounters();
    c.track('e', 'A');
    c.track('e', 'A');
    c.finished('e', 'A');
    c.finished('e', 'A');
    expect(c.snapshot().requests.tasksTracked).toBe(1);
  });
});
