// The tools @modelcontextprotocol/conformance@0.2.0-alpha.12 expects of a server under test for its
// tasks-* scenarios (docs/mcp-conformance.md), written with the public tool API (src/host/tool-api.ts).
// Run with `taskplane host --agent test/host/mcp/conformance-agent.ts`.
import { defineAgent, defineTool, ToolProtocolError } from '../../../src/host/index.ts';

const text = (v: unknown, fallback: string): string => (typeof v === 'string' ? v : fallback);

export default defineAgent({
  card: { name: 'taskplane-mcp-conformance', description: 'MCP conformance fixture tools', version: '1.0.0' },
  tools: [
    defineTool({
      name: 'greet',
      description: 'Says hello (synchronous only)',
      inputSchema: { type: 'object', properties: { name: { type: 'string' } } },
      task: 'forbidden',
      async run(ctx) {
        return `Hello, ${text(ctx.arguments.name, 'World')}!`;
      },
    }),
    defineTool({
      name: 'slow_compute',
      description: 'Sleeps `seconds`, then answers',
      inputSchema: {
        type: 'object',
        properties: { seconds: { type: 'number' }, label: { type: 'string' } },
      },
      resumable: true,
      async run(ctx) {
        const seconds = typeof ctx.arguments.seconds === 'number' ? ctx.arguments.seconds : 1;
        await ctx.sleep(Math.max(0, seconds) * 1000);
        return `Computed ${text(ctx.arguments.label, 'result')} after ${seconds}s`;
      },
    }),
    defineTool({
      name: 'failing_job',
      description: 'A task that ends completed with a tool error',
      inputSchema: { type: 'object' },
      task: 'required',
      resumable: true,
      async run(ctx) {
        await ctx.sleep(1000);
        return { content: [{ type: 'text', text: 'The job failed' }], isError: true };
      },
    }),
    defineTool({
      name: 'protocol_error_job',
      description: 'A task that ends failed with a JSON-RPC error',
      inputSchema: { type: 'object' },
      resumable: true,
      async run(ctx) {
        await ctx.sleep(200);
        throw new ToolProtocolError(-32603, 'simulated protocol error');
      },
    }),
    defineTool({
      name: 'confirm_delete',
      description: 'Asks for confirmation, then deletes',
      inputSchema: { type: 'object', properties: { filename: { type: 'string' } } },
      resumable: true,
      async run(ctx) {
        const file = text(ctx.arguments.filename, 'the file');
        const answer = await ctx.elicit(`Delete ${file}?`, {
          type: 'object',
          properties: { confirm: { type: 'boolean' } },
          required: ['confirm'],
        });
        const yes = answer.action === 'accept' && answer.content?.confirm === true;
        return yes ? `Deleted ${file}` : `Kept ${file}`;
      },
    }),
    defineTool({
      name: 'multi_input',
      description: 'Asks two questions at once',
      inputSchema: { type: 'object' },
      resumable: true,
      async run(ctx) {
        const schema = { type: 'object', properties: { value: { type: 'string' } } };
        const answers = await ctx.ask({
          first: {
            method: 'elicitation/create',
            params: { mode: 'form', message: 'First value?', requestedSchema: schema },
          },
          second: {
            method: 'elicitation/create',
            params: { mode: 'form', message: 'Second value?', requestedSchema: schema },
          },
        });
        return `Received ${Object.keys(answers).sort().join(' and ')}`;
      },
    }),
    defineTool({
      name: 'test_tool_with_task',
      description: 'Asks for a name (MRTR), then runs as a task',
      inputSchema: { type: 'object' },
      task: 'required',
      resumable: true,
      gather(_args, answers) {
        if (answers.user_name) return undefined;
        return {
          user_name: {
            method: 'elicitation/create',
            params: {
              mode: 'form',
              message: 'What is your name?',
              requestedSchema: {
                type: 'object',
                properties: { name: { type: 'string' } },
                required: ['name'],
              },
            },
          },
        };
      },
      async run(ctx) {
        const content = (ctx.gathered.user_name as { content?: { name?: unknown } } | undefined)?.content;
        return `Hello, ${text(content?.name, 'stranger')}! Your task is done.`;
      },
    }),
    // The diagnostic tools of the server-stateless scenario.
    defineTool({
      name: 'test_missing_capability',
      description: 'Needs the client to declare sampling',
      inputSchema: { type: 'object' },
      task: 'forbidden',
      requiredCapabilities: { sampling: {} },
      async run() {
        return 'sampling was declared';
      },
    }),
    defineTool({
      name: 'test_streaming_elicitation',
      description: 'Asks for input with an MRTR round',
      inputSchema: { type: 'object' },
      task: 'forbidden',
      gather(_args, answers) {
        if (answers.confirm) return undefined;
        return {
          confirm: {
            method: 'elicitation/create',
            params: { mode: 'form', message: 'Go on?', requestedSchema: { type: 'object', properties: {} } },
          },
        };
      },
      async run() {
        return 'confirmed';
      },
    }),
    defineTool({
      name: 'test_logging_tool',
      description: 'Runs without logging (no logLevel was asked for)',
      inputSchema: { type: 'object' },
      task: 'forbidden',
      async run() {
        return 'done';
      },
    }),
  ],
});
