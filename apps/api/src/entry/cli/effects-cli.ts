// The `mosoo-effects` operator CLI (list, show, reconcile, resolve, compensate) and its exit codes.
import { Command, Option } from "commander";
import {
  OPERATOR_ACTION_NAMES,
  operatorActionSegment,
  type OperatorActionAnswer,
  type OperatorActionName,
  type OperatorActionSent,
} from "@mosoo/contracts";
import { ConfigError, loadApiConfig } from "../../config/api-config.js";
import { httpOperatorClient, localOperatorClient, OperatorClientError, type OperatorClient } from "./operator-client.js";
import { renderCompensate, renderList, renderReconcile, renderResolve, renderShow, terminalSafeJson } from "./effects-render.js";
import { OPERATOR_ATTENTION_REASONS } from "@mosoo/contracts";
import { duration, httpUrl, json, nonBlank, pageSize, usageErrorLine } from "./effects-cli.arguments.js";
import { BAD_INPUT_CODES, CliFailure } from "./effects-cli.exit-codes.js";

interface GlobalOptions {
  db?: string;
  databaseUrl?: string;
  apiUrl: string;
  token?: string;
  json?: boolean;
}

/**
 * Opens the client the global options ask for: in-process on `--db` (SQLite) or `--database-url`
 * (PostgreSQL; also `MOSOO_DATABASE_URL`), else the API at `--api-url`. Both store flags at once: bad input.
 * @throws CliFailure `request.invalid` (both store flags, an empty `--db` or `--database-url`), `auth.missing_token`
 *   (the API without a token), or the code `localOperatorClient` refused with (`config.invalid` naming the flag, `store.not_found`, ...).
 */
async function openClient(g: GlobalOptions, env: NodeJS.ProcessEnv): Promise<OperatorClient> {
  if (g.db !== undefined && g.databaseUrl !== undefined)
    throw new CliFailure("request.invalid", "--db and --database-url (or MOSOO_DATABASE_URL) name two stores: pass one");
  // an empty path would fall back to the default store file (an unset shell variable must not reach the live store)
  if (g.db !== undefined && g.db.trim() === "")
    throw new CliFailure("request.invalid", "--db is empty (an unset shell variable?): pass the store file");
  if (g.databaseUrl !== undefined && g.databaseUrl.trim() === "")
    throw new CliFailure("request.invalid", "--database-url is empty (was MOSOO_DATABASE_URL set only for another command?)");
  if (g.db !== undefined || g.databaseUrl !== undefined) {
    const store =
      g.databaseUrl !== undefined ? { MOSOO_DATABASE_URL: g.databaseUrl } : { MOSOO_DB_FILE: g.db, MOSOO_DATABASE_URL: undefined };
    try {
      return await localOperatorClient(loadApiConfig({ ...env, ...store }), g.token);
    } catch (err) {
      // the path came from the flag, not from the API's variable: name what the user typed
      if (err instanceof ConfigError) {
        const message = err.message.replace(`${err.code}: `, "");
        throw new CliFailure(
          err.code,
          g.db !== undefined
            ? message.replace("MOSOO_DB_FILE", "--db")
            : message.replace("MOSOO_DATABASE_URL", "--database-url (or MOSOO_DATABASE_URL)"),
        );
      }
      if (err instanceof OperatorClientError) throw new CliFailure(err.code, err.message);
      throw err;
    }
  }
  if (!g.token)
    throw new CliFailure(
      "auth.missing_token",
      "no operator token: pass --token or set MOSOO_OPERATOR_TOKEN (or use --db <file> / --database-url <url>)",
    );
  return httpOperatorClient(g.apiUrl, g.token);
}

/** Runs `fn` on the client the global options open, prints its answer (`render`, or JSON with `--json`) and closes the client. */
type Run = <T extends object>(fn: (client: OperatorClient) => Promise<T>, render: (answer: T) => string) => Promise<void>;

/** The options commander parsed for an action's command: the audit `--reason` and the action's own. */
type ActionOptions = { reason: string };

/**
 * How the CLI offers operator action `N` of `OPERATOR_ACTION_TABLE`: its command is the action's name
 * in kebab-case, with `<effectId>` and the audit `--reason` (see `audit`). `define` adds its
 * description and options; `body` builds the action's request from the parsed options (`nowMs`: the
 * CLI's clock, ms) or throws {@link CliFailure} `request.invalid` (exit 2); `render` prints the answer.
 */
