/** The operator credentials' configuration: `MOSOO_OPERATOR_TOKEN` and the operator credentials file, validated by zod. */
import { z } from "zod";
import { OPERATOR_SCOPES } from "@mosoo/contracts";
import { OperatorCredentials, tokenDigest, type OperatorCredential } from "../modules/operator/domain/operator-credential.js";
import { firstIssueLine, readJsonConfigFile } from "./api-keys.contract.js";

/** Fewest distinct characters an operator token must hold (a 16-character `aaaa…` or `abab…` is refused as weak). */
const MIN_DISTINCT_TOKEN_CHARS = 8;

/** A credential name: 1–64 of `[A-Za-z0-9._-]`; it is the `actor` of every audit row the credential writes. */
const OperatorNameSchema = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "a credential name is 1-64 characters of A-Z a-z 0-9 . _ -");

/**
 * An operator token: 16–512 printable ASCII characters without spaces (a bearer credential is one
 * `\S+` token), at least {@link MIN_DISTINCT_TOKEN_CHARS} distinct characters (random, e.g.
 * `openssl rand -hex 24`). The message never contains the token.
 */
const OperatorTokenSchema = z
  .string()
  .min(16, "a token must be at least 16 characters")
  .max(512, "a token is at most 512 characters")
  .regex(/^[\x21-\x7e]+$/, "a token is printable ASCII without spaces")
  .refine(
    (t) => new Set(t).size >= MIN_DISTINCT_TOKEN_CHARS,
    `a token is too weak (fewer than ${MIN_DISTINCT_TOKEN_CHARS} distinct characters)`,
  );

/** One entry of the operator credentials file: `name`, `token`, `scopes` (at least one of `OPERATOR_SCOPES`, each once). */
const OperatorCredentialEntrySchema = z.strictObject({
  name: OperatorNameSchema,
  token: OperatorTokenSchema,
  scopes: z
    .array(z.enum(OPERATOR_SCOPES))
    .min(1, "a credential needs at least one scope")
    .superRefine((scopes, ctx) => {
      const dup = scopes.find((s, i) => scopes.indexOf(s) !== i);
      if (dup) ctx.addIssue({ code: "custom", message: `duplicate scope ${dup} (each scope once)` });
    }),
});
type OperatorCredentialEntry = z.infer<typeof OperatorCredentialEntrySchema>;

/**
 * The operator credentials file (`MOSOO_OPERATOR_CREDENTIALS_FILE`):
 * `{"credentials": [{"name": "alice", "token": "...", "scopes": ["read", "resolve"]}, ...]}`, 1–1000
 * entries; names are unique, and so are tokens.
 */
const OperatorCredentialsFileSchema = z.strictObject({ credentials: z.array(OperatorCredentialEntrySchema).min(1).max(1_000) });

/** Where the operator credentials come from (the variables of `ApiEnvSchema`, already validated; `file` an absolute path). */
export interface OperatorCredentialSources {
  /** `MOSOO_OPERATOR_TOKEN`: one credential with every scope, named `tokenName`. */
  token: string | undefined;
  /** `MOSOO_OPERATOR_TOKEN_NAME` (default `operator`). */
  tokenName: string;
  /** `MOSOO_OPERATOR_CREDENTIALS_FILE`, resolved. */
  file: string | undefined;
}

/**
 * Builds the operator credentials from `MOSOO_OPERATOR_TOKEN` (named `MOSOO_OPERATOR_TOKEN_NAME`,
 * every scope) and the credentials file; both may be set. Only the tokens' sha-256 digests are kept.
 * @returns the credentials and the plain tokens with the variable each came from (for the caller's
 *   check that no other kind of credential reuses one; drop them after), or a one-line reason naming
 *   the variable and the credential, never a token: a weak or malformed token, a bad scope or name,
 *   a duplicate name, a duplicate token, an unreadable or invalid file.
 */
export function loadOperatorCredentials(
  src: OperatorCredentialSources,
): { credentials: OperatorCredentials; tokens: Array<{ token: string; source: string }> } | { error: string } {
  const entries: Array<OperatorCredentialEntry & { source: string }> = [];
  if (src.tokenName !== "operator" && src.token === undefined)
    return { error: "MOSOO_OPERATOR_TOKEN_NAME: names MOSOO_OPERATOR_TOKEN, which is not set" };
  if (src.token !== undefined) {
    const name = OperatorNameSchema.safeParse(src.tokenName);
    if (!name.success) return { error: `MOSOO_OPERATOR_TOKEN_NAME: ${firstIssueLine(name.error)}` };
    const token = OperatorTokenSchema.safeParse(src.token);
    if (!token.success) return { error: `MOSOO_OPERATOR_TOKEN: ${firstIssueLine(token.error)}` };
    entries.push({ name: name.data, token: token.data, scopes: [...OPERATOR_SCOPES], source: "MOSOO_OPERATOR_TOKEN" });
  }
  if (src.file !== undefined) {
    const read = readJsonConfigFile(src.file);
    if ("error" in read) return { error: `MOSOO_OPERATOR_CREDENTIALS_FILE: ${read.error}` };
    const parsed = OperatorCredentialsFileSchema.safeParse(read.json);
    if (!parsed.success) return { error: `MOSOO_OPERATOR_CREDENTIALS_FILE: ${src.file}: ${firstIssueLine(parsed.error)}` };
    for (const e of parsed.data.credentials) entries.push({ ...e, source: "MOSOO_OPERATOR_CREDENTIALS_FILE" });
  }
  const byName = new Map<string, string>();
  const byToken = new Map<string, string>();
  for (const e of entries) {
    const sameName = byName.get(e.name);
    if (sameName !== undefined) return { error: `${e.source}: duplicate credential name ${e.name} (also in ${sameName})` };
    const sameToken = byToken.get(e.token);
    if (sameToken !== undefined) return { error: `${e.source}: credential ${e.name} reuses the token of credential ${sameToken}` };
    byName.set(e.name, e.source);
    byToken.set(e.token, e.name);
  }
  const credentials: OperatorCredential[] = entries.map((e) => ({ name: e.name, scopes: e.scopes, tokenSha256: tokenDigest(e.token) }));
  return {
    credentials: new OperatorCredentials(credentials),
    tokens: entries.map((e) => ({
      token: e.token,
      source: e.source === "MOSOO_OPERATOR_TOKEN" ? e.source : `${e.source} (credential ${e.name})`,
    })),
  };
}
