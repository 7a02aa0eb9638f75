// Entry of the schema compile worker when the plane runs from its TypeScript sources (worker-schema-compiler.ts).
import { register } from 'tsx/esm/api';

register();
await import('./schema-compile-worker.ts');
