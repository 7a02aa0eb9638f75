import type { Random } from './random.ts';

/**
 * Draws random bytes from `source` 4 KiB at a time. Every task, message, artifact and delivery id takes
 * 17 random bytes; one getRandomValues call per id showed up in host and plane profiles under load
 * (docs/performance.md, "Random bytes"). Used by `taskplane host` and `taskplane serve`.
 */
export class BufferedRandom implements Random {
  private pool: Uint8Array = new Uint8Array(0);
  private offset = 0;

  constructor(
    private readonly source: Random,
    private readonly poolBytes = 4096,
  ) {}

  next(): number {
    return this.source.next();
  }

  bytes(n: number): Uint8Array {
    if (n > this.poolBytes) return this.source.bytes(n);
    if (this.offset + n > this.pool.length) {
      this.pool = this.source.bytes(this.poolBytes);
      this.offset = 0;
    }
    const out = this.pool.slice(this.offset, this.offset + n);
    this.offset += n;
    return out;
  }
}
