/** Shared setup for the emulator's own tests: an emulator on a virtual clock and the official SDK. */
import { once } from 'node:events';
import OpenAI from 'openai';
import { VirtualClock } from '../../../src/core/clock.ts';
import { OpenAIEmulator, type OpenAIEmulatorOptions } from './emulator.ts';
import type { ResponseRun } from './responses.ts';

export interface Harness {
  emu: OpenAIEmulator;
  clock: VirtualClock;
  client: OpenAI;
  baseURL: string;
}

export async function startHarness(
  options: OpenAIEmulatorOptions = {},
  clientOptions: { maxRetries?: number } = {},
  startMs = Date.parse('2026-01-01T00:00:00Z'),
): Promise<Harness> {
  const clock = new VirtualClock(startMs);
  const emu = new OpenAIEmulator({ clock, seed: 7, ...options });
  const baseURL = await emu.start();
  const client = new OpenAI({ apiKey: 'sk-test', baseURL, maxRetries: clientOptions.maxRetries ?? 0 });
  return { emu, clock, client, baseURL };
}

/** Resolves with the next response the emulator creates. */
export async function nextCreated(emu: OpenAIEmulator): Promise<ResponseRun> {
  const [run] = (await once(emu, 'created')) as [ResponseRun];
  return run;
}

export interface Collected<T> {
  events: T[];
  error: unknown;
}

/** Reads a stream to its end, keeping what arrived before an error instead of throwing it. */
export async function collect<T>(stream: AsyncIterable<T>): Promise<Collected<T>> {
  const events: T[] = [];
  try {
    for await (const event of stream) events.push(event);
    return { events, error: undefined };
  } catch (error) {
    return { events, error };
  }
}

/** Lets real socket I/O happen without moving virtual time. */
export function ioTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
