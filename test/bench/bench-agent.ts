import { defineAgent } from '../../src/host/agent-api.ts';
import { defineTool } from '../../src/host/tool-api.ts';

/**
 * The trivial agent our host runs in `npm run bench:host`, matching sdk-server.ts: completes at once,
 * or with a data part `{"fanout": N}` waits for the go signal (an input answer), then publishes N
 * WORKING status updates and completes. Its MCP tool `bench_tool` completes at once too (the MCP rows).
 */
export default defineAgent({
  card: { name: 'bench', description: 'bench agent', version: '1.0.0' },
  resumable: false,
  async execute(ctx) {
    const fanout = Number((ctx.data as { fanout?: number } | undefined)?.fanout ?? 0);
    if (fanout > 0) {
      await ctx.askInput('go?');
      // Published without awaiting each, like the SDK agent's bus.publish; the host keeps them in
      // order and folds them into few durable writes.
      await Promise.all(Array.from({ length: fanout }, (_, i) => ctx.status(`s${i + 1}`)));
    }
    return 'ok';
  },
  tools: [
    defineTool({
      name: 'bench_tool',
      async run() {
        return 'ok';
      },
    }),
  ],
});
