import { beforeEach, describe, it, type TestContext } from 'vitest';
import type { Store } from '../../src/store/store.ts';
import { apiKeyCases } from './suite/api-key-cases.ts';
import { concurrencyCases } from './suite/concurrency-cases.ts';
import { envelopeCases } from './suite/envelope-cases.ts';
import { hostCases } from './suite/host-cases.ts';

/**
 * The ONE Store behaviour suite (STYLE.md, "Tests"): every backend runs exactly these cases. A backend
 * gives a harness that makes an isolated store per test (its own file or schema) and can open a second
 * instance on the same data, which is how cross-instance races and notifications are tested.
 */
export interface StoreHarness {
  /** Backend name; every test title starts with it (CI greps for "postgres"). */
  name: string;
  create(): Promise<StoreFixture>;
}

export interface StoreFixture {
  store: Store;
  /** Another Store instance on the same data (the same object where the backend has no such thing). */
  openPeer(): Promise<Store>;
  /** Drops the file or schema; `failed` asks to keep it for a look. */
  dispose(failed: boolean): Promise<void>;
}

export interface SuiteContext {
  /** The store for the current test. */
  store(): Store;
  peer(): Promise<Store>;
  /** `it` with the backend name in the title. */
  test(title: string, fn: () => Promise<void>): void;
}

export function storeSuite(harness: StoreHarness): void {
  describe(`store suite on ${harness.name}`, () => {
    let fixture: StoreFixture | undefined;
    let peers: Store[] = [];

    beforeEach(async (ctx: TestContext) => {
      fixture = await harness.create();
      peers = [];
      ctx.onTestFinished(async ({ task }) => {
        const current = fixture!;
        for (const peer of peers) if (peer !== current.store) await peer.close();
        await current.store.close();
        await current.dispose(task.result?.state === 'fail');
      });
    });

    const context: SuiteContext = {
      store: () => fixture!.store,
      peer: async () => {
        const peer = await fixture!.openPeer();
        peers.push(peer);
        return peer;
      },
      test: (title, fn) => it(`${harness.name}: ${title}`, fn),
    };
    envelopeCases(context);
    hostCases(context);
    concurrencyCases(context);
    apiKeyCases(context);
  });
}
