/**
 * `mosoo-effects` (`npm run effects -- <command>`): the operator CLI over the operator service.
 * Exit codes (effects-cli.exit-codes.ts): 0 done; 2 nothing ran because the command line, its environment
 * or the store it names is wrong; 1 the command ran and was refused, or failed. A failure prints one line
 * on stderr: `mosoo-effects: <code>: <message>`.
 */
import { CommanderError } from "commander";
import { unknownMosooEnvNames } from "@mosoo/contracts";
import { buildEffectsCli } from "./entry/cli/effects-cli.js";
import { CliFailure, EXIT } from "./entry/cli/effects-cli.exit-codes.js";
import { oneLine } from "./entry/cli/effects-render.js";

async function main(): Promise<void> {
  // A reader that stops early (`| head`) closes the pipe: end quietly, as other CLIs do.
  process.stdout.on("error", (err: NodeJS.ErrnoException) => process.exit(err.code === "EPIPE" ? EXIT.ok : EXIT.refused));
  const unknownEnv = unknownMosooEnvNames(process.env);
  if (unknownEnv.length > 0)
    process.stderr.write(`mosoo-effects: warning: config.unknown_variables: no Mosoo program reads ${unknownEnv.join(", ")} (a typo?)\n`);
  try {
    await buildEffectsCli((text) => process.stdout.write(text)).parseAsync(process.argv);
  } catch (error) {
    if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? EXIT.ok : EXIT.badInput);
    const line = error instanceof CliFailure ? error.message : `internal: ${error instanceof Error ? error.message : String(error)}`;
    process.stderr.write(`mosoo-effects: ${oneLine(line)}\n`);
    process.exit(error instanceof CliFailure ? error.exitCode : EXIT.refused);
  }
}

void main();