interface ActionCommand<N extends OperatorActionName> {
  define(cmd: Command): Command;
  body(o: ActionOptions, nowMs: number): OperatorActionSent<N>;
  render(answer: OperatorActionAnswer<N>): string;
}

/** One command per operator action, keyed by its name (an action of the table without an entry here fails the type check). */
const ACTION_COMMANDS: { [N in OperatorActionName]: ActionCommand<N> } = {
  reconcile: {
    define: (cmd) => cmd.description("look an unknown effect up now through its bound adapter (the same path as the sweep)"),
    body: (o) => ({ reason: o.reason }),
    render: renderReconcile,
  },
  resolve: {
    define: (cmd) =>
      cmd
        .description("resolve an unknown effect by hand: succeeded (with the tool result you verified) or not_executed")
        .addOption(
          new Option("--outcome <outcome>", "what happened at the provider").choices(["succeeded", "not_executed"]).makeOptionMandatory(),
        )
        .option("--output-text <text>", "succeeded: the tool's text output (shorthand for a one-text-block MCP result)")
        .option("--result-json <json>", "succeeded: the full MCP tool result as JSON", json("--result-json"))
        .option("--is-error", "succeeded: the tool answered an error result (with --output-text)")
        .option("--provider-operation-id <id>", "succeeded: the provider's id of the write (stored as the receipt)")
        .option(
          "--receipt-json <json>",
          "succeeded: the whole receipt as JSON {providerOperationId?, observedAt?, detail?}",
          json("--receipt-json"),
        ),
    body: (
      o: ActionOptions & {
        outcome: string;
        outputText?: string;
        resultJson?: unknown;
        isError?: boolean;
        providerOperationId?: string;
        receiptJson?: unknown;
      },
      nowMs,
    ) => {
      // --result-json and --receipt-json are the user's JSON as typed: the service's schema checks them (400 request.invalid → exit 2)
      if (o.outcome === "succeeded") {
        if ((o.outputText === undefined) === (o.resultJson === undefined))
          throw new CliFailure("request.invalid", "--outcome succeeded needs exactly one of --output-text or --result-json");
        if (o.isError && o.resultJson !== undefined)
          throw new CliFailure("request.invalid", "--is-error goes with --output-text; with --result-json put isError in the result");
        if (o.providerOperationId !== undefined && o.receiptJson !== undefined)
          throw new CliFailure("request.invalid", "pass --provider-operation-id or --receipt-json, not both");
        const result = o.resultJson ?? { content: [{ type: "text", text: o.outputText }], ...(o.isError ? { isError: true } : {}) };
        const receipt =
          o.receiptJson ??
          (o.providerOperationId ? { providerOperationId: o.providerOperationId, observedAt: new Date(nowMs).toISOString() } : undefined);
        return {
          outcome: "succeeded",
          reason: o.reason,
          result: result as Record<string, unknown>,
          ...(receipt === undefined ? {} : { receipt: receipt as Record<string, unknown> }),
        };
      }
      if (o.outputText !== undefined || o.resultJson !== undefined || o.providerOperationId !== undefined || o.receiptJson !== undefined)
        throw new CliFailure("request.invalid", "--outcome not_executed takes no result or receipt");
      return { outcome: "not_executed", reason: o.reason };
    },
    render: renderResolve,
  },
  compensate: {
    define: (cmd) =>
      cmd
        .description("run the compensating action the adapter declares for a succeeded effect, as a new effect with its own key")
        .option("--driver <driverInstanceId>", "queue it to this live Driver instance (default: the effect's own, if still live)"),
    body: (o: ActionOptions & { driver?: string }) => ({ reason: o.reason, ...(o.driver ? { driverInstanceId: o.driver } : {}) }),
    render: renderCompensate,
  },
};

/** Adds the command of action `name` to `program`: `<name> <effectId> --reason ...` and the entry's options; it calls `act(name, ...)`. */
function addActionCommand<N extends OperatorActionName>(
  program: Command,
  name: N,
  entry: ActionCommand<N>,
  audit: (cmd: Command) => Command,
  run: Run,
  nowMs: () => number,
): void {
  audit(entry.define(program.command(operatorActionSegment(name)).argument("<effectId>"))).action(async (id: string, o: ActionOptions) => {
    const body = entry.body(o, nowMs());
    await run((c) => c.act(name, id, body), entry.render);
  });
}

