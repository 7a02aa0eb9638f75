import { defineAgent, type ExecutionContext } from './agent-api.ts';

/**
 * The built-in demo agent, scriptable from a data part of the user message so tests and the lab can
 * drive it:
 *
 * `{"durationMs": 3000, "steps": 3, "askInput": "Which edition?", "fail": false, "artifactChunks": 2}`
 *
 * Any subset. It works through `steps` status updates spread over `durationMs`, asks `askInput` half way
 * (the task waits in INPUT_REQUIRED), streams one artifact in `artifactChunks` chunks, then completes,
 * or fails when `fail` is true. A plain text message gets a short echo task. It is resumable: progress
 * is checkpointed after every step, so a host restart continues where it stopped.
 */
export interface DemoScript {
  durationMs: number;
  steps: number;
  askInput?: string;
  fail: boolean;
  artifactChunks: number;
}

export function demoScript(data: unknown, text: string): DemoScript {
  const d = data !== null && typeof data === 'object' ? (data as Record<string, unknown>) : undefined;
  if (!d) return { durationMs: 0, steps: 0, fail: false, artifactChunks: text ? 1 : 0 };
  const num = (v: unknown, dflt: number, max: number) =>
    typeof v === 'number' && Number.isFinite(v) ? Math.min(Math.max(0, Math.floor(v)), max) : dflt;
  return {
    durationMs: num(d.durationMs, 3000, 24 * 3600_000),
    steps: num(d.steps, 3, 1000),
    ...(typeof d.askInput === 'string' && d.askInput !== '' ? { askInput: d.askInput } : {}),
    fail: d.fail === true,
    artifactChunks: num(d.artifactChunks, 1, 1000),
  };
}

interface Progress {
  step: number;
  chunk: number;
  answer?: string;
}

export const demoAgent = defineAgent({
  card: {
    name: 'taskplane demo agent',
    description:
      'Scriptable demo agent: send a data part {"durationMs":3000,"steps":3,"askInput":"Which edition?","fail":false,"artifactChunks":2}, or plain text for an echo.',
    version: '1.0.0',
    skills: [
      {
        id: 'demo',
        name: 'Scripted long-running task',
        description:
          'Works in steps, may ask for input, streams an artifact in chunks, completes or fails on request.',
        tags: ['demo', 'test'],
        examples: ['{"durationMs":3000,"steps":3,"askInput":"Which edition?","artifactChunks":2}', 'hello'],
      },
    ],
  },
  resumable: true,
  async execute(ctx: ExecutionContext) {
    const script = demoScript(ctx.data, ctx.text);
    if (!ctx.data) {
      await ctx.artifact({ artifactId: 'echo', name: 'echo', parts: [{ text: ctx.text }], lastChunk: true });
      return `echo: ${ctx.text}`;
    }
    const p: Progress = { step: 0, chunk: 0, ...(ctx.checkpoint as Partial<Progress> | undefined) };
    // Show WORKING at once (the host otherwise moves SUBMITTED → WORKING with the first change).
    if (!ctx.resumed) await ctx.status(`starting: ${script.steps} steps over ${script.durationMs} ms`);
    const stepMs = script.steps > 0 ? script.durationMs / script.steps : 0;
    const askAt = script.askInput ? Math.floor(script.steps / 2) : -1;
    for (;;) {
      if (p.step === askAt && p.answer === undefined && script.askInput) {
        p.answer = (await ctx.askInput(script.askInput)).text;
        await ctx.save({ ...p });
      }
      if (p.step >= script.steps) break;
      if (stepMs > 0) await ctx.sleep(stepMs);
      p.step++;
      await ctx.status(`step ${p.step}/${script.steps}`);
      await ctx.save({ ...p });
    }
    if (script.askInput && p.answer === undefined) {
      p.answer = (await ctx.askInput(script.askInput)).text;
      await ctx.save({ ...p });
    }
    if (script.fail) {
      await ctx.fail('The demo agent was asked to fail.');
      return;
    }
    while (p.chunk < script.artifactChunks) {
      p.chunk++;
      const last = p.chunk === script.artifactChunks;
      await ctx.artifact({
        artifactId: 'result',
        name: 'result',
        parts: [{ text: `chunk ${p.chunk}/${script.artifactChunks}${p.answer ? ` (${p.answer})` : ''}` }],
        ...(p.chunk > 1 ? { append: true } : {}),
        ...(last ? { lastChunk: true } : {}),
      });
      await ctx.save({ ...p });
    }
    return `done after ${script.steps} steps`;
  },
});
