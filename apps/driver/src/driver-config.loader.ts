import { readFile } from "node:fs/promises";
import { findJsonProblem, formatJsonProblem } from "@mosoo/contracts";
import type { z } from "zod";
import { McpConfigSchema, type McpConfig } from "./driver-config.contract.js";

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
