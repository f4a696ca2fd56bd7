/**
 * Fills a migrated PostgreSQL store with the same long history as the SQLite generator (`historyBatches`), fast:
 * one `COPY … FROM STDIN` per table and batch (pg-copy-streams), one transaction per batch, never the API.
 */
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import {
  HISTORY_TABLES,
  historyBatches,
  type HistoryCounts,
  type HistoryRow,
  type HistoryShape,
  type HistoryTable,
} from "./history-store.rows.js";

/** A value in COPY's text format: `\N` for null, backslash, tab, newline and carriage return escaped. */
function copyText(v: string | number | null): string {
  if (v === null) return "\\N";
  if (typeof v === "number") return String(v);
  return /[\\\t\n\r]/.test(v) ? v.replace(/\\/g, "\\\\").replace(/\t/g, "\\t").replace(/\n/g, "\\n").replace(/\r/g, "\\r") : v;
}

/** Rows per chunk handed to the COPY stream. */
const CHUNK_ROWS = 2_000;

/** The rows as COPY text, in chunks of {@link CHUNK_ROWS} lines. */
function* copyChunks(rows: readonly HistoryRow[]): Generator<string> {
  for (let i = 0; i < rows.length; i += CHUNK_ROWS) {
    let out = "";
    for (const row of rows.slice(i, i + CHUNK_ROWS)) out += `${row.map(copyText).join("\t")}\n`;
    yield out;
  }
}

/**
 * Writes `shape`'s history into the migrated PostgreSQL database behind `pool`, on one connection: per batch
 * one transaction of one COPY per table (parents first; foreign keys and triggers checked as on any insert),
 * `synchronous_commit` off for the filling session. Then advances the long-lived Driver's `last_command_seq`
 * past its history. Does not ANALYZE or VACUUM (the caller decides). `onBatch` is told the effects written so far.
 * @returns the row counts written.
 * @throws the `pg` error of a failed COPY (the batch is rolled back; earlier batches stay).
 */
export async function fillHistoryPg(pool: pg.Pool, shape: HistoryShape, onBatch?: (effects: number) => void): Promise<HistoryCounts> {
  const client = await pool.connect();
  const tables = Object.keys(HISTORY_TABLES) as HistoryTable[];
  try {
    // a COPY of a big batch may outlast the store's statement timeout under load; filling is not measured
    await client.query("SET synchronous_commit = off");
    await client.query("SET statement_timeout = 0");
    const batches = historyBatches(shape);
    let written = 0;
    for (;;) {
      const next = batches.next();
      if (next.done) {
        if (shape.longLived)
          await client.query("UPDATE driver_instances SET last_command_seq = last_command_seq + $1 WHERE id = $2", [
            next.value.longLivedLastSeq,
            shape.longLived.driverInstanceId,
          ]);
        return next.value.counts;
      }
      await client.query("BEGIN");
      try {
        for (const table of tables) {
          const rows = next.value[table];
          if (rows.length === 0) continue;
          const copy = client.query(copyFrom(`COPY ${table} (${HISTORY_TABLES[table].join(", ")}) FROM STDIN`));
          await pipeline(Readable.from(copyChunks(rows)), copy);
        }
        await client.query("COMMIT");
      } catch (err) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw err;
      }
      written += next.value.external_tool_effects.length;
      onBatch?.(written);
    }
  } finally {
    await client.query("RESET synchronous_commit").catch(() => undefined);
    await client.query("RESET statement_timeout").catch(() => undefined);
    client.release();
  }
}
