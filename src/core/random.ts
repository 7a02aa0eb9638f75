/** The Random port: every random draw in core/ and plane/ goes through it, so a lab run replays from its seed. */
export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** `n` random bytes. */
  bytes(n: number): Uint8Array;
}

/** Cryptographically strong randomness (Web Crypto, present in Node 20 and browsers). */
export class CryptoRandom implements Random {
  next(): number {
    const buf = new Uint32Array(2);
    globalThis.crypto.getRandomValues(buf);
    // 53 random bits, as Math.random would give.
    return ((buf[0]! >>> 5) * 67108864 + (buf[1]! >>> 6)) / 9007199254740992;
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    globalThis.crypto.getRandomValues(out);
    return out;
  }
}

/**
 * Deterministic generator for the lab and tests: sfc32 seeded through splitmix32. Not for secrets.
 * sfc32 passes PractRand to 2^40 bytes and is fast in JS's 32-bit integer arithmetic.
 */
export class SeededRandom implements Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    let s = seed >>> 0;
    const split = () => {
      s = (s + 0x9e3779b9) | 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = split();
    this.b = split();
    this.c = split();
    this.d = split();
    for (let i = 0; i < 12; i++) this.nextUint32();
  }

  nextUint32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  next(): number {
    return this.nextUint32() / 4294967296;
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.nextUint32() & 0xff;
    return out;
  }

  /** An independent stream derived from this one, so adding draws in one part leaves others unchanged. */
  fork(): SeededRandom {
    return new SeededRandom(this.nextUint32());
  }
}
