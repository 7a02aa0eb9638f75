import type { TimelineJob } from '../../src/lab/ledger.ts';
import type { RunResult } from '../../src/lab/run.ts';
import { MINUTE_MS, WORLD } from '../../src/lab/world-model.ts';

/**
 * Draws the sixteen shown tasks as horizontal bars over the run's time (docs/lab.md, "The page"): blue
 * working, amber waiting for input, pink duplicate tasks (the lower half of a row), a green dot where
 * the client learned the outcome, a white cross at each stream drop, a question mark when never learned.
 * Rows picked because something went wrong carry a red label saying what (lost, unknown, duplicate,
 * input missed).
 */
const COLORS = {
  working: '#3b82f6',
  input: '#f59e0b',
  dup: '#ec4899',
  dupInput: '#f9a8d4',
  learned: '#22c55e',
  grid: '#1e293b',
  text: '#94a3b8',
};

const PROBLEM_LABELS: Record<NonNullable<TimelineJob['problem']>, string> = {
  lost: 'outcome lost',
  unknown: 'outcome unknown',
  duplicate: 'duplicate',
  missed_input: 'input missed',
};

export function drawTimeline(canvas: HTMLCanvasElement, result: RunResult): void {
  const ctx = canvas.getContext('2d');
  if (!ctx) return;
  const W = canvas.width;
  const H = canvas.height;
  const left = 56;
  const right = 24;
  const top = 22;
  const bottom = 26;
  const rows = result.timeline.length || 1;
  const rowH = (H - top - bottom) / rows;
  const endMs = Math.max(result.endedMs, 130 * MINUTE_MS);
  const x = (ms: number) => left + (Math.min(ms, endMs) / endMs) * (W - left - right);

  ctx.clearRect(0, 0, W, H);
  ctx.fillStyle = '#0f172a';
  ctx.fillRect(0, 0, W, H);
  ctx.font = '11px system-ui, sans-serif';

  // Time grid every 30 min; the outage window and the restart when they are on.
  const f = result.settings.faults;
  if (f.outage) {
    ctx.fillStyle = 'rgba(239, 68, 68, 0.12)';
    ctx.fillRect(
      x(WORLD.outageStartMs),
      top,
      x(WORLD.outageEndMs) - x(WORLD.outageStartMs),
      H - top - bottom,
    );
    ctx.fillStyle = '#fca5a5';
    ctx.fillText('receiver outage', x(WORLD.outageStartMs) + 2, top - 8);
  }
  for (let m = 0; m * MINUTE_MS <= endMs; m += 30) {
    ctx.strokeStyle = COLORS.grid;
    ctx.beginPath();
    ctx.moveTo(x(m * MINUTE_MS), top);
    ctx.lineTo(x(m * MINUTE_MS), H - bottom);
    ctx.stroke();
    ctx.fillStyle = COLORS.text;
    ctx.fillText(`${m} min`, x(m * MINUTE_MS) - 12, H - 8);
  }
  if (f.restart) {
    ctx.strokeStyle = '#f87171';
    ctx.setLineDash([4, 3]);
    ctx.beginPath();
    ctx.moveTo(x(WORLD.restartAtMs), top - 4);
    ctx.lineTo(x(WORLD.restartAtMs), H - bottom);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = '#fca5a5';
    ctx.fillText(
      'agent restart',
      x(WORLD.restartAtMs) + 3,
      top - 8 + (f.outage ? 0 : 0) + (f.outage ? 10 : 0),
    );
  }

  result.timeline.forEach((job, i) => {
    const y = top + i * rowH;
    ctx.fillStyle = COLORS.text;
    ctx.fillText(`#${job.job}`, 6, y + rowH / 2 + 4);
    const half = Math.max(3, rowH * 0.36);
    for (const attempt of job.attempts) {
      const yy = attempt.dup ? y + rowH * 0.52 : y + rowH * 0.1;
      for (const seg of attempt.segments) {
        const to = seg.toMs ?? result.endedMs;
        const color = attempt.dup
          ? seg.kind === 'input'
            ? COLORS.dupInput
            : COLORS.dup
          : seg.kind === 'input'
            ? COLORS.input
            : COLORS.working;
        ctx.fillStyle = color;
        ctx.globalAlpha = attempt.dup ? 0.55 : 1;
        ctx.fillRect(x(seg.fromMs), yy, Math.max(1.5, x(to) - x(seg.fromMs)), half);
      }
      ctx.globalAlpha = 1;
    }
    ctx.strokeStyle = '#ffffff';
    ctx.lineWidth = 1.6;
    for (const d of job.dropsMs) {
      const cx = x(d);
      const cy = y + rowH * 0.28;
      ctx.beginPath();
      ctx.moveTo(cx - 3.5, cy - 3.5);
      ctx.lineTo(cx + 3.5, cy + 3.5);
      ctx.moveTo(cx + 3.5, cy - 3.5);
      ctx.lineTo(cx - 3.5, cy + 3.5);
      ctx.stroke();
    }
    ctx.lineWidth = 1;
    if (job.problem) {
      // Rows are chosen for what went wrong (lab/ledger.ts shown()): say what, at the row's right end.
      const label = PROBLEM_LABELS[job.problem];
      ctx.fillStyle = '#fca5a5';
      ctx.fillText(label, W - right - 4 - ctx.measureText(label).width, y + rowH / 2 + 4);
    }
    if (job.learnedMs !== null) {
      ctx.fillStyle = COLORS.learned;
      ctx.beginPath();
      ctx.arc(x(job.learnedMs), y + rowH * 0.28, 4.5, 0, Math.PI * 2);
      ctx.fill();
    } else {
      ctx.fillStyle = '#ffffff';
      ctx.font = 'bold 14px system-ui, sans-serif';
      ctx.fillText('?', W - right + 6, y + rowH / 2 + 5);
      ctx.font = '11px system-ui, sans-serif';
    }
  });
}
