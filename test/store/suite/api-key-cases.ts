import { expect } from 'vitest';
import type { ApiKeyRecord, EnvelopeStore } from '../../../src/store/store.ts';
import type { SuiteContext } from '../store-suite.ts';

function key(id: string, fields: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    id,
    tenant: 'acme',
    hash: `sha256:${id}`,
    readOnly: false,
    name: null,
    createdAt: 1000,
    revokedAt: null,
    ...fields,
  };
}

/** API keys: only hashes, seeded by several processes at once, revoked for every process sharing the store. */
export function apiKeyCases({ store, peer, test }: SuiteContext<EnvelopeStore>): void {
  test('api keys: stored by hash, listed oldest first, read back by hash', async () => {
    await store().putApiKeyIfAbsent(key('key_b', { createdAt: 2000, readOnly: true, name: 'ci' }));
    await store().putApiKeyIfAbsent(key('key_a'));
    expect((await store().listApiKeys()).map((k) => k.id)).toEqual(['key_a', 'key_b']);
    expect(await store().getApiKeyByHash('sha256:key_b')).toEqual(
      key('key_b', { createdAt: 2000, readOnly: true, name: 'ci' }),
    );
    expect(await store().getApiKeyByHash('sha256:nope')).toBeUndefined();
  });

  test('api keys: seeding the same hash twice (two processes) keeps one record and both agree', async () => {
    const other = await peer();
    const [a, b] = await Promise.all([
      store().putApiKeyIfAbsent(key('key_one', { hash: 'sha256:same' })),
      other.putApiKeyIfAbsent(key('key_two', { hash: 'sha256:same' })),
    ]);
    expect(a).toEqual(b);
    expect(await store().listApiKeys()).toHaveLength(1);
  });

  test('api keys: a revoked key stays revoked (first time kept) and re-seeding does not revive it', async () => {
    await store().putApiKeyIfAbsent(key('key_r'));
    const other = await peer();
    expect((await other.revokeApiKey('key_r', 5000))?.revokedAt).toBe(5000);
    expect((await store().revokeApiKey('key_r', 6000))?.revokedAt).toBe(5000);
    expect((await store().putApiKeyIfAbsent(key('key_r'))).revokedAt).toBe(5000);
    expect((await store().getApiKeyByHash('sha256:key_r'))?.revokedAt).toBe(5000);
    expect(await store().revokeApiKey('key_missing', 7000)).toBeUndefined();
  });
}
