import type { ChangeNotice } from './store.ts';

/**
 * The in-process side of `Store.onChange`. Listeners run on a microtask after the commit, never inside
 * the write, so a listener that reads the store (the usual reaction) cannot re-enter a transaction, and a
 * listener that throws cannot fail a write that already committed.
 */
export class ChangeHub {
  private readonly listeners = new Set<(change: ChangeNotice) => void>();

  subscribe(listener: (change: ChangeNotice) => void): () => void {
    // Wrap so the same function subscribed twice gets two independent subscriptions.
    const entry = (change: ChangeNotice) => listener(change);
    this.listeners.add(entry);
    return () => {
      this.listeners.delete(entry);
    };
  }

  get size(): number {
    return this.listeners.size;
  }

  emit(changes: readonly ChangeNotice[]): void {
    if (changes.length === 0 || this.listeners.size === 0) return;
    const targets = [...this.listeners];
    queueMicrotask(() => {
      for (const change of changes) {
        for (const listener of targets) {
          try {
            listener(change);
          } catch {
            // A wake-up hint failing must not break other listeners; readers poll anyway.
          }
        }
      }
    });
  }

  clear(): void {
    this.listeners.clear();
  }
}

/** One notice per write, carrying the last seq: a wake-up needs no more. */
export function envelopeNotices(id: string, events: readonly { seq: number }[]): ChangeNotice[] {
  const last = events[events.length - 1];
  return last ? [{ kind: 'envelope', id, seq: last.seq }] : [];
}

export function taskNotices(id: string, events: readonly { seq: number }[]): ChangeNotice[] {
  const last = events[events.length - 1];
  return last ? [{ kind: 'agentTask', id, seq: last.seq }] : [];
}
