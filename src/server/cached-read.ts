import type { Clock } from '../core/clock.ts';

/**
 * A read too costly to run on every request (one that scans the store), kept with the time it was made:
 * a caller gets the last value and its age at once, and a value older than `maxAgeMs` starts a fresh read
 * in the background (one at a time), which later callers get. Only the first call waits for a read. A
 * background read that fails keeps the previous value, whose age then says how stale it is.
 */
export class CachedRead<T> {
  private last: { value: T; at: number } | null = null;
  private reading: Promise<{ value: T; at: number }> | null = null;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly maxAgeMs: number,
    private readonly clock: Pick<Clock, 'now'>,
  ) {}

  async get(): Promise<{ value: T; ageMs: number }> {
    const last = this.last ?? (await this.refresh());
    if (this.clock.now() - last.at >= this.maxAgeMs) void this.refresh().catch(() => {});
    return { value: last.value, ageMs: Math.max(0, this.clock.now() - last.at) };
  }

  private refresh(): Promise<{ value: T; at: number }> {
    this.reading ??= (async () => {
      // The figures are as of the moment the read began.
      const at = this.clock.now();
      try {
        const value = await this.read();
        return (this.last = { value, at });
      } finally {
        this.reading = null;
      }
    })();
    return this.reading;
  }
}

/**
 * A CachedRead per key (a tenant), at most `maxKeys` of them: past that the least recently asked key is
 * dropped, and its next request reads afresh. The bound keeps the memory of a process that serves many
 * tenants from growing with them; a read's cost stays at one per key per `maxAgeMs`.
 */
export class CachedReadsByKey<T> {
  private readonly reads = new Map<string, CachedRead<T>>();

  constructor(
    private readonly read: (key: string) => Promise<T>,
    private readonly maxAgeMs: number,
    private readonly clock: Pick<Clock, 'now'>,
    private readonly maxKeys = 10_000,
  ) {}

  get(key: string): Promise<{ value: T; ageMs: number }> {
    let cached = this.reads.get(key);
    // Re-inserted on every use, so the Map's order is least recently asked first.
    if (cached) this.reads.delete(key);
    else cached = new CachedRead(() => this.read(key), this.maxAgeMs, this.clock);
    this.reads.set(key, cached);
    if (this.reads.size > this.maxKeys) this.reads.delete(this.reads.keys().next().value!);
    return cached.get();
  }

  /** The key's figures changed in a way its caller must see: its next request reads afresh (and waits). */
  forget(key: string): void {
    this.reads.delete(key);
  }
}
