/** The slice of a pino logger the store uses. Messages never contain credentials or full URLs. */
export interface StoreLogger {
  warn(msg: string): void;
  info(msg: string): void;
}

export const silentLogger: StoreLogger = { warn: () => undefined, info: () => undefined };
