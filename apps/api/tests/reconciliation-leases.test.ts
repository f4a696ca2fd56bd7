import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { loadApiConfig } from "../src/config/api-config.js";
import { startApi } from "../src/server.js";
import { openSqliteStore } from "../src/platform/db/sqlite/sqlite-store.js";
import { commitAtProvider, createDoubleWorld, deliverAcceptClaim, dispatchWrite, type DoubleWorld, reconnectDriver } from "./kit/index.js";
import { effectRow, reconciliationRecords, runEvents } from "./helpers/reconciliation-db.js";

let fx: DoubleWorld | undefined;
const dirs: string[] = [];
afterEach(() => {
  fx?.close();
  fx = undefined;
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
});

/** The Driver reports that it lost track of its attempt: the effect is `unknown`, nothing looked up yet. */
async function unknownEffect(f: DoubleWorld) {
  const call = await dispatchWrite(f);
  await commitAtProvider(f, call);
  await f.runtime.ledger.markUnknown(call.driver.instance, call.effectId, {
    connectionId: call.driver.connectionId,
    attempt: 1,
    reason: "transport closed",
  });
  expect(effectRow(f.store, call.effectId).status).toBe("unknown");
  return call;
}

describe("DESIGN §3 rule 6: the outcome and what the caller settles commit in ONE transaction", () => {
  it("writes nothing of the outcome when the caller's part of the transaction fails, and gives the lease back", async () => {
    fx = createDoubleWorld();
    const call = await unknownEffect(fx);
    const before = effectRow(fx.store, call.effectId);
    await expect(
      fx.runtime.reconciler.reconcile(call.effectId, "finalization", {
        settleCommand: true,
        alsoWrite: () => {
          throw new Error("command write failed");
        },
      }),
    ).rejects.toThrow("command write failed");
    const after = effectRow(fx.store, call.effectId);
    expect(after).toMatchObject({
      status: "unknown",
      resolution: null,
      lookup_count: 0,
      lease_owner: null,
      reconciliation_receipt_json: null,
    });
    expect(after.version).toBe(before.version + 1); // only the lease was taken (and released)
    expect(reconciliationRecords(fx.store, call.effectId)).toEqual([]);
    expect(runEvents(fx.store, call.runId, "effect.reconciled")).toEqual([]);
    // and the effect can be reconciled afterwards
    expect((await fx.runtime.reconciler.reconcile(call.effectId, "sweep")).kind).toBe("confirmed_succeeded");
  });
});

describe("leases", () => {
  it("a redelivered claim waits for the sweep's lookup in flight and answers with its outcome", async () => {
    fx = createDoubleWorld();
    const f = fx;
    const call = await unknownEffect(f);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const inner = f.adapter.lookup.bind(f.adapter);
    f.adapter.lookup = async (req, ctx) => {
      await gate;
      return inner(req, ctx);
    };
    const sweep = f.runtime.reconciler.reconcile(call.effectId, "sweep"); // holds the lease, waits at the gate
    const restarted = await reconnectDriver(f.runtime, call.driver);
    const claiming = deliverAcceptClaim(f.runtime, restarted);
    await new Promise((r) => setTimeout(r, 100));
    open();
    expect((await sweep).kind).toBe("confirmed_succeeded");
    const { claim } = await claiming;
    expect(claim).toMatchObject({ kind: "completed", effectId: call.effectId });
    expect(reconciliationRecords(f.store, call.effectId).map((r) => [r.trigger, r.outcome, r.reason_code])).toEqual([
      ["redelivery", "superseded", "lease_held"],
      ["sweep", "confirmed_succeeded", null],
    ]);
  });

  it("a starting API ends only EXPIRED leases (lookup_interrupted) and never a live one, which may be another instance's (DESIGN §11)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mosoo-lease-"));
    dirs.push(dir);
    const dbFile = join(dir, "api.db");
    fx = createDoubleWorld({ dbFile });
    const expired = await unknownEffect(fx);
    const live = await unknownEffect(fx);
    // an API died mid-lookup a while ago (its lease expired); another is looking the second effect up right now
    const setLease = fx.store.sqlite.prepare("UPDATE external_tool_effects SET lease_owner = ?, lease_expires_at_ms = ? WHERE id = ?");
    setLease.run("dead-api", Date.now() - 1, expired.effectId);
    setLease.run("live-api", Date.now() + 3_600_000, live.effectId);
    fx.close();
    fx = undefined;
    const api = await startApi(loadApiConfig({ MOSOO_DB_FILE: dbFile, MOSOO_PORT: "0" }), pino({ level: "silent" }), { sweep: false });
    await api.close();
    const reopened = openSqliteStore(dbFile);
    try {
      expect(effectRow(reopened, expired.effectId)).toMatchObject({ status: "unknown", lease_owner: null, lease_expires_at_ms: null });
      expect(effectRow(reopened, live.effectId)).toMatchObject({ status: "unknown", lease_owner: "live-api" });
      expect(reconciliationRecords(reopened, live.effectId)).toEqual([]);
    } finally {
      reopened.closeNow();
    }
  });
});
