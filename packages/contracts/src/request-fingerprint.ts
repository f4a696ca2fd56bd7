// A tool call's request fingerprint: sha-256 of its arguments in canonical JSON (RFC 8785), and the fingerprint's pattern.
import { createHash } from "node:crypto";
import canonicalize from "canonicalize";

/**
 * The request fingerprint of a tool call: lowercase hex sha-256 of the RFC 8785 (JSON
 * Canonicalization Scheme) form of its arguments object. Two argument objects that differ only in
 * key order or number spelling have the same fingerprint. Written with the effect's intent and
 * compared with the fingerprint a provider recorded for the same idempotency key (docs/DESIGN.md §5,
 * `key_conflict`).
 * @param args the arguments object (already parsed from `argumentsJson`).
 * @returns 64 hex characters.
 */
export function fingerprintArguments(args: Record<string, unknown>): string {
  const canonical = canonicalize(args);
  if (canonical === undefined) throw new TypeError("arguments cannot be canonicalized as JSON");
  return createHash("sha256").update(canonical, "utf8").digest("hex");
}

/** A request fingerprint: 64 lowercase hex characters (sha-256). */
export const REQUEST_FINGERPRINT_PATTERN = /^[0-9a-f]{64}$/;
