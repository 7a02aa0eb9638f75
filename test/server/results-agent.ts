import { defineAgent } from '../../src/host/agent-api.ts';

/**
 * A small agent for the results and OpenAPI tests, driven by `{kind}` in a data part: `report` (text,
 * data and file artifacts, then "all done"), `big` (an artifact over small caps), `fail`, `ask` (waits
 * for input) and `wait` (runs until cancelled).
 */
export const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3, 250, 251]);

export const resultsAgent = defineAgent({
  card: { name: 'Results', description: 'Produces text, data and file artifacts', version: '1.0.0' },
  async execute(ctx) {
    const kind = (ctx.data as { kind?: string } | undefined)?.kind;
    if (kind === 'fail') {
      await ctx.status('checking the disk');
      await ctx.fail('disk full on the worker');
      return;
    }
    if (kind === 'ask') {
      // A2A orders statuses only by their timestamps: the question gets a later one than WORKING.
      await ctx.status('preparing a question');
      await ctx.sleep(5);
      const answer = await ctx.askInput('Which edition?');
      return `edition ${answer.text}`;
    }
    if (kind === 'wait') {
      await ctx.status('waiting to be cancelled');
      await ctx.sleep(3_600_000);
      return;
    }
    if (kind === 'big') {
      await ctx.artifact({ artifactId: 'log', name: 'log', parts: [{ text: 'x'.repeat(3000) }] });
      await ctx.artifact({ artifactId: 'small', name: 'small', parts: [{ text: 'ok' }] });
      return 'big done';
    }
    await ctx.artifact({ artifactId: 'summary', name: 'summary', parts: [{ text: 'The answer is 42.' }] });
    await ctx.artifact({ artifactId: 'figures', name: 'figures', parts: [{ data: { answer: 42 } }] });
    await ctx.artifact({
      artifactId: 'chart',
      name: 'chart',
      parts: [{ raw: PNG.toString('base64'), filename: 'chart.png', mediaType: 'image/png' }],
    });
    return 'all done';
  },
});
