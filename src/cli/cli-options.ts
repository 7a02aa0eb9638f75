import { CommanderError, InvalidArgumentError, type Command } from 'commander';

/**
 * Flag values are parsed by commander (`.argParser`, `.choices()`), so a bad one is reported the same
 * way for every command: one line naming the flag, the value and what it accepts, exit status 2.
 */

/** pino's levels, for `--log-level`. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** A commander parser for an integer flag in `min..max`. */
export function intOption(min = 0, max?: number): (value: string) => number {
  const what =
    max !== undefined
      ? `an integer in ${min}..${max}`
      : min === 0
        ? 'a non-negative integer'
        : min === 1
          ? 'a positive integer'
          : `an integer of at least ${min}`;
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < min || (max !== undefined && n > max))
      throw new InvalidArgumentError(`Expected ${what}.`);
    return n;
  };
}

/** A commander parser for any finite number; ranges are the settings' own to check. */
export function numberOption(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError('Expected a number.');
  return n;
}

/** `--retention-days`: days (fractions allowed, >= 0) or `never` (null: finished tasks are kept for ever). */
export function retentionDays(value: string): number | null {
  if (value === 'never') return null;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new InvalidArgumentError('Expected a number of days >= 0, or "never".');
  return n;
}

/** A commander parser for a comma-separated list whose every item is one of `allowed`. */
export function listOption<T extends string>(allowed: readonly T[]): (value: string) => T[] {
  return (value) => {
    const items = value.split(',').map((s) => s.trim());
    const wrong = items.filter((s) => !allowed.includes(s as T));
    if (wrong.length)
      throw new InvalidArgumentError(
        `${wrong.map((s) => `'${s}'`).join(', ')} not allowed. Allowed choices are ${allowed.join(', ')}.`,
      );
    return items as T[];
  };
}

/**
 * Commander's errors as the CLI reports its own: on stderr as `taskplane: …`. Call on the program before
 * its commands are added, so they inherit it; parse errors then reach the caller as CommanderError.
 */
export function cliErrors(program: Command): Command {
  return program
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(`taskplane: ${text.replace(/^error: /, '')}`) });
}

/**
 * The exit status for a CommanderError, and whether to point at --help: a bad flag value is a
 * configuration error (status 2) and its line already says what is allowed; other usage errors
 * (unknown flag, missing argument) get the hint.
 */
export function commanderExit(err: CommanderError): { status: number; hint: boolean } {
  if (err.code === 'commander.invalidArgument') return { status: 2, hint: false };
  const help = err.code === 'commander.help' || err.code === 'commander.helpDisplayed';
  return { status: err.exitCode, hint: err.exitCode !== 0 && !help };
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
