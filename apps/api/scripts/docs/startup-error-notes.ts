/**
 * The notes of docs/errors.md for the codes that programs print at startup and in the operator CLI, outside the
 * code lists (apps/api/tests/docs.test.ts finds each code the programs print in their sources and checks it is here or in a list).
 */
import type { ErrorNote } from "./error-notes.js";

/** The codes programs print at startup and in the CLI, in the order docs/errors.md lists them. */
export const STARTUP_CODES = [
  "config.invalid",
  "config.unknown_variables",
  "setup.failed",
  "api.start_failed",
  "store.schema_newer",
  "store.schema_behind",
  "store.not_mosoo",
  "store.not_found",
  "store.check",
] as const;

/** The note of each of {@link STARTUP_CODES}. */
export const STARTUP_NOTES: Readonly<Record<(typeof STARTUP_CODES)[number], ErrorNote>> = {
  "config.invalid": {
    who: "every program at startup (exit 2)",
    meaning: "a variable, file or option is unusable; the line names it and why",
    next: "fix what the line names ([configuration.md](configuration.md))",
  },
  "store.schema_newer": {
    who: "the API and CLI at startup",
    meaning: "the store was migrated by a newer build",
    next: "run the newer build (roll forward), or restore the backup taken before the upgrade",
  },
  "store.schema_behind": {
    who: "the operator CLI (`--db`), inside `config.invalid` (exit 2)",
    meaning:
      "the store file has not been migrated to this build's schema (an API of the previous build may still serve it), and the CLI never migrates",
    next: "start this build's API once (it migrates at startup), then run the command again",
  },
  "store.not_mosoo": {
    who: "the operator CLI, `npm run store:check`",
    meaning: "the database holds no Mosoo tables",
    next: "pass the API's own `MOSOO_DB_FILE` / `MOSOO_DATABASE_URL`",
  },
  "store.not_found": {
    who: "the operator CLI, `npm run store:check`",
    meaning: "no database file at `--db` (or the file given)",
    next: "pass the API's own `MOSOO_DB_FILE`",
  },
  "config.unknown_variables": {
    who: "the API, the operator CLI and the Driver at startup (a warning; the program goes on)",
    meaning: "a `MOSOO_*` variable that no Mosoo program reads is set; the line names it",
    next: "fix its spelling ([configuration.md](configuration.md) lists every variable), or unset it",
  },
  "setup.failed": {
    who: "`npm run effects` and `npm run pg:start` (exit 1)",
    meaning: "installing the dependencies (`npm run setup`, the pinned pnpm) failed, so the program did not run; its output is hidden",
    next: "run `npm run setup` to see why (no registry access, a lockfile out of date, another Node version), fix it and run the command again",
  },
  "api.start_failed": {
    who: "the API at startup (exit 1)",
    meaning: "the API could not start for a reason other than its configuration (e.g. the port is already in use); the line says why",
    next: "fix what the line names (free the port, or choose another `MOSOO_PORT`) and start again",
  },
  "store.check": {
    who: "`npm run store:check` (exit 2)",
    meaning:
      "the file could not be checked: `MOSOO_DB_FILE` is `:memory:`, or SQLite cannot open the file (the line gives its reason); the summary line starts the same way (`store.check: <file>: ok`)",
    next: "pass the store file's path ([OPERATIONS.md](OPERATIONS.md#checking-a-sqlite-store-file))",
  },
};
