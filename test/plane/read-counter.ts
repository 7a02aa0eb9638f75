import type { Envelope } from '../../src/core/envelope.ts';
import type { Store } from '../../src/store/store.ts';

/** Envelopes the engine has read, per store method, since the last reset. */
export class ReadCounter {
  reads = new Map<string, number>();
  calls = new Map<string, number>();
  reset(): void {
    this.reads.clear();
    this.calls.clear();
  }
  total(): number {
    return [...this.reads.values()].reduce((a, b) => a + b, 0);
  }
  wrap(store: Store): Store {
    return new Proxy(store, {
      get: (target, prop, receiver) => {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        const name = String(prop);
        return (...args: unknown[]) => {
          const result = (value as (...a: unknown[]) => unknown).apply(target, args);
          if (!(result instanceof Promise)) return result;
          this.calls.set(name, (this.calls.get(name) ?? 0) + 1);
          return result.then((r: unknown) => {
            this.reads.set(name, (this.reads.get(name) ?? 0) + envelopesIn(r));
            return r;
          });
        };
      },
    });
  }
}

function isEnvelope(v: unknown): v is Envelope {
  return typeof v === 'object' && v !== null && 'inputHash' in v && 'state' in v;
}

function envelopesIn(r: unknown): number {
  if (isEnvelope(r)) return 1;
  if (Array.isArray(r)) return r.filter(isEnvelope).length;
  if (typeof r === 'object' && r !== null) {
    const o = r as { items?: unknown; envelope?: unknown };
    if (Array.isArray(o.items)) return o.items.filter(isEnvelope).length;
    if (isEnvelope(o.envelope)) return 1;
  }
  return 0;
}
