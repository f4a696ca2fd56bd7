// Runs the type-check, the dependency rules (dependency-cruiser), knip (dead code), the formatting check (prettier), then every vitest
// project, and prints the plain `N passed, N failed` line that CI reads. Exits non-zero when the type-check, a dependency rule, a knip
// finding, an unformatted file or any test fails.
import { spawnSync } from "node:child_process";
import { readFileSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";

const bin = (name) => join(process.cwd(), "node_modules", ".bin", name);
const report = join(process.cwd(), "node_modules", ".cache", "vitest-report.json");
mkdirSync(join(process.cwd(), "node_modules", ".cache"), { recursive: true });
rmSync(report, { force: true }); // never read a previous run's figures

console.log("> tsc --noEmit (whole workspace, then the operator console's browser code with the DOM lib)");
const tsc = spawnSync(bin("tsc"), ["--noEmit", "-p", "tsconfig.json"], { stdio: "inherit" });
const tscWeb = spawnSync(bin("tsc"), ["--noEmit", "-p", "packages/operator-console/tsconfig.web.json"], { stdio: "inherit" });
const typecheckFailed = tsc.status !== 0 || tscWeb.status !== 0;
console.log(typecheckFailed ? "type-check: FAILED" : "type-check: ok");

// The design's dependency rules (.dependency-cruiser.cjs, docs/ARCHITECTURE.md): no cycle, no module
// importing one above it, no test package in production code. dependency-cruiser prints its own summary
// line ("no dependency violations found (…)" or "x N dependency violations (…)"); any violation fails.
console.log("> depcruise apps packages --config .dependency-cruiser.cjs (dependency rules)");
const depcruise = spawnSync(bin("depcruise"), ["apps", "packages", "--config", ".dependency-cruiser.cjs", "--output-type", "err"], {
  stdio: "inherit",
});
const dependencyRulesFailed = depcruise.status !== 0;
console.log(dependencyRulesFailed ? "dependency rules: FAILED" : "dependency rules: ok");

// knip (knip.json): no unused file, export, dependency or unlisted binary in any workspace. It prints
// nothing when clean and exits non-zero on any finding (configuration hints are printed, not failed).
console.log("> knip --no-progress (unused files, exports, dependencies)");
const knip = spawnSync(bin("knip"), ["--no-progress"], { stdio: "inherit" });
const knipFailed = knip.status !== 0;
console.log(knipFailed ? "knip: FAILED" : "knip: ok");

// prettier (.prettierrc.json, .prettierignore): every code and JSON file as `prettier --write .` leaves it.
// It names each unformatted file; `npm run format` fixes them.
console.log("> prettier --check . (formatting)");
const prettier = spawnSync(bin("prettier"), ["--check", ".", "--log-level", "warn"], { stdio: "inherit" });
const formattingFailed = prettier.status !== 0;
console.log(formattingFailed ? "formatting: FAILED (run: npm run format)" : "formatting: ok");

const vitest = spawnSync(
  bin("vitest"),
  ["run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`, ...process.argv.slice(2)],
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
