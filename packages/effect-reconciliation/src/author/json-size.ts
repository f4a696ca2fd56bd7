// Measures a value's size as stored JSON (or null when it cannot be serialized), and deep-copies it as a store would read it back.
import { Buffer } from "node:buffer";

/**
 * The size in bytes of `value` once serialized with `JSON.stringify` (UTF-8), or `null` when it
 * cannot be serialized as JSON (cycles, BigInt, a throwing `toJSON`/getter, or `undefined` /
 * a function at the top level). This is the size a store persists, so the runtime's bounds
 * (`MAX_RECEIPT_BYTES`, `MAX_RESULT_BYTES`) are measured with it. Never throws.
 */
export function jsonByteLength(value: unknown): number | null {
  try {
    const text = JSON.stringify(value);
    return typeof text === "string" ? Buffer.byteLength(text, "utf8") : null;
  } catch {
    return null;
  }
}

/**
 * A deep copy of `value` as a store would read it back (`JSON.parse(JSON.stringify(value))`), so a
 * decision never aliases objects an adapter still holds. Only call it on values that passed
 * {@link jsonByteLength}; throws what `JSON.stringify` throws otherwise.
 */
export function jsonClone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
