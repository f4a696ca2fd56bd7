/** Display helpers. Everything returned is plain text: the caller renders it as a text node. */

/** `2026-11-29 12:00:05 UTC` from ms since the epoch (or "—"). */
export function when(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  return `${new Date(ms).toISOString().replace("T", " ").slice(0, 19)} UTC`;
}

/** A short age such as `3 min` or `2 h 5 min`, from a duration in ms. */
export function age(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d`;
}

/** Pretty JSON of any value, for a `<pre>` (as text). */
export function json(value: unknown): string {
  if (value === null || value === undefined) return "—";
  return JSON.stringify(value, null, 2);
}

/** What an attention reason means, for people. */
export const ATTENTION_LABELS: Record<string, string> = {
  key_conflict: "key conflict: the provider recorded a different request under this key",
  retention_expired: "retention expired: the provider no longer remembers the key",
  retention_contradicted:
    "retention contradicted: the provider said not executed, but forgot an older key that committed (it keeps keys shorter than declared)",
  lookup_bound_reached: "lookup bound reached: automatic lookups stopped",
};
