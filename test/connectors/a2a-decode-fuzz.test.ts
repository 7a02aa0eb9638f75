import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { TaskplaneError } from '../../src/core/errors.ts';
import { A2AConnector } from '../../src/connectors/a2a/a2a-connector.ts';
import {
  applyFrame,
  decodeTask,
  frameTaskId,
  taskToSnapshot,
} from '../../src/connectors/a2a/task-snapshot.ts';
import type { AgentCard } from '../../src/protocols/a2a/types.ts';

/**
 * The client-side decoders take whatever a remote sends: they must return a snapshot or throw a
 * TaskplaneError, never anything else, and never a state outside the normalized vocabulary.
 */
const card: AgentCard = {
  name: 'x',
  description: 'x',
  version: '1',
  capabilities: { streaming: true, pushNotifications: true },
  supportedInterfaces: [
    { url: 'http://127.0.0.1:9/a2a/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
  ],
  defaultInputModes: [],
  defaultOutputModes: [],
  skills: [],
};

const states = fc.constantFrom(
  'TASK_STATE_WORKING',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_AUTH_REQUIRED',
  'TASK_STATE_REJECTED',
  3,
  'bogus',
  null,
);
const taskish = fc.record(
  {
    id: fc.oneof(fc.string(), fc.integer()),
    context_id: fc.string(),
    status: fc.oneof(
      fc.record(
        {
          state: states,
          timestamp: fc.oneof(
            fc.string(),
            fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
          ),
        },
        { requiredKeys: [] },
      ),
      fc.anything(),
    ),
    artifacts: fc.oneof(
      fc.array(
        fc.record({
          artifactId: fc.string(),
          parts: fc.array(
            fc.oneof(fc.record({ text: fc.string() }), fc.record({ data: fc.jsonValue() }), fc.anything()),
          ),
        }),
      ),
      fc.anything(),
    ),
  },
  { requiredKeys: [] },
);
const frame = fc.oneof(
  fc.record({ task: taskish }),
  fc.record({
    statusUpdate: fc.record(
      { taskId: fc.string(), status: fc.record({ state: states }) },
      { requiredKeys: [] },
    ),
  }),
  fc.record({
    artifactUpdate: fc.record(
      { taskId: fc.string(), append: fc.boolean(), artifact: fc.anything() },
      { requiredKeys: [] },
    ),
  }),
  fc.anything(),
);

function onlyOurErrors(f: () => unknown): void {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(TaskplaneError);
  }
}

describe('A2A client decoders (fuzz)', () => {
  it('decodeTask + taskToSnapshot: a snapshot with a normalized state, or a TaskplaneError', () => {
    fc.assert(
      fc.property(fc.oneof(taskish, fc.anything()), (raw) => {
        onlyOurErrors(() => {
          const snap = taskToSnapshot(decodeTask(raw));
          expect([
            'accepted',
            'running',
            'waiting_for_input',
            'succeeded',
            'failed',
            'cancelled',
            'unknown',
          ]).toContain(snap.state);
        });
      }),
      { numRuns: 500 },
    );
  });

  it('applyFrame over any sequence of frames, and frameTaskId on anything', () => {
    fc.assert(
      fc.property(fc.array(frame, { maxLength: 8 }), (frames) => {
        onlyOurErrors(() => {
          let task = null;
          for (const f of frames) {
            frameTaskId(f);
            task = applyFrame(task, f) ?? task;
          }
          if (task) taskToSnapshot(task);
        });
      }),
      { numRuns: 500 },
    );
  });

  it('parseWebhook never throws anything but a TaskplaneError', async () => {
    const c = new A2AConnector({ target: 't', baseUrl: 'http://127.0.0.1:9', card });
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          frame.map((f) => JSON.stringify(f) ?? 'null'),
          fc.string(),
        ),
        fc.dictionary(
          fc.constantFrom('authorization', 'a2a-delivery-id', 'x-a2a-notification-token'),
          fc.string(),
        ),
        async (body, headers) => {
          try {
            await c.parseWebhook({ headers, rawBody: body });
          } catch (err) {
            expect(err).toBeInstanceOf(TaskplaneError);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
