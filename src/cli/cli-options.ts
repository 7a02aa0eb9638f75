import { TaskplaneError } from '../core/errors.ts';

/** A commander parser for an integer flag of at least `min`; a bad value is a `config` error naming it. */
export function intOption(name: string, min = 0): (value: string) => number {
  const what =
    min === 0 ? 'a non-negative integer' : min === 1 ? 'a positive integer' : `an integer of at least ${min}`;
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min)
      throw new TaskplaneError('config', `--${name} must be ${what}`, { field: name });
    return n;
  };
}

/** Rows as columns padded to their widest cell (the first row is the header). */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
