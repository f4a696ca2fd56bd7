// Planted-bug check: shows that the crash-safety suite catches known bugs.
// For each bug it patches a TEMPORARY COPY of the workspace (never this checkout), runs the ledger
// model property (1,000 runs, fixed seed) and the crash-point matrix there (or the bug's own suite,
// e.g. the Driver's deadline tests for a Driver bug), and reports whether the
// bug was caught, by which tests, and after how many runs (fast-check's "failed after N tests").
// Usage: npm run check:planted-bugs [-- [--seed N] [--only <bug-id>]]
// Exit code 0 when every bug was caught, 1 when one was not (or a patch no longer applies).
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync, rmSync, cpSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";

const USAGE = "usage: npm run check:planted-bugs [-- [--seed N] [--only <bug-id>]]";
/** Prints one line (`check:planted-bugs: <message>`) and the usage, and exits 2: bad input changes nothing. */
function badInput(message) {
  console.error(`check:planted-bugs: ${message} (${USAGE})`);
  process.exit(2);
}
let args;
try {
  ({ values: args } = parseArgs({
    options: { seed: { type: "string", default: "1" }, only: { type: "string" }, help: { type: "boolean" } },
  }));
} catch (err) {
  badInput(err instanceof Error ? err.message : String(err));
}
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
if (!/^-?\d+$/.test(args.seed) || !Number.isSafeInteger(Number(args.seed)))
  badInput(`--seed must be an integer, got ${JSON.stringify(args.seed)}`);

/**
 * The planted bugs: `file` (from the repo root), the exact text `find` (must occur once) and its
 * buggy replacement. Each is a small, realistic regression of a docs/DESIGN.md rule. A bug may name its
 * own `suite` ({project, files, grep}); the default suite is the ledger model and the crash matrix.
 */
