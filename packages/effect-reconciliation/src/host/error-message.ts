// Turns anything thrown into a short, one-line, stack-free summary for the records, without ever throwing.
import { z } from "zod";

/** The longest one-line error summary the runtime records: 500 characters. */
const MAX_ERROR_SUMMARY_LENGTH = 500;

/**
 * A one-line, stack-free summary of anything thrown (at most {@link MAX_ERROR_SUMMARY_LENGTH}
 * characters): `"<name>: <message>"` for errors, the zod issues for a `ZodError`, `String(value)`
 * otherwise, with every URL's credentials and query and a connection string's password hidden ({@link withoutUrlSecrets}: a provider URL
 * in a binding's options may carry them, and these summaries are printed and stored). Never throws,
 * even for hostile values (throwing getters, proxies).
 */
export function summarizeError(value: unknown): string {
  let text: string;
  try {
    if (isZodError(value)) text = z.prettifyError(value);
    else if (value instanceof Error) text = `${value.name}: ${value.message}`;
    else text = String(value);
  } catch {
    text = "unprintable thrown value";
  }
  return toOneLine(withoutUrlSecrets(text));
}

/**
 * `text` with the secrets a URL or a connection string in it may carry hidden:
 * - everything between `scheme://` (or a scheme-relative `//`) and the last `@` of the URL becomes `***`
 *   (`postgres://app:p@ss@db` → `postgres://***@db`; a path holding an `@` loses its host, the safe direction);
 * - a query or fragment (`?token=…`, `#access_token=…`) becomes `?***`, up to the next space, quote or bracket;
 * - the same in a percent-encoded URL (`https%3A%2F%2Fu%3Apw%40h` → `https%3A%2F%2F***%40h`, `%3F…` → `%3F***`);
 * - the value of a libpq keyword/value connection string's password (`password=…`, `sslpassword=…`, quoted or
 *   not; libpq's documented keywords) and of a `PGPASSWORD=` assignment becomes `***`.
 */
function withoutUrlSecrets(text: string): string {
  return text
    .replace(/((?:[a-z][a-z0-9+.-]*:)?\/\/)[^\s'"<>()]*@/gi, "$1***@")
    .replace(/([a-z][a-z0-9+.-]*:\/\/[^\s?#'"<>()]*)[?#][^\s'"<>()]*/gi, "$1?***")
    .replace(/([a-z][a-z0-9+.-]*%3A%2F%2F)[^\s'"<>()]*%40/gi, "$1***%40")
    .replace(/([a-z][a-z0-9+.-]*%3A%2F%2F[^\s'"<>()]*?)%(3F|23)[^\s'"<>()]*/gi, "$1%$2***")
    .replace(/\b((?:ssl)?password|PGPASSWORD)(\s*=\s*)(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s'"]+)/gi, "$1$2***");
}

/** Collapses whitespace runs (newlines included) to one space, replaces other control characters (NUL included) with U+FFFD, and truncates to {@link MAX_ERROR_SUMMARY_LENGTH}. */
export function toOneLine(text: string): string {
  // Control characters other than whitespace become U+FFFD: PostgreSQL refuses a NUL in a text column, and a
  // record whose error it refuses would roll its whole outcome back, sweep after sweep.
  const line = text
    .replace(/\s+/g, " ")
    .replace(/[\u0000-\u001f\u007f]/g, "\ufffd")
    .trim();
  return line.length > MAX_ERROR_SUMMARY_LENGTH ? `${line.slice(0, MAX_ERROR_SUMMARY_LENGTH - 1)}…` : line;
}

/** True for a zod error, also one thrown by another copy of zod (checked by shape). */
function isZodError(value: unknown): value is z.ZodError {
  if (value instanceof z.ZodError) return true;
  return (
    typeof value === "object" &&
    value !== null &&
    (value as { name?: unknown }).name === "ZodError" &&
    Array.isArray((value as { issues?: unknown }).issues)
  );
}
