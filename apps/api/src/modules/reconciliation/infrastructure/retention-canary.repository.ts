// Finds the retention canary of a fence-less miss: the oldest succeeded effect of a server and tool in a time range.
import { and, asc, eq, gte, lte, sql } from "drizzle-orm";
import type { externalToolEffects } from "../../../platform/db/sqlite/sqlite-schema.js";
import type { StoreTx } from "../../../platform/db/store.port.js";

/** How many candidates one read returns (oldest first); the caller reads the next page after those that cannot serve. */
export const CANARY_PAGE_SIZE = 8;

/** Reads of retention canaries (dialect-neutral: docs/ARCHITECTURE.md). Read-only: nothing about a canary is ever written. */
export const retentionCanaryRepository = {
  /**
   * One page of canary candidates (see `RetentionCanary` in retention-canary.service.ts): the `succeeded` effects of
   * `serverId` and `toolName` first dispatched from `fromMs` to `toMs` (ms since the epoch, both
   * inclusive) whose success the provider itself showed (resolution `provider_result`, `reconciled` or
   * `reported_late`; never an operator's word) and that no succeeded compensation undid (an undo may
   * remove the provider's record of the key), oldest first dispatch first (then id), after the
   * candidate `after` (keyset; the first page without it), at most {@link CANARY_PAGE_SIZE}. One range
   * of the partial index `external_tool_effects_canary_idx` (the `status = 'succeeded'` literal lets
   * both dialects choose it).
   */
  async listCandidates(
    tx: StoreTx,
    serverId: string,
    toolName: string,
    fromMs: number,
    toMs: number,
    after?: { firstDispatchedAtMs: number; id: string },
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
            sql`${t.resolution} IN ('provider_result', 'reconciled', 'reported_late')`,
            gte(t.firstDispatchedAtMs, sql.placeholder("fromMs")),
            lte(t.firstDispatchedAtMs, sql.placeholder("toMs")),
            // keyset: strictly after (afterMs, afterId); the first page passes fromMs - 1 and ''
            sql`(${t.firstDispatchedAtMs} > ${sql.placeholder("afterMs")} OR (${t.firstDispatchedAtMs} = ${sql.placeholder("afterMs")} AND ${t.id} > ${sql.placeholder("afterId")}))`,
            sql`NOT EXISTS (SELECT 1 FROM external_tool_effects undo WHERE undo.compensates_effect_id = ${t.id} AND undo.status IN ('executing', 'unknown', 'succeeded'))`,
          ),
        )
        .orderBy(asc(t.firstDispatchedAtMs), asc(t.id))
        .limit(CANARY_PAGE_SIZE)
        .prepare();
    });
    return q.execute({
      serverId,
      toolName,
      fromMs,
      toMs,
      afterMs: after?.firstDispatchedAtMs ?? fromMs - 1,
      afterId: after?.id ?? "",
    });
  },
};
