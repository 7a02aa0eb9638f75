import { defineAgent, type ExecutionContext } from './agent-api.ts';
import { defineTool, type ToolContext } from './tool-api.ts';

/**
 * The built-in demo agent, scriptable from a data part of the user message so tests and the lab can
 * drive it:
 *
 * `{"durationMs": 3000, "steps": 3, "askInput": "Which edition?", "fail": false, "artifactChunks": 2}`
 *
 * Any subset (and `sideEffectMs`, below). It works through `steps` status updates spread over
 * `durationMs`, asks `askInput` half way (the task waits in INPUT_REQUIRED), streams one artifact in
 * `artifactChunks` chunks (each carrying `metadata.usage`, the steps worked), then completes, or fails
 * when `fail` is true. With `sideEffectMs` it performs one side effect after its steps, before its
 * output: a journaled step that takes that long and that a cancel does not stop once begun (as a
 * payment or an email already sent), announced by the status `side effect started` and recorded as the
 * artifact `receipt` (A2A) or `receipt` in the tool's structured result (MCP). A plain text message
 * gets a short echo task. It is resumable: progress is checkpointed after every step, so a host restart
 * continues where it stopped.
 *
 * The same script runs as the MCP tool `demo_task` (at `/mcp`) with the script as its arguments: it
 * asks by elicitation, answers with a text result, and a `fail` ends it with a tool error (`isError`).
 */
export interface DemoScript {
  durationMs: number;
  steps: number;
  askInput?: string;
  fail: boolean;
  artifactChunks: number;
  sideEffectMs?: number;
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
    ...(typeof d.sideEffectMs === 'number' && d.sideEffectMs > 0
      ? { sideEffectMs: num(d.sideEffectMs, 0, 3600_000) }
      : {}),
  };
}

interface Progress {
  step: number;
  chunk: number;
  answer?: string;
  receipt?: Receipt;
}

/** What the side effect leaves: its idempotency key and when it was done. */
interface Receipt {
  key: string;
  doneAt: string;
}

/** The ctx calls a side effect needs (A2A execute and MCP tool alike). */
interface EffectRun {
  status(text: string): Promise<void>;
  step<T>(name: string, fn: (attempt: { key: string }) => Promise<T>): Promise<T>;
}

/**
 * The script's side effect: journaled, so a resumed run does not do it twice, and deaf to the task's
 * signal, since an outside system that has the request goes on whatever the task does (a real timer:
 * the outside system does not run on the host's clock).
 */
async function sideEffect(script: DemoScript, p: Progress, ctx: EffectRun): Promise<void> {
  if (!script.sideEffectMs || p.receipt) return;
  const ms = script.sideEffectMs;
  p.receipt = await ctx.step('side-effect', async ({ key }) => {
    // Announced last, after the step's own "attempt started" status, so it is the status while it runs.
    await ctx.status('side effect started');
    await new Promise((r) => setTimeout(r, ms));
    return { key, doneAt: new Date().toISOString() };
  });
}

/** What the step loop needs of a task, whichever protocol it runs under. */
interface DemoRun {
  status(text: string): Promise<void>;
  sleep(ms: number): Promise<void>;
  save(checkpoint: Record<string, unknown>): Promise<void>;
  /** Asks the caller; resolves with the answer's text. */
  ask(prompt: string): Promise<string>;
}

/**
 * The script's steps from its checkpoint (a resumed run goes on from there): a status per step, spread
 * over durationMs, and the question half way (or at the end, for a script with no steps). Returns the
 * progress, for the output that follows.
 */
