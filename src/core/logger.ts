/**
 * The logger port: the slice of pino's API that taskplane's library code calls, passed in like Clock and
 * Random. A pino logger fits it as is. Library code never builds a logger and never reads the
 * environment to choose a level: the CLI builds pino (src/cli/); an embedder passes its own, and
 * without one the library is silent.
 *
 * Messages never carry credentials or full URLs with secrets in them.
 */
export interface LogFn {
  (obj: object, msg?: string): void;
  (msg: string): void;
}

export interface Logger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  /** A logger whose lines all carry `bindings` (pino's child). */
  child(bindings: Record<string, unknown>): Logger;
}

const nothing: LogFn = () => undefined;

/** Drops every line: the default when no logger is given. */
export const silentLogger: Logger = {
  debug: nothing,
  info: nothing,
  warn: nothing,
  error: nothing,
  child: () => silentLogger,
};
