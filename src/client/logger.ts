/** The logging the SDK needs: structured object first, message second (pino's signature). */
export interface InformerLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Browser-safe default. */
export const consoleLogger: InformerLogger = {
  warn: (obj, msg) => console.warn(msg, obj),
  error: (obj, msg) => console.error(msg, obj),
};
