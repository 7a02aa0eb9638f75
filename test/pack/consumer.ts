// Compiled against the installed package's declaration files by test/pack/pack-smoke.sh: the three
// exports resolve by package name and carry their types.
import { defineAgent, type ExecutionContext } from 'taskplane/host';
import { CryptoRandom, Plane, SystemClock, type Envelope, type PlaneOptions } from 'taskplane/plane';
import { openStore, type Store } from 'taskplane/store';

export const agent = defineAgent({
  card: { name: 'Typed', description: 'types from the package', version: '1.0.0' },
  async execute(ctx: ExecutionContext) {
    await ctx.status('working');
    return ctx.text.toUpperCase();
  },
});

export async function embed(options: PlaneOptions): Promise<Envelope> {
  const store: Store = await openStore('memory:');
  const plane = new Plane({
    clock: new SystemClock(),
    random: new CryptoRandom(),
    store,
    connectors: () => undefined,
    options,
  });
  const { envelope } = await plane.create({ tenant: 't', target: 'none', input: { n: 1 } });
  return envelope;
}
