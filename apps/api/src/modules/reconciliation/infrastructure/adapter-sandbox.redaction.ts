// What an adapter says through the host's log: bounded, and with every credential the host knows cut out.

/** Field names whose values are never logged (matched case-insensitively anywhere in the key). */
const SECRET_KEY = /token|secret|password|passwd|authorization|api[-_]?key|cookie|credential|session/i;
/** Shortest value redacted by content (shorter ones would redact ordinary words). */
const MIN_SECRET_CHARS = 6;
/** Longest string value kept in a logged field (characters) and most fields kept per object. */
const MAX_FIELD_CHARS = 500;
const MAX_FIELDS = 32;
const MAX_DEPTH = 4;
/** Longest JSON of one entry's fields kept (characters). */
const MAX_FIELDS_JSON_CHARS = 16 * 1024;

/**
 * A redactor for adapter output: `secrets` are values that must never appear in
 * a log line (the binding's own `env` values and the host's credentials from its environment);
 * `text(s)` replaces each secret with `[redacted]`, and the end of `s` too when it is the start of a secret (12
 * characters or more: `s` was cut inside it), then cuts `s` to `max` characters (default 500);
 * `fields(f)` copies a log-fields object at most 4 levels and 32 keys deep/wide, replacing values
 * under credential-like keys (`token`, `password`, `authorization`, `apiKey`, ...) and secrets in
 * strings, every string cut to 500 characters, the whole at most 16 Ki characters of JSON (else
 * `{omitted}`). Never throws.
 */
export interface Redactor {
  text(value: string, max?: number): string;
  fields(value: unknown): Record<string, unknown>;
}

/** The values of the host's own environment variables that name a credential (token, key, secret, password, database URL), also split on `,` and `:` (key lists). */
export function hostSecrets(env: NodeJS.ProcessEnv = process.env): string[] {
  return Object.entries(env)
    .filter(([name, value]) => /TOKEN|KEY|SECRET|PASSWORD|DATABASE_URL/i.test(name) && typeof value === "string")
    .flatMap(([, value]) => [value!, ...value!.split(/[,:]/)])
    .map((value) => value.trim())
    .filter((value) => value.length >= MIN_SECRET_CHARS);
}

/** Shortest start of a secret that {@link withoutCutSecret} redacts at the end of a text (characters). */
const MIN_CUT_PREFIX_CHARS = 12;

/**
 * `text` with its end redacted when the end is the start of a secret, at least {@link MIN_CUT_PREFIX_CHARS}
 * characters of it: a text that was cut before it reached the host (an adapter's error or log message, at the
 * sandboxed process's bound; an output line, at the line bound) can end in the first part of a credential, which
 * no longer matches the whole value. `secrets`: longest first.
 */
function withoutCutSecret(text: string, secrets: readonly string[]): string {
  for (const secret of secrets) {
    if (secret.length <= MIN_CUT_PREFIX_CHARS) continue;
    const head = secret.slice(0, MIN_CUT_PREFIX_CHARS);
    // the earliest place where the rest of the text is a start of the secret: the longest such end
    for (let at = text.indexOf(head, Math.max(0, text.length - secret.length + 1)); at !== -1; at = text.indexOf(head, at + 1))
      if (secret.startsWith(text.slice(at))) return `${text.slice(0, at)}[redacted]`;
  }
  return text;
}

/** A {@link Redactor} over `secrets` (values shorter than 6 characters are ignored). */
export function createRedactor(secrets: readonly string[]): Redactor {
  const known = [...new Set(secrets.filter((s) => s.length >= MIN_SECRET_CHARS))].sort((a, b) => b.length - a.length);
  const text = (value: string, max = MAX_FIELD_CHARS): string => {
    let out = value;
    for (const secret of known) if (out.includes(secret)) out = out.split(secret).join("[redacted]");
    out = withoutCutSecret(out, known);
    return out.length > max ? `${out.slice(0, max - 1)}…` : out;
  };
  const copy = (value: unknown, depth: number): unknown => {
    if (typeof value === "string") return text(value);
    if (typeof value === "number" || typeof value === "boolean" || value === null) return value;
    if (depth >= MAX_DEPTH || typeof value !== "object") return "[omitted]";
    if (Array.isArray(value)) return value.slice(0, MAX_FIELDS).map((item) => copy(item, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value as Record<string, unknown>).slice(0, MAX_FIELDS))
      out[text(key, 64)] = SECRET_KEY.test(key) ? "[redacted]" : copy(child, depth + 1);
    return out;
  };
  return {
    text,
    fields(value: unknown): Record<string, unknown> {
      try {
        const out = copy(value, 0);
        if (typeof out !== "object" || out === null || Array.isArray(out)) return {};
        // the whole entry is bounded too (32 keys at 4 levels could still be large)
        return JSON.stringify(out).length > MAX_FIELDS_JSON_CHARS
          ? { omitted: "log fields over 16 Ki characters" }
          : (out as Record<string, unknown>);
      } catch {
        return {};
      }
    },
  };
}
