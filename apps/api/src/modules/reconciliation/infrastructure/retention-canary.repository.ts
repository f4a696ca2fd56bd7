// Finds the retention canary of a fence-less miss: the oldest succeeded effect of a server and tool in a time range.
import { and, asc, eq, gte, lte, sql } from "drizzle-orm";
import type { externalToolEffects } from "../../../platform/db/sqlite/sqlite-schema.js";
import type { StoreTx } from "../../../platform/db/store.port.js";

/** How many candidates one read returns (oldest first); the caller skips those that cannot serve (docs/DESIGN.md §4). */
const CANARY_CANDIDATES = 8;

/** Reads of retention canaries (dialect-neutral: docs/ARCHITECTURE.md). Read-only: nothing about a canary is ever written. */
export const retentionCanaryRepository = {
  /**
   * The `succeeded` effects of `serverId` and `toolName` first dispatched from `fromMs` to `toMs` (ms since
   * the epoch, both inclusive), oldest first dispatch first (then id), at most {@link CANARY_CANDIDATES}
   * (docs/DESIGN.md §4 "Retention canary"). One range of the partial index `external_tool_effects_canary_idx`
   * (the `status = 'succeeded'` literal lets both dialects choose it).
   */
  async listCandidates(
    tx: StoreTx,
    serverId: string,
    toolName: string,
    fromMs: number,
    toMs: number,
  ): Promise<Array<typeof externalToolEffects.$inferSelect>> {
    const q = tx.prepared("retentionCanary.listCandidates", (db) => {
      const t = tx.tables.externalToolEffects;
      return db
        .select()
        .from(t)
        .where(
          and(
            eq(t.serverId, sql.placeholder("serverId")),
            eq(t.toolName, sql.placeholder("toolName")),
            sql`${t.status} = 'succeeded'`,
            gte(t.firstDispatchedAtMs, sql.placeholder("fromMs")),
            lte(t.firstDispatchedAtMs, sql.placeholder("toMs")),
          ),
        )
        .orderBy(asc(t.firstDispatchedAtMs), asc(t.id))
        .limit(CANARY_CANDIDATES)
        .prepare();
    });
    return q.execute({ serverId, toolName, fromMs, toMs });
  },
};
