import {
  newEnvelope,
  type Envelope,
  type EnvelopeEventType,
  type NewEnvelopeEvent,
} from '../../../src/core/envelope.ts';
import { VersionConflictError } from '../../../src/core/errors.ts';
import type { AgentScope, AgentTaskRecord, EnvelopeStore, NewOutboxRow } from '../../../src/store/store.ts';

let counter = 0;
/** Unique, sortable-enough ids for one test run. */
export function uid(prefix: string): string {
  counter += 1;
  return `${prefix}_${Date.now().toString(36)}_${counter.toString().padStart(6, '0')}`;
}

export function makeEnvelope(overrides: Partial<Envelope> = {}): Envelope {
  return newEnvelope({
    id: uid('tsk'),
    tenant: 't1',
    connector: 'a2a',
    target: 'agent-a',
    requestKind: 'message',
    input: { text: 'hello', nested: { n: 1 } },
    inputHash: 'sha256:00',
    createdAt: 1000,
    ...overrides,
  });
}

/** The store keeps an event's type as given, so the cases name their events freely to tell them apart. */
export function event(envelope: Envelope, type: string, at = envelope.updatedAt): NewEnvelopeEvent {
  return {
    envelopeId: envelope.id,
    tenant: envelope.tenant,
    type: type as EnvelopeEventType,
    at,
    data: { type },
  };
}

/** The scopes the host cases use: owner alice or bob, no tenant. */
export const ALICE: AgentScope = { owner: 'alice', tenant: '' };
export const BOB: AgentScope = { owner: 'bob', tenant: '' };

export function makeTask(overrides: Partial<AgentTaskRecord> = {}): AgentTaskRecord {
  const id = overrides.id ?? uid('task');
  return {
    id,
    owner: 'alice',
    tenant: '',
    contextId: 'ctx-1',
    state: 'TASK_STATE_SUBMITTED',
    statusTimestamp: 1000,
    task: { id, status: { state: 'TASK_STATE_SUBMITTED' } },
    executorState: null,
    createdAt: 1000,
    updatedAt: 1000,
    version: 1,
    ...overrides,
  };
}

export function outboxRow(taskId: string, configId: string, n: number, nextAttemptAt = 0): NewOutboxRow {
  return { taskId, configId, deliveryId: `${taskId}:${configId}:${n}`, payload: { n }, nextAttemptAt };
}

/** Read-modify-write with a retry loop on version conflicts: the pattern every caller uses. */
export async function incrementUsage(store: EnvelopeStore, id: string, times: number): Promise<number> {
  let conflicts = 0;
  for (let i = 0; i < times; i++) {
    for (;;) {
      const current = (await store.getEnvelope(id))!;
      const count = (current.usage?.count ?? 0) + 1;
      const next = { ...current, usage: { count }, updatedAt: current.updatedAt + 1 };
      try {
        await store.updateEnvelope(next, current.version, [event(next, 'usage')]);
        break;
      } catch (err) {
        if (!(err instanceof VersionConflictError)) throw err;
        conflicts += 1;
      }
    }
  }
  return conflicts;
}

/** Resolves with the first change notice matching `predicate`. */
export function nextChange<T extends { id: string }>(
  subscribe: (listener: (change: T) => void) => () => void,
  predicate: (change: T) => boolean,
): Promise<T> {
  return new Promise((resolve) => {
    const off = subscribe((change) => {
      if (!predicate(change)) return;
      off();
      resolve(change);
    });
  });
}
