import type { ChangeNotice } from '../../src/store/store.ts';

/**
 * Resolves when `holds()` is true for record `id`, checked at once and again on each change the store
 * reports for it (no sleeping); rejects with `what` after `timeoutMs`.
 */
export function untilStored(
  store: { onChange(listener: (n: ChangeNotice) => void): () => void },
  id: string,
  holds: () => Promise<boolean>,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      off();
      if (err) reject(err);
      else resolve();
    };
    const check = async () => {
      if (await holds()) finish();
    };
    const off = store.onChange((n) => {
      if (n.id === id) void check();
    });
    const timer = setTimeout(
      () => finish(new Error(`${what}: not reached within ${timeoutMs} ms`)),
      timeoutMs,
    );
    void check();
  });
}
