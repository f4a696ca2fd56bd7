/**
 * Fills a migrated SQLite store with a long history, fast: the rows of `historyBatches` through raw prepared
 * inserts in big transactions, never the API (the bench's history rows measure the API against it, not the filling).
 */
import type Database from "better-sqlite3";
import {
  HISTORY_TABLES,
  historyBatches,
  type HistoryBatch,
  type HistoryCounts,
  type HistoryShape,
  type HistoryTable,
} from "./history-store.rows.js";

export type { HistoryCounts, HistoryShape } from "./history-store.rows.js";

/**
 * Writes `shape`'s history (`historyBatches`) into `sqlite` (migrated, foreign keys as the store set them),
 * one transaction per batch, with `synchronous = OFF` and a 256 MB page cache while filling (restored
 * after). Each Driver's `last_command_seq` ends at its history's last command `seq` (the SQLite trigger
 * `driver_commands_advance_last_command_seq` moves it on each command INSERT; the long-lived Driver must have no
 * commands before), so its next command numbers on. `onBatch` is told the effects written so far after each batch (progress output).
 * @returns the row counts written.
 */
export function fillHistory(sqlite: Database.Database, shape: HistoryShape, onBatch?: (effects: number) => void): HistoryCounts {
  const inserts = Object.fromEntries(
    Object.entries(HISTORY_TABLES).map(([table, cols]) => [
      table,
      sqlite.prepare(`INSERT INTO ${table} (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`),
    ]),
  ) as Record<HistoryTable, Database.Statement>;
  const tables = Object.keys(HISTORY_TABLES) as HistoryTable[];
  // filling is not measured: no fsync per batch, a large page cache (restored below)
  const synchronous = sqlite.pragma("synchronous", { simple: true }) as number;
  const cacheSize = sqlite.pragma("cache_size", { simple: true }) as number;
  sqlite.pragma("synchronous = OFF");
  sqlite.pragma("cache_size = -262144");
  try {
    const write = sqlite.transaction((batch: HistoryBatch) => {
      for (const table of tables)
        for (const row of batch[table])
          // SQLite keeps no run event counter (session_runs.last_event_seq stays 0; sqlite-schema.ts): the last column is PostgreSQL's.
          inserts[table].run(table === "session_runs" ? [...row.slice(0, -1), 0] : row);
    });
    const batches = historyBatches(shape);
    let written = 0;
    for (;;) {
      const next = batches.next();
      // No counter to advance at the end: each command INSERT moved its Driver's `last_command_seq` to its `seq`
      // (the trigger `driver_commands_advance_last_command_seq`, migration 0029), the long-lived Driver's included.
      if (next.done) return next.value.counts;
      write(next.value);
      written += next.value.external_tool_effects.length;
      onBatch?.(written);
    }
  } finally {
    sqlite.pragma(`synchronous = ${synchronous}`);
    sqlite.pragma(`cache_size = ${cacheSize}`);
  }
}
