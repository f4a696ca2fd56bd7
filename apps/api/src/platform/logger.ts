// Creates the API's pino JSON logger, with credential fields and headers redacted from every line.
import pino, { type Logger } from "pino";

/**
 * Paths pino replaces with `[redacted]` in every log line (docs/DESIGN.md §10: logs never carry
 * credentials): authorization/cookie headers of a logged request, and any field named like a
 * credential (`token`, `driverToken`, `operatorToken`, `apiKey`, `secret`, `password`, ...) at the
 * top level or one/two levels down. pino's redaction works on fixed paths (fast-redact), so the
 * likely names are listed explicitly.
 */
export const LOG_REDACT_PATHS: readonly string[] = (() => {
  const names = [
    "authorization",
    "cookie",
    "token",
    "driverToken",
    "operatorToken",
    "enrollmentToken",
    "accessToken",
    "refreshToken",
    "apiKey",
    "apiKeys",
    "secret",
    "clientSecret",
    "password",
  ];
  const headerPaths = [
    "req.headers.authorization",
    "req.headers.cookie",
    "headers.authorization",
    "headers.cookie",
    'req.headers["x-api-key"]',
    'headers["x-api-key"]',
  ];
  return [...headerPaths, ...names, ...names.map((n) => `*.${n}`), ...names.map((n) => `*.*.${n}`)];
})();

/** Creates the API's pino logger (JSON lines on stdout) at `level`, with credentials redacted ({@link LOG_REDACT_PATHS}). */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: "mosoo-api" }, redact: { paths: [...LOG_REDACT_PATHS], censor: "[redacted]" } });
}
