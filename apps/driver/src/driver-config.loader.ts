// Reads and validates the Driver's MCP config file and API URLs, failing with one-line `config.invalid` errors.
import { readFile } from "node:fs/promises";
import { findJsonProblem, formatJsonProblem } from "@mosoo/contracts";
import type { z } from "zod";
import { ApiUrlListSchema, McpConfigSchema, type McpConfig } from "./driver-config.contract.js";

/**
 * Bad input to the Driver (a flag, the MCP config file, the state file). `code` is always
 * `config.invalid` (docs/DESIGN.md §9); `message` is one readable line, never a stack trace.
 * The CLI prints it on stderr and exits with code 2.
 */
export class DriverConfigError extends Error {
  /** Stable error code. */
  readonly code = "config.invalid";
  override readonly name = "DriverConfigError";
}

/**
 * Formats zod issues as one line: `servers.github.url: expected an http:// or https:// URL; …`.
 * @param error a zod error.
 */
export function formatZodIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const where = issue.path.length > 0 ? issue.path.map(String).join(".") : "(root)";
      // A record key that fails its own schema: zod nests the reason one level down.
      const message = issue.code === "invalid_key" ? `invalid key (${issue.issues.map((sub) => sub.message).join(", ")})` : issue.message;
      return `${where}: ${message}`;
    })
    .join("; ");
}

/**
 * Parses and validates the text of an MCP config file (see `McpConfigSchema`).
 * @param text the file's contents (JSON).
 * @param source a name for the messages (usually the path).
 * @throws DriverConfigError (`config.invalid`) on malformed JSON, a key `__proto__` / `constructor` /
 *   `prototype` or a lone surrogate anywhere (contracts' `findJsonProblem`, named by path), or a shape error.
 */
export function parseMcpConfig(text: string, source: string): McpConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new DriverConfigError(`MCP config ${source} is not valid JSON: ${(error as Error).message}`);
  }
  // The shared JSON rules first (contracts' findJsonProblem): zod's records skip a "__proto__" key
  // silently, so a server or header named so would vanish; a lone surrogate could never be sent.
  const problem = findJsonProblem(json);
  if (problem)
    throw new DriverConfigError(
      `MCP config ${source} is invalid: ${formatJsonProblem(problem)} (__proto__, constructor and prototype are reserved by JavaScript objects; text must be well-formed UTF-16)`,
    );
  const parsed = McpConfigSchema.safeParse(json);
  if (!parsed.success) throw new DriverConfigError(`MCP config ${source} is invalid: ${formatZodIssues(parsed.error)}`);
  return parsed.data;
}

/**
 * Reads and validates the MCP config file given by `--mcp-config`.
 * @param filePath path of the JSON file.
 * @throws DriverConfigError (`config.invalid`) when the file cannot be read or is invalid.
 */
export async function loadMcpConfigFile(filePath: string): Promise<McpConfig> {
  let text: string;
  try {
    text = await readFile(filePath, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "EIO";
    throw new DriverConfigError(`cannot read MCP config ${filePath}: ${code}`);
  }
  return parseMcpConfig(text, filePath);
}

/** Where the Driver's API URLs may come from (see {@link resolveApiUrls}). */
export interface ApiUrlSources {
  /** The values of every `--api-url` flag, in order (empty when none was given). */
  flags: readonly string[];
  /** The process environment (`MOSOO_API_URLS`, `MOSOO_API_URL` are read). */
  env: Record<string, string | undefined>;
}

/**
 * The Driver's API URLs (instances of one deployment), from the first source that
 * is set: the `--api-url` flags (repeatable), else `MOSOO_API_URLS`, else `MOSOO_API_URL` (an empty
 * variable counts as unset). Every source is a comma-separated list (one URL is a list of one);
 * entries are trimmed, then checked by `ApiUrlListSchema` (http/https, no credentials, query or
 * fragment, 1 to 16 URLs, none twice) and normalized.
 * @returns the URLs in order and the name of the source they came from.
 * @throws DriverConfigError (`config.invalid`) with one line naming the source and the entry, e.g.
 *   `MOSOO_API_URLS: entry 2 is empty (a stray comma?)` or `--api-url: entry 1: expected an http:// or https:// URL`
 *   (never the URL itself: it could carry a credential); also when no source is set.
 */
export function resolveApiUrls(sources: ApiUrlSources): { urls: string[]; source: string } {
  const fromEnv = (name: string): { source: string; text: readonly string[] } | null => {
    const value = sources.env[name];
    return value ? { source: name, text: [value] } : null;
  };
  const chosen =
    sources.flags.length > 0 ? { source: "--api-url", text: sources.flags } : (fromEnv("MOSOO_API_URLS") ?? fromEnv("MOSOO_API_URL"));
  if (!chosen)
    throw new DriverConfigError("no API URL: give --api-url <url> (repeatable) or set MOSOO_API_URLS (comma-separated) or MOSOO_API_URL");
  const entries = chosen.text.flatMap((text) => text.split(",")).map((entry) => entry.trim());
  const empty = entries.findIndex((entry) => entry === "");
  if (empty >= 0) throw new DriverConfigError(`${chosen.source}: entry ${empty + 1} is empty (a stray comma?)`);
  const parsed = ApiUrlListSchema.safeParse(entries);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) =>
      typeof issue.path[0] === "number" ? `entry ${issue.path[0] + 1} of ${entries.length}: ${issue.message}` : issue.message,
    );
    throw new DriverConfigError(`${chosen.source}: ${problems.join("; ")}`);
  }
  return { urls: parsed.data, source: chosen.source };
}
