import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { storeSuite } from './store-suite.ts';

storeSuite({
  name: 'memory',
  create: async () => {
    const store = new MemoryStore();
    // One process, one object: the "peer" is the store itself.
    return { store, openPeer: async () => store, dispose: async () => undefined };
  },
});
