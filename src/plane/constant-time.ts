/**
 * String comparison whose time does not depend on where the strings differ, for token hashes.
 * Written in plain TS (no node:crypto) so plane/ stays runnable in the browser lab.
 */
export function timingSafeEqualString(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= (a.charCodeAt(i) || 0) ^ (b.charCodeAt(i) || 0);
  return diff === 0;
}
