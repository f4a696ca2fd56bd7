// The loggers handed to adapters: one that drops everything, and one that adds fields and never throws.
import type { AdapterLogger } from "../author/adapter.contract.js";

/** A logger that drops everything; the default of `reconcileEffect`. */
export const NOOP_LOGGER: AdapterLogger = Object.freeze({
  debug(): void {},
  info(): void {},
  warn(): void {},
  error(): void {},
});

const LEVELS = ["debug", "info", "warn", "error"] as const;

/**
 * @internal A logger that adds `bound` fields to every entry and never throws: a throwing host
 * logger or a hostile `fields` argument from an adapter is swallowed, so logging can never turn a
 * lookup into an error.
 */
export function safeLogger(target: AdapterLogger, bound: Record<string, unknown>): AdapterLogger {
  const logger = {} as AdapterLogger;
  for (const level of LEVELS) {
    logger[level] = (fields: Record<string, unknown>, message: string): void => {
      try {
        const extra = typeof fields === "object" && fields !== null ? fields : {};
        target[level]({ ...extra, ...bound }, String(message));
      } catch {
        // Logging must not change a lookup's outcome.
      }
    };
  }
  return Object.freeze(logger);
}