/** The text `--help` prints after the options: examples, who acts, exit codes. */
const HELP_AFTER = [
  "",
  "Examples:",
  "  MOSOO_EFFECT_RECONCILIATION=on npm run effects -- --db var/demo/driver-crash-after-commit/api.db list   (a store the demo left, with an unknown effect)",
  "  npm run effects -- --database-url postgres://mosoo@db.internal:5432/mosoo list   (or MOSOO_DATABASE_URL=...)",
  "  npm run effects -- list --status unknown --server tracker --older-than 15m",
  "  npm run effects -- show 01J...",
  '  npm run effects -- reconcile 01J... --reason "provider was down"',
  '  npm run effects -- resolve 01J... --outcome succeeded --output-text "Created issue #7" --provider-operation-id 01J... --reason "found it in the tracker"',
  '  npm run effects -- compensate 01J... --reason "duplicate issue"',
  "",
  "Who acts is the name of the operator credential whose token you pass (--token or MOSOO_OPERATOR_TOKEN), never a flag;",
  "each action needs that credential's scope (reconcile, resolve, compensate; list and show need read).",
  "With --db or --database-url, list and show need no token; an action needs a token of an operator credential",
  "configured in this environment (the API's MOSOO_OPERATOR_TOKEN or MOSOO_OPERATOR_CREDENTIALS_FILE).",
  "",
  "Exit codes (a failure prints one line: mosoo-effects: <code>: <message>): 0 done;",
  `2 nothing ran: the command line, its environment or the store it names is wrong (${[...BAD_INPUT_CODES].join(", ")});`,
  "1 the command ran and was refused, or failed (any other code: the service's refusals, auth.invalid_token, api.unreachable, store.busy).",
  "With --db or --database-url, a compensation is queued in the store; a Driver polling a running API picks it up at its next poll (up to ~25 s).",
].join("\n");

/**
 * Step 1 of {@link buildEffectsCli}: the program with its global options (`--db`, `--database-url`,
 * `--api-url`, `--token`, `--json`), its help text, and its output settings: stdout text goes to
 * `write`, a usage error is one {@link usageErrorLine}, and commander throws instead of exiting.
 * Commands added later copy these output settings.
 */
function createProgram(write: (text: string) => void): Command {
  return new Command("mosoo-effects")
    .description(
      "Operate on external tool effects: list the stuck ones, show one effect's whole history, reconcile now, resolve by hand, or compensate.\n" +
        "Needs MOSOO_EFFECT_RECONCILIATION=on (in the API's environment, or in this one with --db / --database-url).",
    )
    .addOption(new Option("--db <file>", "work on this SQLite store in-process (same flag and bindings env vars as the API)"))
    .addOption(
      new Option(
        "--database-url <url>",
        "work on this PostgreSQL store in-process (postgres://...; the API's MOSOO_DATABASE_URL, already migrated by it)",
      ).env("MOSOO_DATABASE_URL"),
    )
    .addOption(
      new Option("--api-url <url>", "base URL of a running API (used unless --db or --database-url is given)")
        .env("MOSOO_API_URL")
        .default("http://127.0.0.1:8787")
        .argParser(httpUrl),
    )
    .addOption(
      new Option(
        "--token <token>",
        "your operator token (MOSOO_OPERATOR_TOKEN or one of the operator credentials file); its credential's name is recorded as the actor",
      ).env("MOSOO_OPERATOR_TOKEN"),
    )
    .option("--json", "print the service's JSON instead of tables")
    .addHelpText("after", HELP_AFTER)
    .exitOverride()
    .configureOutput({ writeOut: write, outputError: (text, out) => out(usageErrorLine(text)) });
}

/**
 * Step 2 of {@link buildEffectsCli}: the {@link Run} of `program`: opens the client its global options
 * ask for (see `openClient`), writes the answer to `write`, closes the client. A refusal of the
 * service becomes a {@link CliFailure} with the service's code, whose exit code that code decides (effects-cli.exit-codes.ts).
 */
function makeRun(program: Command, env: NodeJS.ProcessEnv, write: (text: string) => void): Run {
  const g = () => program.opts<GlobalOptions>();
  return async (fn, render) => {
    const client = await openClient(g(), env);
    try {
      const answer = await fn(client);
      write(`${g().json ? terminalSafeJson(answer) : render(answer)}\n`);
    } catch (err) {
      if (err instanceof OperatorClientError) throw new CliFailure(err.code, err.message);
      throw err;
    } finally {
      await client.close();
    }
  };
}

