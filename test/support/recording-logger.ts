import type { Logger } from '../../src/core/logger.ts';

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: Record<string, unknown>;
  msg: string | undefined;
}

/** A logger that keeps every line (its children write to the same list), for tests that assert on logs. */
export function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (obj: object | string, msg?: string): void => {
      if (typeof obj === 'string') lines.push({ level, obj: {}, msg: obj });
      else lines.push({ level, obj: obj as Record<string, unknown>, msg });
    };
  const logger: Logger & { lines: LogLine[] } = {
    lines,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: () => logger,
  };
  return logger;
}