const BUGS = [
  {
    id: "claim-without-cas",
    what: "claim dispatches whatever the effect's status (no compare-and-set on `intent`): a redelivered `executing` effect is executed again (DESIGN §3 rules 2-3)",
    file: "apps/api/src/modules/ledger/domain/effect-lifecycle.machine.ts",
    find: 'case "intent":\n      return "dispatch";\n    case "executing":\n      return "fence";',
    replace: 'case "intent":\n    case "executing":\n      return "dispatch";',
  },
  {
    id: "lookup-timeout-as-not-executed",
    what: "a lookup that times out is taken as a confirmed non-execution (DESIGN §5 row 1)",
    file: "packages/effect-reconciliation/src/host/reconcile.service.ts",
    find: 'if (run.kind === "timed_out")\n    answer = { kind: "refused", decision: refused(ref, "lookup_timeout", `lookup did not settle within ${timeoutMs} ms`) };',
    replace:
      'if (run.kind === "timed_out")\n    answer = { kind: "answered", outcome: { outcome: "confirmed_not_executed", toolName: request.toolName, idempotencyKey: request.idempotencyKey, receipt: { observedAt: new Date(nowMs).toISOString() } } as LookupOutcome, serverId: String(serverId), declaration: parsedDeclaration, nowMs, timeoutMs };',
  },
  {
    id: "unvalidated-adapter-output",
    what: "the adapter's answer is judged and persisted without schema validation (DESIGN §5 row 2)",
    file: "packages/effect-reconciliation/src/host/reconcile.service.ts",
    find: 'return parsed.success\n      ? { outcome: structuredClone(parsed.data) }\n      : refused(ref, "invalid_adapter_output", summarizeError(parsed.error));',
    replace: "return { outcome: (parsed.success ? parsed.data : value) as LookupOutcome };",
  },
  {
    id: "terminal-before-receipt",
    what: "a `completed` command update is accepted before the effect's result is committed (DESIGN §3 rule 6)",
    file: "apps/api/src/modules/drivers/application/command-queue.service.ts",
    find: 'if (effect && effect.status !== "succeeded") {',
    replace: "if (false) {",
  },
  {
    id: "driver-skips-send-deadline",
    what: "the Driver sends tools/call whenever the claim answer arrives, without checking the send-by deadline (DESIGN §3 rule 12)",
    file: "apps/driver/src/mcp-execute.handler.ts",
    find: "const deadlinePassed = () => sendDeadlinePassed(claimSentAtMs, monotonicNowMs(), claim.sendWithinMs);",
    replace: "const deadlinePassed = () => false;",
    suite: { project: "driver", files: ["tests/mcp-execute.deadline.test.ts"], grep: "send-by deadline" },
  },
  {
    id: "window-ignores-send-deadline",
    what: "the in-flight window of a fence-less provider is counted from the claim alone, without the send-by deadline (DESIGN §3 rule 12, §5)",
    file: "packages/effect-reconciliation/src/host/fail-closed-checks.ts",
    find: "const inFlightUntilMs = request.lastDispatchedAtMs + sendWithinMs + declaration.keyFencing.maxInFlightMs;",
    replace: "const inFlightUntilMs = request.lastDispatchedAtMs + declaration.keyFencing.maxInFlightMs;",
  },
  {
    id: "run-error-without-turn-effects",
    what: "the interrupted run's error is computed without the turn's effects: a turn whose write completed says 'please resend' (DESIGN §3 rules 14 and 16)",
    file: "apps/api/src/modules/drivers/application/finalization-repair.service.ts",
    find: "const error = turnInterruptedRunError(run.id, await readTurnToolCallFacts(tx, run.id), { driverInstanceId });",
    replace: "const error = turnInterruptedRunError(run.id, [], { driverInstanceId });",
  },
  {
    id: "expired-task-as-not-executed",
    what: "recovery by task handle trusts an unknown or expired MCP task as proof that the write never ran (DESIGN §4 Tasks)",
    file: "packages/effect-reconciliation/src/host/mcp-tasks-adapter.ts",
    find: 'task = await client.experimental.tasks.getTask(taskId, { signal });\n    } catch (error) {\n      if (isTaskGone(error)) return stillUnknown("task_expired");',
    replace:
      'task = await client.experimental.tasks.getTask(taskId, { signal });\n    } catch (error) {\n      if (isTaskGone(error)) return { outcome: "confirmed_not_executed", toolName: request.toolName, idempotencyKey: request.idempotencyKey, receipt: { observedAt: new Date().toISOString() } };',
    suite: {
      project: "api",
      files: ["tests/crash-point-tasks.test.ts", "tests/ledger-model.property.test.ts"],
      grep: "task_expired|keeps I1",
    },
  },
  {
    id: "task-id-not-set-once",
    what: "a task id report is applied over the one the effect already holds (DESIGN §4 Tasks: the task id is set once)",
    file: "apps/api/src/modules/ledger/domain/effect-lifecycle.machine.ts",
    find: "  if (current.taskId !== null) {\n    return current.taskId === report.taskId",
    replace: "  if (current.taskId !== null && false) {\n    return current.taskId === report.taskId",
    suite: { project: "api", files: ["tests/ledger-model.property.test.ts"], grep: "keeps I1" },
  },
];
if (args.only !== undefined && !BUGS.some((b) => b.id === args.only)) {
  badInput(`no planted bug "${args.only}"; one of: ${BUGS.map((b) => b.id).join(", ")}`);
}
const root = process.cwd();
const seed = Number(args.seed);
const pnpm = ["--yes", "pnpm@12.21.0"];
const work = mkdtempSync(join(tmpdir(), "mosoo-planted-"));
// mkdtemp makes the folder 0700: the suite's throwaway PostgreSQL server runs as another OS user (the
// `postgres` account when run as root) and must reach its binaries inside the copy's node_modules.
chmodSync(work, 0o755);
console.log(`> copying the workspace to ${work} (node_modules and .git excluded) and installing offline`);
cpSync(root, work, {
  recursive: true,
  filter: (src) => {
    const rel = relative(root, src);
    return !rel.split("/").some((part) => part === "node_modules" || part === ".git" || part === "var");
  },
});
const install = spawnSync("npx", [...pnpm, "install", "--frozen-lockfile", "--offline"], {
  cwd: work,
  stdio: ["ignore", "ignore", "inherit"],
});
if (install.status !== 0) {
  console.error("planted-bugs: pnpm install in the temporary copy failed");
  process.exit(1);
}

