// Entry of the SQLite write worker when the store runs from its TypeScript sources (worker-writes.ts).
import { register } from 'tsx/esm/api';

register();
await import('./write-worker.ts');
