import { beforeEach, describe, it, type TestContext } from 'vitest';
import type { AgentTaskStore, EnvelopeStore, Store, StoreCommon } from '../../src/store/store.ts';
import { apiKeyCases } from './suite/api-key-cases.ts';
import { agentTaskConcurrencyCases, envelopeConcurrencyCases } from './suite/concurrency-cases.ts';
import { envelopeCases } from './suite/envelope-cases.ts';
import { hostCases } from './suite/host-cases.ts';
import { reconcileCases } from './suite/reconcile-cases.ts';
import { agentTaskRetentionCases, envelopeRetentionCases } from './suite/retention-cases.ts';
import { watchLeaseCases } from './suite/watch-lease-cases.ts';
import { workflowCases } from './suite/workflow-cases.ts';

/**
 * The Store behaviour suites (STYLE.md, "Tests"): one per port, EnvelopeStore (what the control plane
 * uses) and AgentTaskStore (what the agent host uses), and every backend runs both. A backend gives a
 * harness that makes an isolated store per test (its own file or schema) and can open a second instance
 * on the same data, which is how cross-instance races and notifications are tested. The cases see only
 * their port, so a case cannot lean on a method its users do not have.
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

export interface SuiteContext<S extends StoreCommon = Store> {
  /** The store for the current test. */
  store(): S;
  peer(): Promise<S>;
  /** `it` with the backend name in the title. */
  test(title: string, fn: () => Promise<void>): void;
}

/** Both port suites on one backend. */
export function storeSuite(harness: StoreHarness): void {
  envelopeStoreSuite(harness);
  agentTaskStoreSuite(harness);
}

/** The EnvelopeStore suite: envelopes, the event log, deliveries, leases, settings, API keys. */
export function envelopeStoreSuite(harness: StoreHarness): void {
  portSuite<EnvelopeStore>('EnvelopeStore', harness, (context) => {
    envelopeCases(context);
    envelopeConcurrencyCases(context);
    workflowCases(context);
    apiKeyCases(context);
    envelopeRetentionCases(context);
    reconcileCases(context);
    watchLeaseCases(context);
  });
}

/** The AgentTaskStore suite: agent tasks and their events, push configs, the push outbox. */
export function agentTaskStoreSuite(harness: StoreHarness): void {
  portSuite<AgentTaskStore>('AgentTaskStore', harness, (context) => {
    hostCases(context);
    agentTaskConcurrencyCases(context);
    agentTaskRetentionCases(context);
  });
}

function portSuite<S extends StoreCommon>(
  port: string,
  harness: StoreHarness,
  cases: (context: SuiteContext<S>) => void,
): void {
  describe(`${port} suite on ${harness.name}`, () => {
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

    cases({
      store: () => fixture!.store as Store & S,
      peer: async () => {
        const peer = await fixture!.openPeer();
        peers.push(peer);
        return peer as Store & S;
      },
      test: (title, fn) => it(`${harness.name}: ${title}`, fn),
    });
  });
}
