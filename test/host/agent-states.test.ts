import { afterEach, describe, expect, it } from 'vitest';
import { SendMessageRequest, taskStateToJSON, type StreamResponse, type Task } from '@a2a-js/sdk';
import { defineAgent } from '../../src/host/agent-api.ts';
import type { RunningHost } from '../../src/host/start-host.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { sdkClient, type Binding } from './helpers.ts';
import { startTestHost } from './in-process.ts';

/** The states an agent's ctx calls produce, as a client streaming the task sees them. */
const hosts: RunningHost[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

const agent = defineAgent({
  card: { name: 'states', description: 'shows states', version: '1' },
  async execute(ctx) {
    if (ctx.text === 'reject') return ctx.reject('I only summarize English text.');
    if (ctx.text === 'reject later') {
      await ctx.status('looking');
      await ctx.reject('Out of scope after all.');
      return;
    }
    if (ctx.text === 'artifact first') await ctx.artifact({ name: 'a', parts: [{ text: 'x' }] });
    await ctx.status('reading');
    await ctx.status('writing');
    return 'done';
  },
});

let seq = 0;
const send = (text: string) =>
  SendMessageRequest.fromJSON({
    message: { messageId: `st-${process.pid}-${++seq}`, role: 'ROLE_USER', parts: [{ text }] },
  });

async function stream(binding: Binding, text: string): Promise<Array<[string, string | undefined]>> {
  const h = await startTestHost(new MemoryStore(), { agent });
  hosts.push(h);
  const client = await sdkClient(h.url, binding);
  const out: Array<[string, string | undefined]> = [];
  for await (const e of client.sendMessageStream(send(text)) as AsyncGenerator<StreamResponse>) {
    const p = e.payload!;
    if (p.$case === 'task') out.push(['task', taskStateToJSON(p.value.status!.state)]);
    if (p.$case === 'artifactUpdate') out.push(['artifact', undefined]);
    if (p.$case === 'statusUpdate') {
      const c = p.value.status!.message?.parts[0]?.content;
      out.push([taskStateToJSON(p.value.status!.state), c?.$case === 'text' ? c.value : undefined]);
    }
  }
  return out;
}

describe.each<Binding>(['JSONRPC', 'HTTP+JSON'])('agent states over %s', (binding) => {
  it('the first ctx.status is one WORKING event carrying its message, not two', async () => {
    expect(await stream(binding, 'go')).toEqual([
      ['task', 'TASK_STATE_SUBMITTED'],
      ['TASK_STATE_WORKING', 'reading'],
      ['TASK_STATE_WORKING', 'writing'],
      ['TASK_STATE_COMPLETED', 'done'],
    ]);
  });

  it('a first change that is not a status still moves SUBMITTED → WORKING once', async () => {
    expect(await stream(binding, 'artifact first')).toEqual([
      ['task', 'TASK_STATE_SUBMITTED'],
      ['TASK_STATE_WORKING', undefined],
      ['artifact', undefined],
      ['TASK_STATE_WORKING', 'reading'],
      ['TASK_STATE_WORKING', 'writing'],
      ['TASK_STATE_COMPLETED', 'done'],
    ]);
  });

  it('ctx.reject ends the task as REJECTED with the reason', async () => {
    expect(await stream(binding, 'reject')).toEqual([
      ['task', 'TASK_STATE_SUBMITTED'],
      ['TASK_STATE_REJECTED', 'I only summarize English text.'],
    ]);
    expect(await stream(binding, 'reject later')).toEqual([
      ['task', 'TASK_STATE_SUBMITTED'],
      ['TASK_STATE_WORKING', 'looking'],
      ['TASK_STATE_REJECTED', 'Out of scope after all.'],
    ]);
  });

  it('a blocking SendMessage returns the REJECTED task', async () => {
    const h = await startTestHost(new MemoryStore(), { agent });
    hosts.push(h);
    const client = await sdkClient(h.url, binding);
    const task = (await client.sendMessage(send('reject'))) as Task;
    expect(taskStateToJSON(task.status!.state)).toBe('TASK_STATE_REJECTED');
  });
});