async function workThrough(
  script: DemoScript,
  task: { checkpoint: Record<string, unknown> | undefined; resumed: boolean },
  run: DemoRun,
): Promise<Progress> {
  const p: Progress = { step: 0, chunk: 0, ...(task.checkpoint as Partial<Progress> | undefined) };
  // Show WORKING at once (the A2A host otherwise moves SUBMITTED → WORKING with the first change).
  if (!task.resumed) await run.status(`starting: ${script.steps} steps over ${script.durationMs} ms`);
  const stepMs = script.steps > 0 ? script.durationMs / script.steps : 0;
  const askAt = script.askInput ? Math.floor(script.steps / 2) : -1;
  const ask = async (prompt: string) => {
    p.answer = await run.ask(prompt);
    await run.save({ ...p });
  };
  for (;;) {
    if (p.step === askAt && p.answer === undefined && script.askInput) await ask(script.askInput);
    if (p.step >= script.steps) break;
    if (stepMs > 0) await run.sleep(stepMs);
    p.step++;
    await run.status(`step ${p.step}/${script.steps}`);
    await run.save({ ...p });
  }
  if (script.askInput && p.answer === undefined) await ask(script.askInput);
  return p;
}

/** The ctx calls both contexts share, bound (a context's methods may live on its prototype). */
function runOf(ctx: Omit<DemoRun, 'ask'>, ask: DemoRun['ask']): DemoRun {
  return {
    status: (text) => ctx.status(text),
    sleep: (ms) => ctx.sleep(ms),
    save: (checkpoint) => ctx.save(checkpoint),
    ask,
  };
}

/**
 * The elicitation form the MCP tool asks with: one text field named `value`, which is what the plane
 * wraps a plain answer in (`taskplane tasks answer <id> second`), and what the dashboard's answer box
 * fills for a one-field form.
 */
const ANSWER_FORM = {
  type: 'object',
  properties: { value: { type: 'string', title: 'Answer' } },
  required: ['value'],
};

/**
 * The demo script as an MCP tool: the arguments are the script (`{}` runs the defaults). It runs as a
 * task when the caller declared the tasks extension, synchronously otherwise.
 */
export const demoTool = defineTool({
  name: 'demo_task',
  title: 'Scripted long-running task',
  description:
    'Works in steps over durationMs, may ask a question (askInput), answers with a text result, or ends with a tool error when fail is true.',
  inputSchema: {
    type: 'object',
    properties: {
      durationMs: { type: 'integer', minimum: 0 },
      steps: { type: 'integer', minimum: 0 },
      askInput: { type: 'string' },
      fail: { type: 'boolean' },
      sideEffectMs: { type: 'integer', minimum: 0 },
    },
  },
  resumable: true,
  async run(ctx: ToolContext) {
    const script = demoScript(ctx.arguments, '');
    const p = await workThrough(
      script,
      ctx,
      runOf(ctx, async (prompt) => {
        const answer = await ctx.elicit(prompt, ANSWER_FORM);
        const given = answer.action === 'accept' ? answer.content?.value : undefined;
        return typeof given === 'string' ? given : answer.action;
      }),
    );
    await sideEffect(script, p, ctx);
    if (script.fail)
      return { content: [{ type: 'text', text: 'The demo tool was asked to fail.' }], isError: true };
    const text = `done after ${script.steps} steps${p.answer ? ` (${p.answer})` : ''}`;
    return {
      content: [{ type: 'text', text }],
      structuredContent: {
        steps: script.steps,
        answer: p.answer ?? null,
        ...(p.receipt ? { receipt: { ...p.receipt } } : {}),
      },
    };
  },
});

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
  tools: [demoTool],
  async execute(ctx: ExecutionContext) {
    const script = demoScript(ctx.data, ctx.text);
    if (!ctx.data) {
      await ctx.artifact({ artifactId: 'echo', name: 'echo', parts: [{ text: ctx.text }], lastChunk: true });
      return `echo: ${ctx.text}`;
    }
    const p = await workThrough(
      script,
      ctx,
      runOf(ctx, async (prompt) => (await ctx.askInput(prompt)).text),
    );
    await sideEffect(script, p, ctx);
    if (p.receipt)
      await ctx.artifact({
        artifactId: 'receipt',
        name: 'receipt',
        parts: [{ data: { ...p.receipt } }],
        lastChunk: true,
      });
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
        // What the task cost so far, in the one unit a demo has (steps worked): the usage report of
        // docs/conformance.md's test contract, which `taskplane conformance` prices completions with.
        metadata: { usage: { steps: p.step } },
      });
      await ctx.save({ ...p });
    }
    return `done after ${script.steps} steps`;
  },
});
