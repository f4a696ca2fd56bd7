// Runs the operator CLI (`mosoo-effects`) in this process, as the tests drive it.
import { CommanderError } from "commander";
import { buildEffectsCli } from "../../src/entry/cli/effects-cli.js";
import { CliFailure } from "../../src/entry/cli/effects-cli.exit-codes.js";

/** What one in-process CLI run gave: its exit code (a commander usage error exits 2), stdout, and stderr or the failure line. */
export interface CliRun {
  code: number;
  out: string;
  err: string;
}

/**
 * Runs `mosoo-effects <args>` in-process with `env` as its environment and a clock fixed at 2026-11-29 13:00 UTC.
 * A `CliFailure` gives its exit code and its line as `err`, prefixed with `failurePrefix` (default `mosoo-effects: `,
 * as the program prints it). Any other error is rethrown.
 */
export async function runEffectsCli(args: string[], env: Record<string, string>, failurePrefix = "mosoo-effects: "): Promise<CliRun> {
  let out = "";
  let err = "";
  const program = buildEffectsCli(
    (t) => (out += t),
    { ...env } as NodeJS.ProcessEnv,
    () => Date.UTC(2026, 10, 29, 13),
  );
  // subcommands copied the output settings when they were created: capture theirs too
  for (const c of [program, ...program.commands]) c.configureOutput({ writeOut: (t) => (out += t), writeErr: (t) => (err += t) });
  try {
    await program.parseAsync(["node", "mosoo-effects", ...args]);
    return { code: 0, out, err };
  } catch (e) {
    if (e instanceof CommanderError) return { code: e.exitCode === 0 ? 0 : 2, out, err };
    if (e instanceof CliFailure) return { code: e.exitCode, out, err: `${failurePrefix}${e.message}\n` };
    throw e;
  }
}
