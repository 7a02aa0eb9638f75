import { setMaxListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import { sha256Hex } from '../core/canonical-json.ts';
import type { Clock } from '../core/clock.ts';
import { TaskplaneError } from '../core/errors.ts';
import { newId, newToken } from '../core/ids.ts';
import type { Random } from '../core/random.ts';
import type { ApiKeyRecord, EnvelopeStore } from '../store/store.ts';

/**
 * Bearer API keys → tenants, kept as data in the store (`api_keys`: id, tenant, SHA-256 of the secret,
 * read-only scope, revocation time), so every process sharing the store agrees on them and a revocation
 * reaches all of them. `taskplane keys create|list|revoke` manages them; `TASKPLANE_API_KEYS` (or a keys
 * file) seeds keys into the table at start. With no key anywhere, the first start creates one for
 * tenant `default` and hands it back once to be printed. Secrets are never stored nor logged.
 */
export const GENERATED_KEY_SETTING = 'server.generatedApiKey';

/** Shorter secrets are refused: a guessable key is a shared password. */
export const MIN_KEY_LENGTH = 16;

const TENANT = /^[^\s:,#]{1,200}$/;

export function hashKey(key: string): string {
  return 'sha256:' + sha256Hex(key);
}

/**
 * The id of a key that came with its secret (a seed, the first-start key): derived from its hash so
 * every process and every restart name it alike. Keys made by `taskplane keys create` get random ids.
 */
export function keyIdFor(hash: string): string {
  return 'key_' + hash.replace(/^sha256:/, '').slice(0, 20);
}

export interface SeedKey {
  tenant: string;
  secret: string;
  readOnly: boolean;
}

/**
 * Parses `tenant:key` entries separated by commas or newlines (`#` starts a comment line); a trailing
 * `:read-only` gives the key the read-only scope. Errors name the entry by position, never the secret.
 */
export function parseApiKeys(text: string, source: string): SeedKey[] {
  const keys: SeedKey[] = [];
  const seen = new Map<string, number>();
  let position = 0;
  for (const raw of text.split(/[,\n]/)) {
    const entry = raw.trim();
    if (!entry || entry.startsWith('#')) continue;
    position++;
    const bad = (why: string) =>
      new TaskplaneError('config', `${source}: entry ${position} ${why}`, { field: source });
    const i = entry.indexOf(':');
    const tenant = entry.slice(0, i).trim();
    let secret = entry.slice(i + 1).trim();
    const readOnly = secret.endsWith(':read-only');
    if (readOnly) secret = secret.slice(0, -':read-only'.length).trim();
    if (i <= 0 || !TENANT.test(tenant))
      throw bad("must be tenant:key, the tenant 1 to 200 characters without spaces, ':', ',' or '#'");
    if (secret.length < MIN_KEY_LENGTH) throw bad(`has a key shorter than ${MIN_KEY_LENGTH} characters`);
    const first = seen.get(secret);
    if (first !== undefined) throw bad(`repeats the key of entry ${first}`);
    seen.set(secret, position);
    keys.push({ tenant, secret, readOnly });
  }
  return keys;
}

/** A new key: the secret to show once, and the record to store. */
export function newApiKey(
  clock: Clock,
  random: Random,
  fields: { tenant: string; readOnly?: boolean; name?: string | null },
): { secret: string; record: ApiKeyRecord } {
  if (!TENANT.test(fields.tenant))
    throw new TaskplaneError(
      'invalid_argument',
      "tenant: 1 to 200 characters without spaces, ':', ',' or '#'",
      {
        field: 'tenant',
      },
    );
  const secret = `tp_${newToken(random, 160)}`;
  return {
    secret,
    record: {
      id: newId(clock, random, 'key_'),
      tenant: fields.tenant,
      hash: hashKey(secret),
      readOnly: fields.readOnly ?? false,
      name: fields.name ?? null,
      createdAt: clock.now(),
      revokedAt: null,
    },
  };
}

export interface SeededKeys {
  /** Set only on the start that generated the key: print it once. */
  generatedKey: string | null;
  /** Seed keys found revoked in the store: they stay revoked (the store wins over the list). */
  revokedSeeds: string[];
}

/**
 * Puts the seed keys (`env`, else `file`) into the store, or, when neither is given and the store holds
 * no key, creates the first-start key. A key once stored is never changed by seeding.
 */
export async function seedApiKeys(options: {
  env?: string;
  file?: string;
  store: EnvelopeStore;
  clock: Clock;
  random: Random;
}): Promise<SeededKeys> {
  const { store } = options;
  const seeds = options.env?.trim()
    ? parseApiKeys(options.env, 'TASKPLANE_API_KEYS')
    : options.file
      ? parseApiKeys(readFileSync(options.file, 'utf8'), 'keys file')
      : null;
  const put = (tenant: string, hash: string, readOnly: boolean) =>
    store.putApiKeyIfAbsent({
      id: keyIdFor(hash),
      tenant,
      hash,
      readOnly,
      name: 'seed',
      createdAt: options.clock.now(),
      revokedAt: null,
    });
  if (seeds) {
    const revokedSeeds: string[] = [];
    for (const seed of seeds) {
      const stored = await put(seed.tenant, hashKey(seed.secret), seed.readOnly);
      if (stored.revokedAt !== null) revokedSeeds.push(stored.id);
    }
    return { generatedKey: null, revokedSeeds };
  }
  if ((await store.listApiKeys()).length > 0) return { generatedKey: null, revokedSeeds: [] };
  // The setting makes two processes starting at once agree on one key (and carries a key generated
  // before keys were a table into it).
  const candidate = `tp_${newToken(options.random, 160)}`;
  const record = JSON.stringify({ tenant: 'default', hash: hashKey(candidate) });
  const stored = await store.putSettingIfAbsent(GENERATED_KEY_SETTING, record);
  const { tenant, hash } = JSON.parse(stored) as { tenant: string; hash: string };
  await put(tenant, hash, false);
  return { generatedKey: stored === record ? candidate : null, revokedSeeds: [] };
}

export interface KeyRingOptions {
  store: EnvelopeStore;
  clock: Clock;
  /**
   * How long a looked-up key is trusted before the store is asked again, and how often the store is
   * swept for revocations (which closes the revoked keys' streams). Bounds how long a key revoked by
   * another process keeps working. @default 500
   */
  cacheMs?: number;
  /** Called once per revoked key this process notices (by a request or by the sweep). */
  onRevoked?: (key: ApiKeyRecord) => void;
}

/** Entries above this are dropped wholesale: a flood of made-up keys cannot grow the cache without end. */
const MAX_CACHED = 10_000;

/**
 * The keys a process accepts: looked up by hash in the store, cached for at most `cacheMs`; a sweep of
 * the store every `cacheMs` finds keys revoked elsewhere. Each SSE stream opened with a key takes the
 * key's signal (`streamSignal`), aborted when the key is found revoked.
 */
export class KeyRing {
  readonly cacheMs: number;
  private readonly cache = new Map<string, { key: ApiKeyRecord | null; at: number }>();
  private readonly revoked = new Set<string>();
  private readonly streams = new Map<string, AbortController>();
  private stopSweep: (() => void) | null = null;
  private stopped = false;
  private sweeping: Promise<void> | null = null;

  constructor(private readonly o: KeyRingOptions) {
    this.cacheMs = o.cacheMs ?? 500;
    if (!(Number.isFinite(this.cacheMs) && this.cacheMs >= 0))
      throw new TaskplaneError('config', 'keys.cacheMs: must be a number >= 0', { field: 'keys.cacheMs' });
  }

  /** The stored key a bearer secret belongs to, undefined when unknown or revoked. */
  authenticate(secret: string): Promise<ApiKeyRecord | undefined> {
    return this.authenticateHash(hashKey(secret));
  }

  /** As authenticate, from the key's hash (a stream ticket carries the hash, never the secret). */
  async authenticateHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const now = this.o.clock.now();
    let entry = this.cache.get(hash);
    if (!entry || now - entry.at >= this.cacheMs) {
      entry = { key: (await this.o.store.getApiKeyByHash(hash)) ?? null, at: now };
      if (this.cache.size >= MAX_CACHED) this.cache.clear();
      this.cache.set(hash, entry);
    }
    const key = entry.key;
    if (!key) return undefined;
    if (key.revokedAt !== null) {
      this.noticeRevoked(key);
      return undefined;
    }
    return key;
  }

  /** Aborted when `keyId` is found revoked: streams opened with that key end with it. */
  streamSignal(keyId: string): AbortSignal {
    let controller = this.streams.get(keyId);
    if (!controller) {
      controller = new AbortController();
      // Every stream opened with the key listens on this one signal: a key with many open streams (a
      // dashboard in several tabs, a service tailing many tasks) is expected, not a listener leak.
      setMaxListeners(0, controller.signal);
      this.streams.set(keyId, controller);
    }
    return controller.signal;
  }

  /** Reads every key once: revocations made by any process are noticed, cached entries refreshed. */
  sweep(): Promise<void> {
    return (this.sweeping ??= (async () => {
      try {
        const now = this.o.clock.now();
        for (const key of await this.o.store.listApiKeys()) {
          if (this.cache.has(key.hash)) this.cache.set(key.hash, { key, at: now });
          if (key.revokedAt !== null) this.noticeRevoked(key);
        }
      } finally {
        this.sweeping = null;
      }
    })());
  }

  /** Sweeps now and then every `cacheMs` on the clock until stop(). */
  async start(onError: (err: unknown) => void): Promise<void> {
    await this.sweep();
    const interval = Math.max(this.cacheMs, 50);
    const schedule = () => {
      if (this.stopped) return;
      this.stopSweep = this.o.clock.setTimer(interval, () => {
        this.sweep().then(schedule, (err: unknown) => {
          onError(err);
          schedule();
        });
      });
    };
    schedule();
  }

  stop(): void {
    this.stopped = true;
    this.stopSweep?.();
    this.stopSweep = null;
  }

  private noticeRevoked(key: ApiKeyRecord): void {
    if (this.revoked.has(key.id)) return;
    this.revoked.add(key.id);
    this.streams.get(key.id)?.abort(new TaskplaneError('unauthenticated', 'API key revoked'));
    this.streams.delete(key.id);
    this.o.onRevoked?.(key);
  }
}
