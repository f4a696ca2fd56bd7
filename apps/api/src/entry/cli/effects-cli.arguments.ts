// The `mosoo-effects` CLI's argument parsers and its one-line usage errors (no option value of a misspelt flag is printed).
import { InvalidArgumentError } from "commander";
import ms from "ms";
import { strictIntegerString, usageErrorWithoutValues } from "@mosoo/contracts";

/** Commander argument parser: the value as given, unless blank. @throws InvalidArgumentError `must not be blank`. */
export const nonBlank = (value: string): string => {
  if (value.trim() === "") throw new InvalidArgumentError("must not be blank");
  return value;
};
/** Commander argument parser: a page size, a strict decimal 1-500, kept as text. @throws InvalidArgumentError otherwise. */
export const pageSize = (value: string): string => {
  // strict, as the API parses it: `0x10`, `1e2`, `+5` are refused (@mosoo/contracts strictIntegerString)
  if (!strictIntegerString(1, 500).safeParse(value).success) throw new InvalidArgumentError("must be a whole number from 1 to 500");
  return value;
};
/** Commander argument parser: a duration (`30s`, `15m`, `2h`, `7d`; the `ms` package) as whole ms in text. @throws InvalidArgumentError otherwise. */
export const duration = (value: string): string => {
  const parsed = ms(value as ms.StringValue);
  if (typeof parsed !== "number" || !Number.isFinite(parsed) || parsed < 0)
    throw new InvalidArgumentError("must be a duration such as 30s, 15m, 2h or 7d");
  return String(Math.round(parsed));
};
/**
 * Commander argument parser: the API's base URL, an http(s) URL without credentials (`user:password@`:
 * the CLI authenticates with its operator token, and `fetch` refuses such a URL) and without a query or
 * fragment (a token there would be printed with every error naming the URL); kept as given.
 * @throws InvalidArgumentError otherwise (its message never repeats the value).
 */
export const httpUrl = (value: string): string => {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError("must be an http(s) URL such as http://127.0.0.1:8787");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new InvalidArgumentError("must be an http(s) URL such as http://127.0.0.1:8787");
  if (url.username !== "" || url.password !== "")
    throw new InvalidArgumentError("may not contain credentials (user:password@); pass the operator token with --token");
  if (url.search !== "" || url.hash !== "")
    throw new InvalidArgumentError("may not have a query (?…) or fragment (#…): it is the API's base URL");
  return value;
};
/** Commander argument parser for option `what`: the value parsed as JSON. @throws InvalidArgumentError `<what> must be JSON`. */
export const json =
  (what: string) =>
  (value: string): unknown => {
    try {
      return JSON.parse(value) as unknown;
    } catch {
      throw new InvalidArgumentError(`${what} must be JSON`);
    }
  };

/** A commander usage error as the CLI's one stderr line: `mosoo-effects: request.invalid: <message on one line>\n`. */
export function usageErrorLine(text: string): string {
  return `mosoo-effects: request.invalid: ${usageErrorWithoutValues(text)
    .replace(/^error: /, "")
    .replace(/\s*\n\s*/g, " ")
    .trim()}\n`;
}
