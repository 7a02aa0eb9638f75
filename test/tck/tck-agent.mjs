// The executor contract of the official A2A TCK (a2aproject/a2a-tck, scenarios/*.feature), as a
// taskplane agent: the TCK picks a behaviour by the prefix of the messageId it sends. Run the host with
// it (`taskplane host --agent test/tck/tck-agent.mjs`) and point the TCK at the host's URL.

const REPLIES = { 'tck-message-response': 'Direct message response' };
const FILE = { raw: Buffer.from('tck').toString('base64'), mediaType: 'text/plain', filename: 'output.txt' };

/** Behaviours in the order the contract's reference executor checks them (longest prefixes first). */
const BEHAVIOURS = [
  [
    'tck-stream-artifact-chunked',
    async (ctx) => {
      await ctx.status('working');
      const id = await ctx.artifact({ parts: [{ text: 'chunk-1 ' }] });
      await ctx.artifact({ artifactId: id, parts: [{ text: 'chunk-2' }], append: true, lastChunk: true });
    },
  ],
  [
    'test-resubscribe-message-id',
    async (ctx) => {
      await ctx.status('working');
      await ctx.sleep(4000);
    },
  ],
  ['tck-stream-artifact-text', (ctx) => streamed(ctx, [{ text: 'Streamed text content' }])],
  ['tck-stream-artifact-file', (ctx) => streamed(ctx, [FILE])],
  ['tck-stream-ordering-001', (ctx) => streamed(ctx, [{ text: 'Ordered output' }])],
  [
    'tck-artifact-file-url',
    (ctx) =>
      ctx.artifact({
        parts: [{ url: 'https://example.com/output.txt', mediaType: 'text/plain', filename: 'output.txt' }],
      }),
  ],
  // Each message on the task picks the next step by its own prefix, as the contract's executor runs
  // once per message: another `tck-input-required` asks again, anything else completes.
  [
    'tck-input-required',
    async (ctx) => {
      let answer = await ctx.askInput('Input required');
      while (answer.message.messageId.startsWith('tck-input-required'))
        answer = await ctx.askInput('Input required');
    },
  ],
  ['tck-complete-task', async () => 'Hello from TCK'],
  ['tck-artifact-text', (ctx) => ctx.artifact({ parts: [{ text: 'Generated text content' }] })],
  ['tck-artifact-file', (ctx) => ctx.artifact({ parts: [FILE] })],
  ['tck-artifact-data', (ctx) => ctx.artifact({ parts: [{ data: { key: 'value', count: 42 } }] })],
  ['tck-reject-task', (ctx) => ctx.reject('rejected')],
  ['tck-stream-001', (ctx) => streamed(ctx, [{ text: 'Stream hello from TCK' }])],
  ['tck-stream-002', async () => undefined],
  ['tck-stream-003', (ctx) => streamed(ctx, [{ text: 'Stream task lifecycle' }])],
];

async function streamed(ctx, parts) {
  await ctx.status('working');
  await ctx.artifact({ parts });
}

export default {
  card: {
    name: 'taskplane TCK agent',
    description: 'The executor contract of the A2A TCK, run by the taskplane host',
    version: '1.0.0',
    provider: { organization: 'taskplane', url: 'https://taskplane.dev' },
    skills: [
      {
        id: 'tck',
        name: 'TCK Conformance',
        description: 'Handles TCK conformance test messages',
        tags: ['tck'],
      },
    ],
  },
  extendedCard: { description: 'The TCK agent, as an authenticated caller sees it' },
  async reply(ctx) {
    const id = ctx.message.messageId;
    for (const [prefix, text] of Object.entries(REPLIES)) if (id.startsWith(prefix)) return text;
    return undefined;
  },
  async execute(ctx) {
    const id = ctx.message.messageId;
    for (const [prefix, run] of BEHAVIOURS) {
      if (!id.startsWith(prefix)) continue;
      const result = await run(ctx);
      return typeof result === 'string' ? result : undefined;
    }
    return `Unhandled messageId prefix: ${id}`;
  },
};
