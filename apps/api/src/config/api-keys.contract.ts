// The run API's keys: their scopes, the keys file's schema, the `MOSOO_API_KEYS` parser, and the safe reading of credential files.
import { readFileSync, statSync } from "node:fs";
import { z } from "zod";
import { findJsonProblem, formatJsonProblem, UlidSchema } from "@mosoo/contracts";

/**
 * The scopes an API key may hold (checked by `CredentialGuard` in credential-guard.ts):
 * - `runs:write`: create runs and enqueue tool calls (`POST /v1/runs`, `POST /v1/runs/:id/tool-calls`);
 * - `runs:read`: read a run and its events (`GET /v1/runs/:id`, `GET /v1/runs/:id/events`);
 * - `runs:delete`: delete runs, sessions and finalized Drivers (the operator token may too);
 * - `metrics:read`: `GET /metrics` (unless `MOSOO_METRICS_PUBLIC=on`; the operator token may too).
 */
export const API_KEY_SCOPES = ["runs:write", "runs:read", "runs:delete", "metrics:read"] as const;

/** One of {@link API_KEY_SCOPES}. */
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/** Shortest secret accepted for an API key, the enrollment token and the operator token (characters). */
const MIN_SECRET_LENGTH = 16;

/**
 * One API key: a `name` (1–64 of `[A-Za-z0-9._-]`, shown in logs, never the secret), its `secret`
 * (16–512 printable ASCII characters: no whitespace, control characters, commas or colons, since the
 * API reads a bearer credential as one `\S+` token), at least one scope (each at most once), and
 * optionally `drivers`: the Driver instance ids it is restricted to (keys file only; without it the
 * key reaches runs of every Driver). A restricted key creates runs only on those Drivers and reads or
 * deletes only their runs, sessions and (finalized) instances; anything else is 403 `auth.forbidden`.
 */
export const ApiKeySchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "a key name is 1-64 characters of A-Z a-z 0-9 . _ -"),
  secret: z
    .string()
    .min(MIN_SECRET_LENGTH, `a key secret must be at least ${MIN_SECRET_LENGTH} characters`)
    .max(512)
    .regex(/^[\x21-\x7e]+$/, "a key secret is printable ASCII without spaces")
    .refine((s) => !s.includes(",") && !s.includes(":"), "a key secret may not contain ',' or ':'"),
  scopes: z
    .array(z.enum(API_KEY_SCOPES))
    .min(1, "a key needs at least one scope")
    .superRefine((scopes, ctx) => {
      const dup = scopes.find((s, i) => scopes.indexOf(s) !== i);
      if (dup) ctx.addIssue({ code: "custom", message: `duplicate scope ${dup} (each scope once)` });
    }),
  drivers: z.array(UlidSchema).min(1).max(1_000).optional(),
});

/** See {@link ApiKeySchema}. */
export type ApiKey = z.infer<typeof ApiKeySchema>;

/**
 * The keys file (`MOSOO_API_KEYS_FILE`): `{"keys": [{"name", "secret", "scopes": [...], "drivers"?: [...]}, ...]}`.
 * Key names are unique, and so are secrets.
 */
export const ApiKeysFileSchema = z
  .strictObject({ keys: z.array(ApiKeySchema).max(1_000) })
  .superRefine((file, ctx) => checkUnique(file.keys, (m) => ctx.addIssue({ code: "custom", message: m, path: ["keys"] })));

function checkUnique(keys: ApiKey[], fail: (message: string) => void): void {
  const names = new Set<string>();
  const secrets = new Set<string>();
  for (const k of keys) {
    if (names.has(k.name)) fail(`duplicate key name ${k.name}`);
    if (secrets.has(k.secret)) fail(`key ${k.name} reuses another key's secret`);
    names.add(k.name);
    secrets.add(k.secret);
  }
}

/** The first issue of a zod error as one line: `path: message` (never the rejected value). */
export function firstIssueLine(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid";
  return issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message;
}