const DEFAULT_SUITE = {
  project: "api",
  files: ["tests/ledger-model.property.test.ts", "tests/crash-point-matrix.test.ts"],
  grep: "keeps I1|crash",
};
const rows = [];
let allCaught = true;
for (const bug of BUGS.filter((b) => !args.only || b.id === args.only)) {
  const path = join(work, bug.file);
  const original = readFileSync(path, "utf8");
  const hits = original.split(bug.find).length - 1;
  if (hits !== 1) {
    console.error(`planted-bugs: ${bug.id}: the text to patch occurs ${hits} times in ${bug.file}; update the bug`);
    allCaught = false;
    rows.push({ id: bug.id, caught: false, notPlanted: true, detail: "patch does not apply" });
    continue;
  }
  writeFileSync(path, original.replace(bug.find, bug.replace));
  const report = join(work, `report-${bug.id}.json`);
  const started = Date.now();
  console.log(`\n> ${bug.id}: ${bug.what}`);
  const suite = bug.suite ?? DEFAULT_SUITE;
  spawnSync(
    join(work, "node_modules/.bin/vitest"),
    ["run", "--project", suite.project, ...suite.files, "-t", suite.grep, "--reporter=json", `--outputFile=${report}`],
    {
      cwd: work,
      stdio: ["ignore", "ignore", "ignore"],
      env: { ...process.env, LEDGER_MODEL_RUNS: "1000", LEDGER_MODEL_SEED: String(seed) },
    },
  );
  writeFileSync(path, original);
  let json;
  try {
    json = JSON.parse(readFileSync(report, "utf8"));
  } catch {
    json = { testResults: [] };
  }
  const found = [];
  for (const file of json.testResults) {
    const failed = file.assertionResults.filter((a) => a.status === "failed");
    if (failed.length === 0 && file.status !== "failed") continue;
    const name = file.name.split("/").pop();
    if (name.startsWith("ledger-model")) {
      const msg = failed.flatMap((a) => a.failureMessages).join("\n");
      const runs = /failed after (\d+) tests?/.exec(msg)?.[1];
      const firstLine = /Got error: ([^\n]+)/.exec(msg)?.[1] ?? /(InvariantViolation[^\n]*)/.exec(msg)?.[1] ?? msg.split("\n")[0];
      found.push(`model property failed after ${runs ?? "?"} runs of a 250-run chunk (base seed ${seed}): ${firstLine.slice(0, 160)}`);
    } else if (name.startsWith("crash-point")) {
      const total = file.assertionResults.length;
      const example = failed[0]
        ? `${failed[0].title}: ${(failed[0].failureMessages[0] ?? "").split("\n")[0].slice(0, 160)}`
        : (file.message ?? "");
      found.push(`crash-point matrix: ${failed.length} of ${total} cases failed (first: ${example})`);
    } else {
      const example = failed[0]
        ? `${failed[0].title}: ${(failed[0].failureMessages[0] ?? "").split("\n")[0].slice(0, 160)}`
        : (file.message ?? "");
      found.push(`${name}: ${failed.length} of ${file.assertionResults.length} tests failed (first: ${example})`);
    }
  }
  const caught = found.length > 0;
  allCaught &&= caught;
  rows.push({
    id: bug.id,
    caught,
    detail: caught ? found.join("\n      ") : "no test failed",
    seconds: Math.round((Date.now() - started) / 1000),
  });
  console.log(`  ${caught ? "CAUGHT" : "NOT CAUGHT"} (${Math.round((Date.now() - started) / 1000)} s)\n      ${rows.at(-1).detail}`);
}
rmSync(work, { recursive: true, force: true });
console.log("\nplanted bugs:");
for (const r of rows)
  console.log(
    `  ${r.caught ? "caught     " : r.notPlanted ? "NOT PLANTED" : "NOT CAUGHT "}  ${r.id}${r.notPlanted ? " (its patch no longer matches the code: update the bug)" : ""}`,
  );
process.exit(allCaught ? 0 : 1);
