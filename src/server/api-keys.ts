import { readFileSync } from 'node:fs';
import { sha256Hex } from '../core/canonical-json.ts';
import { TaskplaneError } from '../core/errors.ts';
import { newToken } from '../core/ids.ts';
import type { Random } from '../core/random.ts';
import type { Store } from '../store/store.ts';

/**
 * Bearer API keys → tenants. Keys come from `TASKPLANE_API_KEYS=tenant:key,…` or a file with one
 * `tenant:key` per line; only their SHA-256 is kept in memory. With none configured, the first start
 * creates one key for tenant `default`, stores its hash in the store's settings (so every process
 * sharing the store agrees, and restarts keep it) and hands the key back once to be printed.
 */
export const GENERATED_KEY_SETTING = 'server.generatedApiKey';

export class ApiKeys {
  private readonly byHash = new Map<string, string>();

  add(tenant: string, key: string): void {
    this.byHash.set(hashKey(key), tenant);
  }

  addHash(tenant: string, hash: string): void {
    this.byHash.set(hash, tenant);
  }

  get size(): number {
    return this.byHash.size;
  }

  /** The tenant a bearer key belongs to, or undefined. */
  tenantFor(key: string): string | undefined {
    return this.byHash.get(hashKey(key));
  }
}

export function hashKey(key: string): string {
  return 'sha256:' + sha256Hex(key);
}

/** Parses `tenant:key` pairs separated by commas or newlines; `#` starts a comment line. */
export function parseApiKeys(text: string, source: string): ApiKeys {
  const keys = new ApiKeys();
  for (const raw of text.split(/[,\n]/)) {
    const entry = raw.trim();
    if (!entry || entry.startsWith('#')) continue;
    const i = entry.indexOf(':');
    const tenant = entry.slice(0, i).trim();
    const key = entry.slice(i + 1).trim();
    if (i <= 0 || !tenant || key.length < 8) {
      throw new TaskplaneError(
        'config',
        `${source}: expected tenant:key with a key of at least 8 characters`,
        { field: source },
      );
    }
    keys.add(tenant, key);
  }
  return keys;
}

export interface LoadedKeys {
  keys: ApiKeys;
  /** Set only on the start that generated the key: print it once. */
  generatedKey: string | null;
}

export async function loadApiKeys(options: {
  env?: string;
  file?: string;
  store: Store;
  random: Random;
}): Promise<LoadedKeys> {
  if (options.env?.trim())
    return { keys: parseApiKeys(options.env, 'TASKPLANE_API_KEYS'), generatedKey: null };
  if (options.file)
    return { keys: parseApiKeys(readFileSync(options.file, 'utf8'), 'keys file'), generatedKey: null };
  const candidate = `tp_${newToken(options.random, 160)}`;
  const record = JSON.stringify({ tenant: 'default', hash: hashKey(candidate) });
  const stored = await options.store.putSettingIfAbsent(GENERATED_KEY_SETTING, record);
  const { tenant, hash } = JSON.parse(stored) as { tenant: string; hash: string };
  const keys = new ApiKeys();
  keys.addHash(tenant, hash);
  return { keys, generatedKey: stored === record ? candidate : null };
}
