// Runs the type-check, the dependency rules (dependency-cruiser), knip (dead code), the formatting check (prettier), then every vitest
// project, and prints the plain `N passed, N failed` line that CI reads. Exits non-zero when the type-check, a dependency rule, a knip
// finding, an unformatted file or any test fails.
//
// The five checks run in two lanes at once (the workspace type-check, the longest, alone in one; the others one after another in
// the other), so they keep both cores of a 2-core machine busy instead of one; each check's output is held and printed in the order
// below once both lanes are done, so the log reads as if they ran one after another.
import { spawn, spawnSync } from "node:child_process";
import { readFileSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";

const bin = (name) => join(process.cwd(), "node_modules", ".bin", name);
const report = join(process.cwd(), "node_modules", ".cache", "vitest-report.json");
mkdirSync(join(process.cwd(), "node_modules", ".cache"), { recursive: true });
rmSync(report, { force: true }); // never read a previous run's figures

/**
 * Runs `name` with `args`, its stdout and stderr held in one buffer (interleaved as written).
 * Resolves `{ status, output }`: the exit code (1 when it could not start or died on a signal) and the held output.
 */
function run(name, args) {
  return new Promise((resolve) => {
    const chunks = [];
    const child = spawn(bin(name), args, { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (c) => chunks.push(c));
    child.stderr.on("data", (c) => chunks.push(c));
    child.on("error", (err) => chunks.push(Buffer.from(`${name}: ${err.message}\n`)));
    child.on("close", (code) => resolve({ status: code ?? 1, output: Buffer.concat(chunks).toString() }));
  });
}

const tscArgs = ["--noEmit", "-p", "tsconfig.json"];
const tscWebArgs = ["--noEmit", "-p", "packages/operator-console/tsconfig.web.json"];
const depcruiseArgs = ["apps", "packages", "--config", ".dependency-cruiser.cjs", "--output-type", "err"];
const knipArgs = ["--no-progress"];
const prettierArgs = ["--check", ".", "--log-level", "warn"];
const [[tsc], [tscWeb, depcruise, knip, prettier]] = await Promise.all([
  (async () => [await run("tsc", tscArgs)])(),
  (async () => [
    await run("tsc", tscWebArgs),
    await run("depcruise", depcruiseArgs),
    await run("knip", knipArgs),
    await run("prettier", prettierArgs),
  ])(),
]);

console.log("> tsc --noEmit (whole workspace, then the operator console's browser code with the DOM lib)");
process.stdout.write(tsc.output + tscWeb.output);
const typecheckFailed = tsc.status !== 0 || tscWeb.status !== 0;
console.log(typecheckFailed ? "type-check: FAILED" : "type-check: ok");

// The design's dependency rules (.dependency-cruiser.cjs, docs/ARCHITECTURE.md): no cycle, no module
// importing one above it, no test package in production code. dependency-cruiser prints its own summary
// line ("no dependency violations found (…)" or "x N dependency violations (…)"); any violation fails.
console.log("> depcruise apps packages --config .dependency-cruiser.cjs (dependency rules)");
process.stdout.write(depcruise.output);
const dependencyRulesFailed = depcruise.status !== 0;
console.log(dependencyRulesFailed ? "dependency rules: FAILED" : "dependency rules: ok");

// knip (knip.json): no unused file, export, dependency or unlisted binary in any workspace. It prints
// nothing when clean and exits non-zero on any finding (configuration hints are printed, not failed).
console.log("> knip --no-progress (unused files, exports, dependencies)");
process.stdout.write(knip.output);
const knipFailed = knip.status !== 0;
console.log(knipFailed ? "knip: FAILED" : "knip: ok");

// prettier (.prettierrc.json, .prettierignore): every code and JSON file as `prettier --write .` leaves it.
// It names each unformatted file; `npm run format` fixes them.
console.log("> prettier --check . (formatting)");
process.stdout.write(prettier.output);
const formattingFailed = prettier.status !== 0;
console.log(formattingFailed ? "formatting: FAILED (run: npm run format)" : "formatting: ok");

const vitest = spawnSync(
  bin("vitest"),
  [
    "run",
    "--reporter=default",
    "--reporter=./scripts/test-progress.reporter.mjs",
    "--reporter=json",
    `--outputFile.json=${report}`,
    ...process.argv.slice(2),
  ],
  { stdio: "inherit" },
);

let passed = 0;
let failed = 0;
let skipped = 0;
try {
  const json = JSON.parse(readFileSync(report, "utf8"));
  passed = json.numPassedTests;
  failed = json.numFailedTests;
  skipped = json.numPendingTests + json.numTodoTests;
} catch {
  failed += 1;
}
// vitest can fail with no failed test in its report (an unhandled error, a crashed worker, a signal): count it
// as one failed test so that the line CI reads never says "0 failed" for a run that exits non-zero.
if (vitest.status !== 0 && failed === 0) failed += 1;
// The type-check, the dependency rules, knip and the formatting check count as one test each so that none can fail silently.
for (const checkFailed of [typecheckFailed, dependencyRulesFailed, knipFailed, formattingFailed]) {
  if (checkFailed) failed += 1;
  else passed += 1;
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(typecheckFailed || dependencyRulesFailed || knipFailed || formattingFailed || vitest.status !== 0 || failed > 0 ? 1 : 0);
