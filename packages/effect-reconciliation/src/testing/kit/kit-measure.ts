// Measures a provider through its own lookup API (lag, fencing, retention) and judges an adapter's declaration against it.
import { newUlid } from "@mosoo/contracts";
import type { AdapterDeclaration } from "../../author/adapter.contract.js";
import type { KitProvider, KitWriteResult } from "./kit-provider.contract.js";

/**
 * What the kit measured of the provider (docs/DESIGN.md §5 last row: "declaration contradicts what the
 * provider shows"):
 * - `lookupLagMs`: the longest time (ms) from a commit until the provider's lookup found it (3 writes);
 * - `firstLookupMissed`: true when a lookup right after a commit did not find it;
 * - `missFences`: whether a write with a key sent after a lookup missed it was refused;
 * - `rememberedMs`: how long a committed key stayed visible, `null` when it outlived the probe;
 * - `probeHorizonMs`: how long the kit watched (retention beyond it cannot be checked).
 */
export interface ProviderMeasurements {
  lookupLagMs: number;
  firstLookupMissed: boolean;
  missFences: boolean;
  rememberedMs: number | null;
  probeHorizonMs: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Measures `provider` through its own lookup API and judges `declaration` against it. Returns the
 * measurements and the failures (one line each): a declared `max_in_flight` below the observed lag,
 * `lookup_fences_key` while a miss does not fence or a lookup right after a commit misses, a
 * retention longer than the provider kept a key. `write` records each commit in the kit's ledger.
 */
export async function measureProvider(
  provider: KitProvider,
  declaration: AdapterDeclaration,
  tool: string,
  write: (tool: string, key: string, args: Record<string, unknown>) => Promise<KitWriteResult>,
  horizonMs: number,
): Promise<{ measurements: ProviderMeasurements; failures: string[] }> {
  const args = provider.argumentSets(tool)[0]!;
  const failures: string[] = [];
  let lookupLagMs = 0;
  let firstLookupMissed = false;
  for (let i = 0; i < 3; i += 1) {
    const key = newUlid();
    const written = await write(tool, key, args);
    if (written.status !== "committed") throw new Error(`the provider refused a fresh write (${written.reason}); cannot measure it`);
    const committedAt = Date.now();
    let first = true;
    while ((await provider.lookup(key)) !== "found") {
      if (first) firstLookupMissed = true;
      first = false;
      if (Date.now() - committedAt > 10_000) throw new Error("a committed key stayed invisible to the provider's lookup for 10 s");
      await sleep(10);
    }
    lookupLagMs = Math.max(lookupLagMs, first ? 0 : Date.now() - committedAt);
  }

  const fenceKey = newUlid();
  await provider.lookup(fenceKey);
  const afterMiss = await write(tool, fenceKey, args);
  const missFences = afterMiss.status === "refused";

  const keepKey = newUlid();
  await write(tool, keepKey, args);
  const keptSince = Date.now();
  // Visible first (after the lookup lag), then watched until the provider forgets it.
  while ((await provider.lookup(keepKey)) !== "found" && Date.now() - keptSince < horizonMs) await sleep(10);
  let rememberedMs: number | null = null;
  while (Date.now() - keptSince < horizonMs) {
    await sleep(50);
    if ((await provider.lookup(keepKey)) === "not_found") {
      rememberedMs = Date.now() - keptSince;
      break;
    }
  }

  const f = declaration.keyFencing;
  if (f.kind === "max_in_flight" && f.maxInFlightMs < lookupLagMs) {
    failures.push(
      `declares maxInFlightMs ${f.maxInFlightMs}, but the provider's lookup lagged ${lookupLagMs} ms behind a commit: a committed write could be decided not_executed`,
    );
  }
  if (f.kind === "lookup_fences_key" && !missFences)
    failures.push("declares lookup_fences_key, but a write sent after a lookup missed its key committed: a miss does not fence");
  if (f.kind === "lookup_fences_key" && firstLookupMissed) {
    failures.push(
      `declares lookup_fences_key, but a lookup right after a commit missed it (lag up to ${lookupLagMs} ms): a miss can "fence" a committed key`,
    );
  }
  if (rememberedMs !== null && declaration.retentionWindowMs > rememberedMs) {
    failures.push(
      `declares retentionWindowMs ${declaration.retentionWindowMs}, but the provider forgot a committed key after about ${rememberedMs} ms`,
    );
  }
  return { measurements: { lookupLagMs, firstLookupMissed, missFences, rememberedMs, probeHorizonMs: horizonMs }, failures };
}
