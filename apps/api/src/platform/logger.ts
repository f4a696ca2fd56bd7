import pino, { type Logger } from "pino";

/** Creates the API's pino logger (JSON lines on stdout) at `level`. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: "mosoo-api" } });
}
