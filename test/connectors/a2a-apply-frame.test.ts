import { describe, expect, it } from 'vitest';
import { applyFrame } from '../../src/connectors/a2a/task-snapshot.ts';
import type { Task } from '../../src/protocols/a2a/types.ts';

/** A stream's frames fold into the task it follows; each frame gives a new task and leaves the one before as it was. */
describe('applyFrame', () => {
  const base: Task = {
    id: 't1',
    contextId: 'c1',
    status: { state: 'TASK_STATE_WORKING' },
    artifacts: [{ artifactId: 'a', parts: [{ text: 'one' }] }],
  };

  it('a status update replaces the status and keeps the artifacts; the earlier task is unchanged', () => {
    const before = structuredClone(base);
    const next = applyFrame(base, {
      statusUpdate: {
        taskId: 't1',
        status: { state: 'TASK_STATE_COMPLETED', timestamp: '2026-12-01T00:00:00Z' },
      },
    })!;
    expect(next.status).toEqual({ state: 'TASK_STATE_COMPLETED', timestamp: '2026-12-01T00:00:00Z' });
    expect(next.artifacts).toEqual(base.artifacts);
    expect(base).toEqual(before);
  });

  it("a frame about another task changes nothing, in any key spelling; one naming no task is this one's", () => {
    const ended = { state: 'TASK_STATE_COMPLETED' };
    expect(applyFrame(base, { statusUpdate: { taskId: 'other', status: ended } })).toBeNull();
    expect(applyFrame(base, { status_update: { task_id: 'other', status: ended } })).toBeNull();
    expect(
      applyFrame(base, { artifactUpdate: { taskId: 'other', artifact: { artifactId: 'x', parts: [] } } }),
    ).toBeNull();
    expect(applyFrame(base, { task: { id: 'other', status: ended } })).toBeNull();
    expect(applyFrame(base, { status_update: { task_id: 't1', status: ended } })!.status.state).toBe(
      'TASK_STATE_COMPLETED',
    );
    expect(applyFrame(base, { statusUpdate: { status: ended } })!.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('artifact updates append to, replace or add an artifact without touching the earlier task', () => {
    const before = structuredClone(base);
    const appended = applyFrame(base, {
      artifactUpdate: { taskId: 't1', append: true, artifact: { artifactId: 'a', parts: [{ text: 'two' }] } },
    })!;
    expect(appended.artifacts).toEqual([{ artifactId: 'a', parts: [{ text: 'one' }, { text: 'two' }] }]);
    const replaced = applyFrame(appended, {
      artifactUpdate: { taskId: 't1', artifact: { artifactId: 'a', parts: [{ text: 'new' }] } },
    })!;
    expect(replaced.artifacts).toEqual([{ artifactId: 'a', parts: [{ text: 'new' }] }]);
    const added = applyFrame(replaced, {
      artifactUpdate: { taskId: 't1', artifact: { artifactId: 'b', parts: [{ data: { n: 1 } }] } },
    })!;
    expect(added.artifacts!.map((a) => a.artifactId)).toEqual(['a', 'b']);
    expect(base).toEqual(before);
    expect(appended.artifacts).toEqual([{ artifactId: 'a', parts: [{ text: 'one' }, { text: 'two' }] }]);
    expect(replaced.artifacts).toHaveLength(1);
  });
});