/** Adds the audit options of an action command: the mandatory `--reason` and the hidden, refused `--actor` (see {@link refuseActorFlag}). */
function withAudit(cmd: Command): Command {
  return (
    cmd
      .requiredOption("--reason <text>", "required: why you act (recorded in the audit trail with your credential's name)", nonBlank)
      // gone: refused with one line by the preAction hook, never silently ignored
      .addOption(new Option("--actor <name>").hideHelp())
  );
}

/**
 * Step 3 of {@link buildEffectsCli}: a command given `--actor` stops before it acts.
 * @throws CliFailure exit 2, `request.invalid: --actor is gone: ...` (the actor is the token's credential name).
 */
function refuseActorFlag(program: Command): void {
  program.hook("preAction", (_program, action) => {
    if (action.opts()["actor"] !== undefined)
      throw new CliFailure(
        "request.invalid",
        "--actor is gone: the actor is the name of the operator credential whose token you pass (--token); put notes in --reason",
      );
  });
}

/** The options `list` parses (each filter optional; `olderThan` already in ms as text, `limit` 1-500 as text). */
interface ListOptions {
  status?: string;
  attention?: string;
  server?: string;
  tool?: string;
  run?: string;
  toolCall?: string;
  olderThan?: string;
  limit: string;
  cursor?: string;
}

/** The operator service's list query for `list`'s options: each given filter under the service's name (`--server` → `serverId`, ...). */
function listQuery(o: ListOptions): Record<string, string> {
  const query: Record<string, string> = { limit: o.limit };
  if (o.status) query["status"] = o.status;
  if (o.attention) query["attention"] = o.attention;
  if (o.server) query["serverId"] = o.server;
  if (o.tool) query["toolName"] = o.tool;
  if (o.run) query["runId"] = o.run;
  if (o.toolCall) query["toolCallId"] = o.toolCall;
  if (o.olderThan) query["minAgeMs"] = o.olderThan;
  if (o.cursor) query["cursor"] = o.cursor;
  return query;
}

/** Step 4 of {@link buildEffectsCli}: the `list` command (filters, page size, cursor), rendered as a table at `nowMs()`. */
function addListCommand(program: Command, run: Run, nowMs: () => number): void {
  program
    .command("list")
    .description(
      "list effects, newest first (default: the unknown ones; with --run, --tool-call or --attention and no --status: every status)",
    )
    .addOption(
      new Option("--status <status>", "effect status, or any (default unknown; every status with --run, --tool-call, --attention)").choices(
        ["unknown", "executing", "intent", "succeeded", "not_executed", "any"],
      ),
    )
    .addOption(
      new Option("--attention <reason>", "only effects waiting for an operator for this reason").choices([...OPERATOR_ATTENTION_REASONS]),
    )
    .option("--server <serverId>", "only this MCP server", nonBlank)
    .option("--tool <toolName>", "only this tool", nonBlank)
    .option("--run <runId>", "only this run", nonBlank)
    .option("--tool-call <toolCallId>", "only the effect of this tool call (the agent's toolCallId)", nonBlank)
    .option("--older-than <duration>", "only effects created at least this long ago (30s, 15m, 2h, 7d)", duration)
    .option("--limit <n>", "page size, 1-500", pageSize, "50")
    .option("--cursor <effectId>", "continue after this effect (printed at the end of the previous page)")
    .action(async (o: ListOptions) => {
      const query = listQuery(o);
      await run(
        (c) => c.list(query),
        (a) => renderList(a as never, nowMs()),
      );
    });
}

/**
 * Builds the `mosoo-effects` program (commander): `list`, `show`, and one command per operator
 * action ({@link ACTION_COMMANDS}: `reconcile`, `resolve`, `compensate`), each with `--help`, over the operator service. Output is a table or a
 * line by default, JSON with `--json`; `write` receives stdout text. Errors become {@link CliFailure}.
 */
export function buildEffectsCli(
  write: (text: string) => void,
  env: NodeJS.ProcessEnv = process.env,
  nowMs: () => number = Date.now,
): Command {
  const program = createProgram(write);
  const run = makeRun(program, env, write);
  refuseActorFlag(program);
  addListCommand(program, run, nowMs);
  program
    .command("show")
    .description("one effect's whole history: command, attempts, lookups with receipts, operator actions, compensations")
    .argument("<effectId>")
    .action(async (id: string) => run((c) => c.show(id), renderShow));
  for (const name of OPERATOR_ACTION_NAMES) addActionCommand(program, name, ACTION_COMMANDS[name], withAudit, run, nowMs);
  return program;
}