/**
 * Parses `MOSOO_API_KEYS`: comma-separated `name:secret:scope+scope` entries, e.g.
 * `agent:0123456789abcdef:runs:write+runs:read`. Scopes themselves contain a colon, so the entry is
 * split at its first two colons only. Whitespace around an entry is ignored; an empty entry (`",,"`,
 * a stray or trailing comma) is refused: a list that looks configured but holds no key must not
 * start an API that silently refuses every request.
 * @returns the keys, or a one-line reason (never containing a secret).
 */
export function parseApiKeysEnv(value: string): { keys: ApiKey[] } | { error: string } {
  const keys: ApiKey[] = [];
  const entries = value.split(",").map((e) => e.trim());
  for (const [i, entry] of entries.entries()) {
    if (entry === "") return { error: `entry ${i + 1} is empty (a stray comma?); expected name:secret:scope+scope` };
    const first = entry.indexOf(":");
    const second = first < 0 ? -1 : entry.indexOf(":", first + 1);
    if (first < 0 || second < 0) return { error: `entry ${i + 1}: expected name:secret:scope+scope` };
    const candidate = { name: entry.slice(0, first), secret: entry.slice(first + 1, second), scopes: entry.slice(second + 1).split("+") };
    const parsed = ApiKeySchema.safeParse(candidate);
    if (!parsed.success) return { error: `entry ${i + 1}: ${firstIssueLine(parsed.error)}` };
    keys.push(parsed.data);
  }
  let dup: string | undefined;
  checkUnique(keys, (m) => (dup ??= m));
  return dup ? { error: dup } : { keys };
}

/**
 * Reads a JSON file of credentials (the keys file, the operator credentials file) of at most 1 MiB:
 * only a regular file (a FIFO or a device would block the read), only one that neither group nor
 * others may read or write (`mode & 0o077` is 0, as ssh demands of a private key: a secret readable
 * by every local account is no secret; skipped on Windows, which has no such mode bits), and no
 * `__proto__`, `constructor` or `prototype` key anywhere (`findJsonProblem` of `@mosoo/contracts`, the
 * rule bodies follow: `JSON.parse` keeps such a key, but copying it into an object drops it silently).
 * @returns the parsed JSON, or a one-line reason (`cannot read ...: ENOENT`, `... is not a regular file`,
 *   `... is readable by group or others (mode 0644); chmod 600 it`, `... is larger than 1 MiB`,
 *   `... is not valid JSON`, `...: keys.0: the key "__proto__" is not allowed`); never the file's content.
 */
export function readJsonConfigFile(path: string): { json: unknown } | { error: string } {
  let text: string;
  try {
    const stat = statSync(path);
    if (!stat.isFile()) return { error: `${path} is not a regular file` };
    if (process.platform !== "win32" && (stat.mode & 0o077) !== 0)
      return { error: `${path} is readable by group or others (mode ${(stat.mode & 0o777).toString(8).padStart(4, "0")}); chmod 600 it` };
    text = readFileSync(path, "utf8");
  } catch (err) {
    return { error: `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? "EIO"}` };
  }
  if (text.length > 1024 * 1024) return { error: `${path} is larger than 1 MiB` };
  let json: unknown;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    return { error: `${path} is not valid JSON` };
  }
  const problem = findJsonProblem(json);
  return problem ? { error: `${path}: ${formatJsonProblem(problem)}` } : { json };
}

/**
 * Reads and validates the keys file (see {@link ApiKeysFileSchema}); at most 1 MiB.
 * @returns the keys, or a one-line reason (`cannot read ...: ENOENT`, `not valid JSON`, the first zod issue).
 */
export function readApiKeysFile(path: string): { keys: ApiKey[] } | { error: string } {
  const read = readJsonConfigFile(path);
  if ("error" in read) return read;
  const parsed = ApiKeysFileSchema.safeParse(read.json);
  if (!parsed.success) return { error: `${path}: ${firstIssueLine(parsed.error)}` };
  return { keys: parsed.data.keys };
}
