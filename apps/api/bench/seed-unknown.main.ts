/**
 * `node --import tsx seed-unknown.main.ts <dbFile> <count>`: creates and migrates the store at
 * `dbFile` and seeds `count` `unknown` effects bound to the bench adapter's server (see
 * `seedEffects`). Runs in its own process so the recovery process's peak RSS excludes seeding.
 */
import { openSqliteStore } from "../src/platform/db/sqlite/sqlite-store.js";
import { seedEffects } from "./bench-store.harness.js";

const [file, count] = process.argv.slice(2);
if (!file || !count) throw new Error("usage: seed-unknown.main.ts <dbFile> <count>");
const store = openSqliteStore(file);
seedEffects(store.sqlite, { count: Number(count), status: "unknown" });
store.sqlite.pragma("wal_checkpoint(TRUNCATE)");
store.closeNow();
