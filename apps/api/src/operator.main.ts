/**
 * `mosoo-operator`: the operator CLI over the API's operator routes (DESIGN.md §7). Exit codes:
 * 0 done; 1 the API refused or could not be reached (one line: the error code and message);
 * 2 bad input (one line). Output is JSON on stdout.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";

const EXIT_API = 1;
const EXIT_BAD_INPUT = 2;

function fail(code: number, line: string): never {
  process.stderr.write(`mosoo-operator: ${line}\n`);
  process.exit(code);
}

function nonBlank(value: string): string {
  if (value.trim() === "") throw new InvalidArgumentError("must not be blank");
  return value;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 500) throw new InvalidArgumentError("must be a whole number from 1 to 500");
  return n;
}

/** Calls one operator route; prints the JSON answer, or exits 1 with the API's error code and message. */
async function call(opts: { apiUrl: string; token?: string }, method: "GET" | "POST", path: string, body?: unknown): Promise<void> {
  if (!opts.token) fail(EXIT_BAD_INPUT, "no operator token: pass --token or set MOSOO_OPERATOR_TOKEN");
  let res: Response;
  try {
    res = await fetch(new URL(path, opts.apiUrl), {
      method,
      headers: { authorization: `Bearer ${opts.token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    fail(EXIT_API, `api.unreachable: ${opts.apiUrl}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    fail(EXIT_API, `api.invalid_answer: HTTP ${res.status}`);
  }
  if (!res.ok) {
    const e = (json as { error?: { code?: string; message?: string } }).error;
    fail(EXIT_API, `${e?.code ?? `http_${res.status}`}: ${e?.message ?? "request failed"}`);
  }
  process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
}

function buildProgram(): Command {
  const program = new Command("mosoo-operator")
    .description("Inspect and resolve unknown external tool effects through the Mosoo API's operator routes.")
    .addOption(new Option("--api-url <url>", "base URL of the API").env("MOSOO_API_URL").default("http://127.0.0.1:8787"))
    .addOption(new Option("--token <token>", "operator token (the API's MOSOO_OPERATOR_TOKEN)").env("MOSOO_OPERATOR_TOKEN"))
    .addHelpText("after", "\nExamples:\n  mosoo-operator list\n  mosoo-operator show 01J...\n  mosoo-operator resolve 01J... --outcome not_executed --actor alice --reason \"checked the tracker: no issue\"")
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(`mosoo-operator: ${text.replace(/\s*\n\s*/g, " ").trim()}\n`) });
  const global = () => program.opts<{ apiUrl: string; token?: string }>();
  program
    .command("list")
    .description("list unknown effects, oldest first")
    .option("--limit <n>", "at most this many (1-500)", positiveInt, 100)
    .action(async (o: { limit: number }) => call(global(), "GET", `/v1/operator/effects?status=unknown&limit=${o.limit}`));
  program
    .command("show")
    .description("one effect's full history: attempts, lookups, receipts, operator actions")
    .argument("<effectId>")
    .action(async (effectId: string) => call(global(), "GET", `/v1/operator/effects/${encodeURIComponent(effectId)}`));
  program
    .command("lookup")
    .description("ask the bound adapter about an unknown effect now")
    .argument("<effectId>")
    .requiredOption("--actor <name>", "who asks (recorded)", nonBlank)
    .requiredOption("--reason <text>", "why (recorded)", nonBlank)
    .action(async (effectId: string, o: { actor: string; reason: string }) =>
      call(global(), "POST", `/v1/operator/effects/${encodeURIComponent(effectId)}/lookup`, { actor: o.actor, reason: o.reason }),
    );
  program
    .command("resolve")
    .description("resolve an unknown effect by hand, as succeeded (with the output you verified) or not_executed")
    .argument("<effectId>")
    .addOption(new Option("--outcome <outcome>", "what happened at the provider").choices(["succeeded", "not_executed"]).makeOptionMandatory())
    .option("--output-text <text>", "the tool's output, required with --outcome succeeded")
    .option("--is-error", "the tool's output was an error result")
    .requiredOption("--actor <name>", "who resolves (recorded)", nonBlank)
    .requiredOption("--reason <text>", "why (recorded)", nonBlank)
    .action(async (effectId: string, o: { outcome: string; outputText?: string; isError?: boolean; actor: string; reason: string }) => {
      if (o.outcome === "succeeded" && o.outputText === undefined) fail(EXIT_BAD_INPUT, "--outcome succeeded needs --output-text");
      const body =
        o.outcome === "succeeded"
          ? { outcome: "succeeded", outputText: o.outputText, ...(o.isError ? { isError: true } : {}), actor: o.actor, reason: o.reason }
          : { outcome: "not_executed", actor: o.actor, reason: o.reason };
      await call(global(), "POST", `/v1/operator/effects/${encodeURIComponent(effectId)}/resolve`, body);
    });
  return program;
}

async function main(): Promise<void> {
  try {
    await buildProgram().parseAsync(process.argv);
  } catch (error) {
    if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : EXIT_BAD_INPUT);
    fail(EXIT_API, error instanceof Error ? error.message : String(error));
  }
}

void main();
