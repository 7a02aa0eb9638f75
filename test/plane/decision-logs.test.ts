import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './harness.ts';

/**
 * The engine's decisions about one job (a timeout firing, a cancel delivered, refused or retried, a job
 * the remote lost, escalated or resubmitted) each write one structured JSON line (pino) that carries
 * the envelope id, the target and the tenant, so an operator can follow one job, target or tenant
 * through the log. The lines are read back as pino writes them.
 */
const T = 'tenant-logs';
let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

interface Line {
  level: number;
  msg: string;
  envelopeId?: string;
  target?: string;
  tenant?: string;
  decision?: string;
}

function capture() {
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const text of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

const about = (lines: Line[], id: string, msg: RegExp) =>
  lines.filter((l) => l.envelopeId === id && msg.test(l.msg));

describe('decision log lines', () => {
  it('a timeout firing and the cancel it sends, each one line naming job, target and tenant', async () => {
    const { logger, lines } = capture();
    h = await harness({ reconcile: { intervalMs: 600_000 } }, {}, 1, {}, { logger });
    const { envelope } = await h.plane.create(
      { tenant: T, target: 'fake', input: 'w', timeoutMs: 5_000 },
      { wait: 'started' },
    );
    await h.advance(5_500);
    const fields = { envelopeId: envelope.id, target: 'fake', tenant: T };
    expect(about(lines, envelope.id, /timed out/)).toEqual([
      expect.objectContaining({ ...fields, decision: 'cancel', msg: 'job timed out; cancelling' }),
    ]);
    expect(about(lines, envelope.id, /^cancel delivered$/)).toEqual([
      expect.objectContaining({ ...fields, decision: 'delivered' }),
    ]);
  });

  it('a cancel call that fails is logged as retried, one not cancelable as read for its outcome', async () => {
    const { logger, lines } = capture();
    h = await harness({ reconcile: { intervalMs: 600_000 } }, {}, 1, {}, { logger });
    const create = async () =>
      (await h!.plane.create({ tenant: T, target: 'fake', input: 'w' }, { wait: 'started' })).envelope;
    const first = await create();
    h.remote.failNext('cancel', 'unavailable');
    await h.plane.cancel(T, first.id);
    expect(about(lines, first.id, /cancel call failed/)).toEqual([
      expect.objectContaining({ target: 'fake', tenant: T, decision: 'retry', level: 40 }),
    ]);
    const second = await create();
    h.remote.failNext('cancel', 'failed_precondition');
    await h.plane.cancel(T, second.id);
    expect(about(lines, second.id, /not cancelable/)).toEqual([
      expect.objectContaining({ target: 'fake', tenant: T, decision: 'read_outcome' }),
    ]);
  });

  it('a job the remote lost: one line for the escalation, or for the resubmission and its start', async () => {
    const escalate = capture();
    h = await harness({ lostPolicy: 'escalate' }, {}, 1, {}, { logger: escalate.logger });
    const { envelope: gone } = await h.plane.create(
      { tenant: T, target: 'fake', input: 'w' },
      { wait: 'started' },
    );
    h.remote.forget();
    await h.plane.reconcileNow();
    await h.settle();
    expect((await h.plane.get(T, gone.id)).state).toBe('lost');
    expect(about(escalate.lines, gone.id, /no longer knows/)).toEqual([
      expect.objectContaining({ target: 'fake', tenant: T, decision: 'escalate' }),
    ]);
    await h.close();

    const resubmit = capture();
    h = await harness({ lostPolicy: 'resubmit' }, {}, 1, {}, { logger: resubmit.logger });
    const { envelope: again } = await h.plane.create(
      { tenant: T, target: 'fake', input: 'w' },
      { wait: 'started' },
    );
    h.remote.forget();
    await h.plane.reconcileNow();
    await h.settle();
    expect(about(resubmit.lines, again.id, /no longer knows/)).toEqual([
      expect.objectContaining({ target: 'fake', tenant: T, decision: 'resubmit' }),
    ]);
    expect(about(resubmit.lines, again.id, /resubmitted/)).toEqual([
      expect.objectContaining({ target: 'fake', tenant: T, decision: 'resubmitted' }),
    ]);
  });
});
