// Compiled against the installed package's declaration files by test/pack/pack-smoke.sh: the three
// exports resolve by package name and carry their types; the embedding example of docs/plane.md is here.
import { defineAgent, type ExecutionContext } from 'taskplane/host';
import {
  A2AConnector,
  ClaudeConnector,
  CryptoRandom,
  McpConnector,
  OpenAIConnector,
  Plane,
  SystemClock,
  type Connector,
  type Envelope,
  type OpenAIConnectorOptions,
} from 'taskplane/plane';
import { openStore, type Store } from 'taskplane/store';

export const agent = defineAgent({
  card: { name: 'Typed', description: 'types from the package', version: '1.0.0' },
  async execute(ctx: ExecutionContext) {
    await ctx.status('working');
    return ctx.text.toUpperCase();
  },
});

export async function embed(): Promise<Envelope> {
  const store: Store = await openStore('sqlite:./data/taskplane.db');
  const agent = new A2AConnector({ target: 'summarizer', baseUrl: 'https://agents.example.com/summarizer' });
  const plane = new Plane({
    clock: new SystemClock(),
    random: new CryptoRandom(),
    store,
    connectors: (target) => (target === 'summarizer' ? agent : undefined),
  });
  await plane.start();
  const { envelope } = await plane.create({ tenant: 'acme', target: 'summarizer', input: 'Summarize…' });
  await plane.get('acme', envelope.id);
  await plane.list('acme', { states: ['waiting_for_input'] });
  await plane.answer('acme', envelope.id, { requestId: '…', value: 'second' });
  await plane.cancel('acme', envelope.id);
  let after = 0;
  store.onChange(async () => {
    for (const e of await plane.events('acme', { afterSeq: after })) ((after = e.seq), console.log(e.type));
  });
  await plane.stop();
  return envelope;
}

/** Every connector kind, built by a library user. */
export function connectors(options: OpenAIConnectorOptions): Connector[] {
  return [
    new OpenAIConnector(options),
    new ClaudeConnector({ target: 'c', apiKey: 'k', agentId: 'agent_1', environmentId: 'env_1' }),
    new McpConnector({ target: 'docs', url: 'https://tools.example.com/mcp', tool: 'search' }),
  ];
}
