/**
 * `npm run store:check -- [file]`: checks a whole SQLite store file, read-only (SQLite's integrity check and
 * every foreign key; a violating row is named by its rowid, or by its primary key in a `WITHOUT ROWID` table:
 * `foreign key: run_events row (id='01J…') names no session_runs`); the file defaults to `MOSOO_DB_FILE` as
 * the API resolves it. The API's start does not run these (they read every page: seconds per million effects).
 * Exit codes: 0 sound; 1 problems found (one line each on stdout); 2 bad input, no such file (`store.not_found`),
 * a file that cannot be opened or is not a SQLite database (`store.check: …`), or a SQLite file without the Mosoo
 * tables (`store.not_mosoo`), one line on stderr naming the file.
 */
import { existsSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { ConfigError, loadApiConfig } from "./config/api-config.js";
import { checkDbFilePath } from "./config/startup-checks.js";
import { checkSqliteStore, describeViolatingRow, StoreNotMosooError } from "./platform/db/sqlite/sqlite-store-check.js";

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
  const given = program.args[0];
  try {
    const file = given ?? loadApiConfig(process.env).dbFile;
    if (file === ":memory:") throw new ConfigError("store.check: an in-memory store has no file to check");
    if (!existsSync(file)) throw new ConfigError(`store.not_found: no store file at ${file}`);
    try {
      checkDbFilePath(file);
    } catch (err) {
      // the path came as the argument, not from MOSOO_DB_FILE: the line names the command, not the variable
      if (given !== undefined && err instanceof ConfigError)
        throw new ConfigError(err.message.replace(/^config\.invalid: MOSOO_DB_FILE: /, "store.check: "));
      throw err;
    }
    const found = checkSqliteStore(file);
    for (const line of found.integrityProblems) process.stdout.write(`integrity: ${line}\n`);
    for (const v of found.foreignKeyViolations)
      process.stdout.write(`foreign key: ${v.table} ${describeViolatingRow(v)} names no ${v.parent}\n`);
    const bad = found.integrityProblems.length + found.foreignKeyViolations.length;
    process.stdout.write(bad === 0 ? `store.check: ${file}: ok\n` : `store.check: ${file}: ${bad} problem(s)\n`);
    return bad === 0 ? 0 : 1;
  } catch (err) {
    const known = err instanceof ConfigError || err instanceof StoreNotMosooError;
    process.stderr.write(`${known ? err.message : `store.check: ${err instanceof Error ? err.message : String(err)}`}\n`);
    return 2;
  }
}

process.exitCode = main();
