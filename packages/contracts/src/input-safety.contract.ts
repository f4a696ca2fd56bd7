// Input rules every boundary shares: strict UTF-8, JSON depth and forbidden keys, safe identifiers and text, strict numbers.
import { z } from "zod";

/**
 * Input rules shared by every boundary of the runtime (API routes, the Driver's outgoing requests,
 * the CLI): docs/DESIGN.md §10 ("Bodies must be `application/json`, well-formed UTF-16, within size and
 * nesting-depth limits, and identifiers free of control and bidi characters"). Beyond that: a
 * body's bytes must be valid UTF-8 ({@link decodeUtf8Strict}), request objects are strict (an
 * unknown field is refused, never ignored: zod `strictObject` in the request schemas), and
 * identifiers carry no Unicode format character (category Cf) either. Nothing here
 * recurses: a hostile document nested 1,000,000 levels deep is judged with an explicit stack, and a
 * problem is reported before anything calls `JSON.stringify` on it (which does recurse and would
 * throw `RangeError: Maximum call stack size exceeded`).
 */

/** Deepest nesting of JSON objects/arrays accepted anywhere (a top-level object is depth 1). */
export const MAX_JSON_DEPTH = 400;

/**
 * Object keys refused anywhere in a JSON document (400, never silently dropped): they name
 * JavaScript's prototype machinery, and zod/`Object.assign`/spreads treat them inconsistently, so a
 * call could be fingerprinted without a key the provider later sees.
 */
export const FORBIDDEN_JSON_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/** Largest `details` object of a `RunError` a Driver may send, in bytes of UTF-8 JSON (4 KiB). */
export const MAX_ERROR_DETAILS_BYTES = 4096;

/** What is wrong with a JSON value: `path` (dot-joined keys/indexes, `""` for the root) and a one-line `message`. */
export interface JsonProblem {
  path: string;
  message: string;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** C0/C1 control characters and the Unicode bidi formatting characters (ALM, LRM, RLM, LRE…RLO, LRI…PDI). */
const CONTROL_OR_BIDI = /[\p{Cc}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;
/**
 * Unicode format characters (general category Cf): invisible characters such as U+00AD SOFT HYPHEN,
 * U+200B ZERO WIDTH SPACE, U+200C/D ZERO WIDTH (NON-)JOINER, U+2060 WORD JOINER, U+FEFF ZERO WIDTH
 * NO-BREAK SPACE, the tag characters U+E0000–U+E007F (and the bidi characters, which are Cf too).
 */
const FORMAT_CHARACTER = /\p{Cf}/u;

/** True when `s` is well-formed UTF-16: no lone (unpaired) surrogate, so it encodes to valid UTF-8. */
export function isWellFormedText(s: string): boolean {
  return !LONE_SURROGATE.test(s);
}

/** True when `s` contains a control character (U+0000–U+001F, U+007F–U+009F) or a bidi formatting character. */
export function hasControlOrBidi(s: string): boolean {
  return CONTROL_OR_BIDI.test(s);
}

/**
 * True when `s` contains a Unicode format character (general category Cf: U+00AD, U+200B–U+200F,
 * U+2060–U+2064, U+FEFF, the tag characters, the bidi formatting characters, ...). They render as
 * nothing, so `create\u200bIssue` looks exactly like `createIssue`.
 */
export function hasFormatCharacter(s: string): boolean {
  return FORMAT_CHARACTER.test(s);
}

/** The message of an identifier that holds a control or bidi character (see {@link identifierSchema}). */
export const CONTROL_OR_BIDI_MESSAGE = "must not contain control or bidi characters";
/** The message of an identifier that holds another Unicode format character (see {@link identifierSchema}). */
export const FORMAT_CHARACTER_MESSAGE =
  "must not contain invisible format characters (Unicode category Cf, e.g. U+200B, U+2060, U+FEFF, U+00AD)";

/**
 * The first reason `s` is not acceptable as the characters of an identifier, or `null`: not
 * well-formed UTF-16, a control or bidi character ({@link hasControlOrBidi}), another format
 * character ({@link hasFormatCharacter}). Length is not judged here. Used by {@link identifierSchema}
 * and by schemas that judge the raw text before trimming it (nothing is dropped silently).
 */
export function identifierCharsProblem(s: string): string | null {
  if (!isWellFormedText(s)) return "must be well-formed UTF-16 (no lone surrogates)";
  if (hasControlOrBidi(s)) return CONTROL_OR_BIDI_MESSAGE;
  if (hasFormatCharacter(s)) return FORMAT_CHARACTER_MESSAGE;
  return null;
}

const fatalUtf8 = new TextDecoder("utf-8", { fatal: true });

/** The message of a body whose bytes are not valid UTF-8 (see {@link decodeUtf8Strict}). */
export const INVALID_UTF8_MESSAGE = "the request body is not valid UTF-8";

/**
 * Decodes `bytes` as UTF-8 with a fatal decoder (`TextDecoder("utf-8", {fatal: true})`): returns the
 * text, or `null` when any byte sequence is invalid (a stray `0xFF`, a truncated or overlong
 * sequence, an encoded surrogate). Never substitutes U+FFFD: a body is refused, not silently
 * changed. A leading byte order mark is dropped (RFC 8259 §8.1 lets a
 * parser ignore it); it is not part of the JSON text.
 */
export function decodeUtf8Strict(bytes: ArrayBuffer | Uint8Array): string | null {
  try {
    return fatalUtf8.decode(bytes);
  } catch {
    return null;
  }
}

interface Frame {
  value: unknown;
  depth: number;
  key: string;
  parent: Frame | undefined;
}

function pathOf(frame: Frame | undefined, last?: string): string {
  const parts: string[] = last === undefined ? [] : [last];
  for (let f = frame; f?.parent; f = f.parent) parts.push(f.key);
  return parts.reverse().join(".");
}

/**
 * The first problem of `value` (a parsed JSON document) against the shared rules, or `null`:
 * nesting deeper than `maxDepth` ({@link MAX_JSON_DEPTH}), a key in {@link FORBIDDEN_JSON_KEYS},
 * or a string (key or value) that is not well-formed UTF-16. Iterative (explicit stack), so it is
 * safe on any depth; depth is checked first for each container, before its children are visited.
 */
export function findJsonProblem(value: unknown, maxDepth: number = MAX_JSON_DEPTH): JsonProblem | null {
  const stack: Frame[] = [{ value, depth: 0, key: "", parent: undefined }];
  while (stack.length > 0) {
    const frame = stack.pop() as Frame;
    const v = frame.value;
    if (typeof v === "string") {
      if (!isWellFormedText(v)) return { path: pathOf(frame), message: "must be well-formed UTF-16 (no lone surrogates)" };
      continue;
    }
    if (typeof v !== "object" || v === null) continue;
    const depth = frame.depth + 1;
    if (depth > maxDepth) return { path: pathOf(frame), message: `nested deeper than ${maxDepth} levels` };
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i -= 1) stack.push({ value: v[i], depth, key: String(i), parent: frame });
      continue;
    }
    for (const key of Object.keys(v)) {
      if (FORBIDDEN_JSON_KEYS.has(key)) return { path: pathOf(frame, key), message: `the key "${key}" is not allowed` };
      if (!isWellFormedText(key)) return { path: pathOf(frame, "<key>"), message: "keys must be well-formed UTF-16 (no lone surrogates)" };
      stack.push({ value: (v as Record<string, unknown>)[key], depth, key, parent: frame });
    }
  }
  return null;
}

