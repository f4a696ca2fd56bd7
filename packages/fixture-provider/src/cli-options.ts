// The fixture provider's command line: the commander program and its parsed options.
import { Command, InvalidArgumentError, Option } from "commander";
import { MAX_DELAY_BEFORE_COMMIT_MS } from "./fixture-faults.contract.js";

/** Parsed command line of `main.ts`. */
export interface FixtureCliOptions {
  port: number;
  host: "127.0.0.1";
  db: string;
  stdio: boolean;
  fenceOnLookupMiss: boolean;
  advertiseIdempotency: boolean;
  taskSupport?: "optional" | "required";
  keyArgument?: string;
  keyMeta?: string;
  delayBeforeCommitMs: number;
  holdBeforeCommit: boolean;
  holdResponseAfterCommit: boolean;
  exitAfterCommit: boolean;
  failBeforeCommit: boolean;
  logLevel: string;
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

function integerIn(min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`expected an integer from ${min} to ${max}.`);
    const n = Number(value);
    if (n < min || n > max) throw new InvalidArgumentError(`expected an integer from ${min} to ${max}.`);
    return n;
  };
}

/**
 * The commander program of the fixture provider. Parse errors print one `error: …` line to stderr
 * and exit with code 1 (commander's default); `--help` prints the usage.
 */
export function buildFixtureCli(): Command {
  return new Command()
    .name("fixture-provider")
    .description(
      "Fixture MCP provider (an issue tracker): createIssue records each write durably under the Mosoo idempotency key, " +
        "getOperation looks a write up by key, and fault switches simulate late commits, lost responses and crashes.\n" +
        'In HTTP mode it prints one JSON line to stdout once listening: {"event":"ready","url":…,"controlUrl":…,"pid":…}; logs go to stderr.',
    )
    .requiredOption("--db <file>", "SQLite file of the provider (parent directory created if missing)")
    .addOption(new Option("--port <n>", "TCP port on 127.0.0.1 (0 = pick a free port)").argParser(integerIn(0, 65_535)).default(0))
    .addOption(new Option("--host <host>", "interface to listen on").choices(["127.0.0.1"]).default("127.0.0.1"))
    .option("--stdio", "serve MCP over stdin/stdout instead of HTTP (no control API)", false)
    .option("--fence-on-lookup-miss", "a getOperation miss fences the key forever (a tombstone)", false)
    .option(
      "--advertise-idempotency",
      'advertise the zero-code convention in tools/list (_meta["io.mosoo/idempotency"]: lookup tool, retention, fencing, key placement)',
      false,
    )
    .addOption(
      new Option(
        "--task-support <mode>",
        "let createIssue and closeIssue be called as MCP tasks (execution.taskSupport; tasks live as long as this process)",
      ).choices(["optional", "required"]),
    )
    .addOption(
      new Option("--key-argument <name>", "read the idempotency key from this tool argument instead of _meta").conflicts("keyMeta"),
    )
    .addOption(new Option("--key-meta <name>", 'read the idempotency key from this _meta name (default "io.mosoo/idempotency-key")'))
    .addOption(
      new Option("--delay-before-commit-ms <n>", "wait this many ms between receiving createIssue and its commit (a late commit)")
        .argParser(integerIn(0, MAX_DELAY_BEFORE_COMMIT_MS))
        .default(0),
    )
    .option(
      "--hold-before-commit",
      "hold each createIssue call before its commit until POST /control/release (then it commits, or is refused if fenced)",
      false,
    )
    .option("--hold-response-after-commit", "hold each createIssue response after its commit until POST /control/release", false)
    .option("--exit-after-commit", "SIGKILL this process right after a createIssue commits, before answering", false)
    .option("--fail-before-commit", "answer createIssue with provider_unavailable and write nothing", false)
    .addOption(new Option("--log-level <level>", "pino log level (logs go to stderr)").choices(LOG_LEVELS).default("info"));
}

/** Parses `argv` (as `process.argv`) into {@link FixtureCliOptions}; exits the process on bad flags. */
export function parseFixtureCli(argv: readonly string[]): FixtureCliOptions {
  const program = buildFixtureCli();
  program.parse([...argv]);
  return program.opts<FixtureCliOptions>();
}
