/**
 * Shutdown of the reconciler (docs/DESIGN.md §4, §3 rule 6; a hostile review of `server.ts` close()):
 * closing the isolated adapter host rejects the lookups still running in its workers, and each such
 * lookup then submits its outcome to the group commit. `EffectReconciler.drain()` — what the API's
 * close() awaits after closing the host and before closing the store — must leave every such outcome
 * committed and its lease released, so that nothing is lost and then misrecorded `lookup_interrupted`
 * at the next start. Real host (sandboxed child processes), real runtime (CrashLab, group commit on).
 * The second case holds the store's write lock (another connection, as a backup or `effects --db`
 * would) while the host closes: the outcome's commit then waits out the busy store asynchronously,
 * after the first flush — the window in which the old close() (flush once, close the store) lost it.
 */
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { NOOP_LOGGER } from "@mosoo/effect-reconciliation/host";
import { createIsolatedAdapterHost } from "../src/modules/reconciliation/infrastructure/adapter-sandbox.host.js";
import { CrashLab } from "./helpers/crash-lab.js";

const MISBEHAVING = fileURLToPath(new URL("./fixtures/adapters/misbehaving.adapter.ts", import.meta.url));

describe("reconciler shutdown: outcomes of lookups the host's close rejected", { timeout: 120_000 }, () => {
  async function lookUpThenClose(lockStore: boolean): Promise<void> {
    const host = createIsolatedAdapterHost({ heapMb: 32, cpuLimitMs: 10_000, maxProcesses: 1, bindTimeoutMs: 60_000, logger: NOOP_LOGGER });
    const { adapter } = await host.bind({ module: MISBEHAVING, export: "neverSettlesAdapterFactory" }, undefined);
    const lab = new CrashLab("lookup_only", "ok", { adapter, lookupTimeoutMs: 60_000 });
    let other: Database.Database | undefined;
    try {
      await lab.setup();
      const effectId = await lab.toUnknownEffect();
      const lookup = lab.runtime.reconciler.reconcile(effectId, "sweep");
      // the lookup is running in a worker once the adapter was asked (polled, generous deadline)
      const deadline = Date.now() + 30_000;
      while (lab.facts.lookups === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(lab.facts.lookups).toBe(1);
      if (lockStore) {
        other = new Database(lab.file);
        other.exec("BEGIN IMMEDIATE");
      }
      await host.close();
      const drained = lab.runtime.reconciler.drain();
      // the lock is given back while drain() waits (well inside the commit's busy-retry budget of ~1.3 s)
      if (other) setTimeout(() => other!.exec("ROLLBACK"), 100);
      await drained;
      // checked at once, as close() would close the store now
      const records = lab.sqlite
        .prepare("SELECT outcome, reason_code FROM effect_reconciliations WHERE effect_id = ?")
        .all(effectId) as Array<{ outcome: string; reason_code: string | null }>;
      expect(records).toEqual([{ outcome: "still_unknown", reason_code: "adapter_crashed" }]);
      const row = lab.sqlite.prepare("SELECT status, lease_owner FROM external_tool_effects WHERE id = ?").get(effectId) as {
        status: string;
        lease_owner: string | null;
      };
      expect(row).toEqual({ status: "unknown", lease_owner: null });
      await expect(lookup).resolves.toMatchObject({ kind: "still_unknown" });
    } finally {
      other?.close();
      await lab.dispose();
      await host.close();
    }
  }

  it("host closed mid-lookup, then drain(): the outcome is committed and the lease released before the store could close", () =>
    lookUpThenClose(false));

  it("the same while another connection holds the store's write lock: drain() waits for the commit's busy retries", () =>
    lookUpThenClose(true));
});
