/**
 * Runs the exploring property of `tests/ledger-model.property.test.ts` any number of times with a
 * printed seed (issue 5 item 3): `npm run verify:model -- --runs 5000 [--seed S] [--path P]`.
 * A failure prints fast-check's seed and counterexample path; pass both back to replay it, then
 * pin it as a regression test (see the BUG 1/2 tests in that file). Exit code: vitest's.
 */
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Command, InvalidArgumentError } from "commander";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "../../..");

function int(value: string): number {
  const n = Number(value);
  if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError("not an integer");
  return n;
}

function positive(value: string): number {
  const n = int(value);
  if (n < 1) throw new InvalidArgumentError("must be at least 1");
  return n;
}

const program = new Command("verify:model")
  .description("Run the ledger model property (fc.commands under fc.scheduler) with a printed seed")
  .option("--runs <n>", "number of runs (at least 1)", positive, 1000)
  .option("--seed <seed>", "fast-check seed (default: random, printed)", int)
  .option("--path <path>", "counterexample path printed by a failure (replays it only)")
  .parse();
const opts = program.opts<{ runs: number; seed?: number; path?: string }>();
if (opts.path !== undefined && opts.seed === undefined) program.error("verify:model: --path replays a failure only together with its --seed", { exitCode: 2 });
const seed = opts.seed ?? (Date.now() ^ Math.floor(Math.random() * 0x7fffffff));
console.log(`verify:model: ${opts.runs} runs, seed ${seed}${opts.path ? `, path ${opts.path}` : ""}`);
const run = spawnSync(
  join(root, "node_modules/.bin/vitest"),
  ["run", "--project", "api", "tests/ledger-model.property.test.ts", "-t", "keeps I1"],
  {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, LEDGER_MODEL_RUNS: String(opts.runs), LEDGER_MODEL_SEED: String(seed), ...(opts.path ? { LEDGER_MODEL_PATH: opts.path } : {}) },
  },
);
console.log(`verify:model: ${run.status === 0 ? "passed" : "FAILED"} (seed ${seed}; replay with --seed ${seed} --path <path from the failure>)`);
process.exit(run.status ?? 1);
