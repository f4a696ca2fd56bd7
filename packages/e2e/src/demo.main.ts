// The end-to-end demo's entry: runs the scenarios on real processes and exits 0 only when every scenario's checks held.
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { Command, InvalidArgumentError, Option } from "commander";
import { workspaceRoot } from "./workspace-paths.js";
import { runCrashScenario } from "./scenarios/crash-scenario.js";
import { CRASH_SCENARIOS } from "./scenarios/crash-scenarios.js";
import { OPERATOR_RESOLUTION_SCENARIO, runOperatorResolutionScenario } from "./scenarios/operator-resolution.scenario.js";
import { runScaleOutScenario, SCALE_OUT_SCENARIO } from "./scenarios/scale-out.scenario.js";
import { RETENTION_CANARY_SCENARIO, runRetentionCanaryScenario } from "./scenarios/retention-canary.scenario.js";
import { runTaskHandleScenario, TASK_HANDLE_SCENARIO } from "./scenarios/task-handle.scenario.js";
import type { ScenarioOptions, ScenarioResult } from "./scenarios/scenario.types.js";

/** The demo's scenarios, in order. */
const SCENARIOS: Array<{ name: string; run: (o: ScenarioOptions) => Promise<ScenarioResult> }> = [
  ...CRASH_SCENARIOS.map((spec) => ({ name: spec.name, run: (o: ScenarioOptions) => runCrashScenario(spec, o) })),
  { name: TASK_HANDLE_SCENARIO, run: runTaskHandleScenario },
  { name: RETENTION_CANARY_SCENARIO, run: runRetentionCanaryScenario },
  { name: OPERATOR_RESOLUTION_SCENARIO, run: runOperatorResolutionScenario },
  // the only scenario on PostgreSQL: it starts (and stops) its own throwaway server; the others stay on embedded SQLite
  { name: SCALE_OUT_SCENARIO, run: runScaleOutScenario },
];

/**
 * `npm run demo`: starts the fixture provider, the API (embedded SQLite under
 * `./var/demo/<scenario>/`, replaced on every run and kept afterwards for `npm run effects -- --db ...`;
 * `scale-out-api-instance-killed` alone runs two API instances on a throwaway PostgreSQL server it starts and stops)
 * and Driver processes for each scenario, prints a readable timeline, and ends each scenario with
 * one JSON line. Exits 0 only when every scenario's invariants held.
 */
async function main(): Promise<void> {
  const program = new Command("demo")
    .description("Runs the end-to-end scenarios on real processes and checks each one's invariants (exit 0 only when all held)")
    .addOption(
      new Option("--only <scenario>", "run just this scenario (repeatable)")
        .choices(SCENARIOS.map((s) => s.name))
        .argParser((value: string, previous: string[] | undefined) => {
          if (!SCENARIOS.some((s) => s.name === value))
            throw new InvalidArgumentError(`unknown scenario (known: ${SCENARIOS.map((s) => s.name).join(", ")})`);
          return [...(previous ?? []), value];
        }),
    )
    .exitOverride();
  try {
    program.parse();
  } catch (error) {
    process.exit((error as { exitCode?: number }).exitCode === 0 ? 0 : 2);
  }
  const only = program.opts<{ only?: string[] }>().only ?? [];
  const selected = only.length > 0 ? SCENARIOS.filter((s) => only.includes(s.name)) : SCENARIOS;
  const base = join(workspaceRoot(), "var", "demo");
  mkdirSync(base, { recursive: true });
  let failed = 0;
  for (const scenario of selected) {
    const workDir = join(base, scenario.name);
    rmSync(workDir, { recursive: true, force: true });
    mkdirSync(workDir, { recursive: true });
    const started = Date.now();
    console.log(`\n== ${scenario.name} (files in ${workDir})`);
    const timeline = (step: string) => console.log(`  +${String(Date.now() - started).padStart(5)} ms  ${step}`);
    try {
      const result = await scenario.run({ workDir, timeline });
      for (const f of result.failures) console.log(`  INVARIANT VIOLATED: ${f}`);
      if (result.failures.length > 0) failed += 1;
      console.log(JSON.stringify(result.line));
    } catch (err) {
      failed += 1;
      console.log(`  scenario error: ${err instanceof Error ? err.message : String(err)}`);
      console.log(JSON.stringify({ scenario: scenario.name, error: err instanceof Error ? err.message.split("\n")[0] : String(err) }));
    }
  }
  console.log(
    failed === 0
      ? selected.length === 1
        ? "\nthe scenario held its invariants"
        : `\nall ${selected.length} scenarios held their invariants`
      : `\n${failed} of ${selected.length} scenarios failed`,
  );
  // the scale-out scenario's store is a PostgreSQL server it stopped: no file to inspect
  const onSqlite = selected.find((sc) => sc.name !== SCALE_OUT_SCENARIO);
  if (onSqlite)
    console.log(
      `the stores are kept under ${base}; inspect one with, e.g.:\n  MOSOO_EFFECT_RECONCILIATION=on npm run effects -- --db var/demo/${onSqlite.name}/api.db list`,
    );
  process.exit(failed === 0 ? 0 : 1);
}

void main();
