/**
 * `npm run store:check -- [file]`: checks a whole SQLite store file, read-only (SQLite's integrity check and
 * every foreign key; a violating row is named by its rowid, or by its primary key in a `WITHOUT ROWID` table:
 * `foreign key: run_events row (id='01J…') names no session_runs`); the file defaults to `MOSOO_DB_FILE` as
 * the API resolves it. The API's start does not run these (they read every page: seconds per million effects).
 * Exit codes: 0 sound; 1 problems found (one line each on stdout); 2 bad input or a file that cannot be
 * opened (one line on stderr).
 */
import { Command, CommanderError } from "commander";
import { ConfigError, loadApiConfig } from "./config/api-config.js";
import { checkDbFilePath } from "./config/startup-checks.js";
import { checkSqliteStore, describeViolatingRow } from "./platform/db/sqlite/sqlite-store-check.js";

function main(): number {
  const program = new Command("store:check")
    .description("check a SQLite store file: integrity and foreign keys (read-only)")
    .argument("[file]", "the store file (default: MOSOO_DB_FILE, as the API resolves it)")
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s.split("\n")[0] + "\n") });
  try {
    program.parse(process.argv);
  } catch (err) {
    return err instanceof CommanderError && err.exitCode === 0 ? 0 : 2;
  }
  try {
    const file = program.args[0] ?? loadApiConfig(process.env).dbFile;
    if (file === ":memory:") throw new ConfigError("store.check: an in-memory store has no file to check");
    checkDbFilePath(file);
    const found = checkSqliteStore(file);
    for (const line of found.integrityProblems) process.stdout.write(`integrity: ${line}\n`);
    for (const v of found.foreignKeyViolations)
      process.stdout.write(`foreign key: ${v.table} ${describeViolatingRow(v)} names no ${v.parent}\n`);
    const bad = found.integrityProblems.length + found.foreignKeyViolations.length;
    process.stdout.write(bad === 0 ? `store.check: ${file}: ok\n` : `store.check: ${file}: ${bad} problem(s)\n`);
    return bad === 0 ? 0 : 1;
  } catch (err) {
    process.stderr.write(
      `${err instanceof ConfigError ? err.message : `store.check: ${err instanceof Error ? err.message : String(err)}`}\n`,
    );
    return 2;
  }
}

process.exitCode = main();