/** Formats a {@link JsonProblem} as one line: `path: message` (just `message` at the root). */
export function formatJsonProblem(problem: JsonProblem): string {
  return problem.path ? `${problem.path}: ${problem.message}` : problem.message;
}

/**
 * An identifier (tool name, request id, tool call id, Driver name, operator actor, ...): `min`–`max`
 * characters, well-formed UTF-16, no control or bidi characters ({@link CONTROL_OR_BIDI_MESSAGE}) and
 * no other Unicode format character (category Cf, {@link FORMAT_CHARACTER_MESSAGE}).
 * Such strings are stored, compared and shown to operators; an invisible or reordering
 * character would make two different ids look the same.
 */
export function identifierSchema(min: number, max: number): z.ZodString {
  return z
    .string()
    .min(min)
    .max(max)
    .refine(isWellFormedText, "must be well-formed UTF-16 (no lone surrogates)")
    .refine((s) => !hasControlOrBidi(s), CONTROL_OR_BIDI_MESSAGE)
    .refine((s) => !hasFormatCharacter(s), FORMAT_CHARACTER_MESSAGE);
}

/**
 * Free text that is stored (a reason, an error message, a tool's output): at most `max` characters,
 * well-formed UTF-16; with `allowNul: false` (the default) also no NUL character.
 */
export function textSchema(min: number, max: number, opts: { allowNul?: boolean } = {}): z.ZodString {
  const base = z.string().min(min).max(max).refine(isWellFormedText, "must be well-formed UTF-16 (no lone surrogates)");
  return opts.allowNul ? base : base.refine((s) => !s.includes("\u0000"), "must not contain NUL");
}

/**
 * A JSON object (string keys) that passes {@link findJsonProblem} and, with `maxBytes`, is at most
 * that many bytes of UTF-8 JSON. The size is measured only after the depth check, so
 * `JSON.stringify` never sees a document it cannot serialize.
 */
export function safeJsonObjectSchema(opts: { maxBytes?: number } = {}) {
  return z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
    const problem = findJsonProblem(value);
    if (problem) {
      ctx.addIssue({ code: "custom", message: formatJsonProblem(problem) });
      return;
    }
    if (opts.maxBytes !== undefined && utf8Length(JSON.stringify(value)) > opts.maxBytes) {
      ctx.addIssue({ code: "custom", message: `larger than ${opts.maxBytes} bytes of JSON` });
    }
  });
}

const encoder = new TextEncoder();
const utf8Length = (s: string): number => encoder.encode(s).length;

const DECIMAL_INTEGER = /^(0|-?[1-9][0-9]*)$/;
const DECIMAL_NUMBER = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;

/**
 * A decimal integer given as text (a query parameter or an environment variable), `min`–`max`.
 * Strict: only an optional `-` and digits without leading zeros, so `0x50`, `1e2`, `+5`, ` 5`,
 * `5 `, `05` and `5.0` are refused (JavaScript's `Number()` would accept them all).
 */
export function strictIntegerString(min: number, max: number) {
  return z
    .string()
    .regex(DECIMAL_INTEGER, "must be a decimal integer (digits only)")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
}

/** A non-negative decimal number given as text (`2`, `1.5`), `min`–`max`; as strict as {@link strictIntegerString}. */
export function strictDecimalString(min: number, max: number) {
  return z
    .string()
    .regex(DECIMAL_NUMBER, "must be a decimal number (digits and an optional fraction)")
    .transform(Number)
    .pipe(z.number().min(min).max(max));
}

/**
 * Like {@link strictIntegerString}, but a JSON number is accepted too (a client that builds a
 * query object from numbers, a CLI passing a parsed value): an integer-valued number is judged as
 * its decimal text, so the same strict rules and the same messages apply to both.
 */
export function strictIntegerInput(min: number, max: number) {
  return z.preprocess((v) => (typeof v === "number" && Number.isInteger(v) ? String(v) : v), strictIntegerString(min, max));
}
