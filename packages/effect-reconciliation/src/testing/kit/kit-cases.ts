// The conformance kit's lookup cases, one function each, run in `KIT_CASES` order against a shared `KitContext`.
import { fingerprintArguments, newUlid } from "@mosoo/contracts";
import type { LookupRequest } from "../../author/adapter.contract.js";
import { NOOP_LOGGER } from "../../host/adapter-logger.js";
import { sleep, type KitContext } from "./kit-context.js";
import type { KitCaseName } from "./kit-run.contract.js";

/**
 * `committed_keys_are_confirmed`: two fresh keys for each of the first two argument sets of every
 * declared tool; each write must commit and then be confirmed within `settleMs`.
 */
export async function committedKeysCase(ctx: KitContext): Promise<void> {
  const c: KitCaseName = "committed_keys_are_confirmed";
  for (const tool of ctx.tools) {
    for (const args of ctx.provider.argumentSets(tool).slice(0, 2)) {
      for (let k = 0; k < 2; k += 1) {
        const key = newUlid();
        const at = Date.now();
        const w = await ctx.write(tool, key, args);
        if (w.status !== "committed") ctx.fail(c, `the provider refused a fresh write (${w.reason})`);
        else await ctx.settleCommitted(c, tool, key, fingerprintArguments(args), at);
      }
    }
  }
}

/**
 * `older_key_after_newer_writes`: an older key after newer writes (of other arguments and another
 * tool): more than two pages of the provider's list endpoint, so an adapter that reads only a list's
 * first page cannot find it.
 */
export async function olderKeyAfterNewerWritesCase(ctx: KitContext): Promise<void> {
  const { provider, tools } = ctx;
  const [a0, a1] = provider.argumentSets(tools[0]!);
  const k1 = newUlid();
  const at = Date.now();
  await ctx.write(tools[0]!, k1, a0!);
  const newer = 2 * (provider.listPageSize ?? 10) + 1;
  const other = tools[1] ?? tools[0]!;
  await Promise.all(
    Array.from({ length: newer }, (_, i) =>
      i % 2 === 0 ? ctx.write(tools[0]!, newUlid(), a1!) : ctx.write(other, newUlid(), provider.argumentSets(other)[1]!),
    ),
  );
  // Every newer write must be visible before the first lookup, or the key is still on the list's first page: a
  // provider's lookups may lag its commits, by less than its declared in-flight window (the kit reads a miss inside
  // that window as no proof). Without this wait a slow machine spread the writes over more than the lag, the older
  // key showed on page one, and an adapter that reads only that page passed the case.
  await sleep(ctx.inFlightMs);
  await ctx.settleCommitted("older_key_after_newer_writes", tools[0]!, k1, fingerprintArguments(a0!), at);
}

/**
 * `conflicting_request_not_confirmed`: another request (other arguments) under a committed key must
 * be reported `still_unknown` / `key_conflict` within `settleMs`, never confirmed.
 */
export async function conflictingRequestCase(ctx: KitContext): Promise<void> {
  const c: KitCaseName = "conflicting_request_not_confirmed";
  const tool = ctx.tools[0]!;
  const [a0, a1] = ctx.provider.argumentSets(tool);
  const key = newUlid();
  const at = Date.now();
  await ctx.write(tool, key, a0!);
  const other = fingerprintArguments(a1!);
  const deadline = Date.now() + ctx.settleMs;
  let conflict = false;
  while (!conflict && Date.now() < deadline) {
    const d = await ctx.judge(c, tool, key, other, await ctx.decide(tool, key, other, at));
    conflict = d.decision === "still_unknown" && d.reasonCode === "key_conflict";
    if (d.decision === "confirmed_succeeded") break;
    if (!conflict) await sleep(40);
  }
  if (!conflict)
    ctx.fail(
      c,
      `a request with other arguments under a committed key was never reported key_conflict (put the provider's recorded fingerprint in the receipt)`,
    );
}

/** `never_used_keys_not_succeeded`: three keys never written (sent before the in-flight window), each judged once. */
export async function neverUsedKeysCase(ctx: KitContext): Promise<void> {
  for (let i = 0; i < 3; i += 1) {
    const tool = ctx.tools[i % ctx.tools.length]!;
    const key = newUlid();
    await ctx.judge(
      "never_used_keys_not_succeeded",
      tool,
      key,
      fingerprintArguments(ctx.provider.argumentSets(tool)[0]!),
      await ctx.decide(tool, key, fingerprintArguments(ctx.provider.argumentSets(tool)[0]!), Date.now() - ctx.inFlightMs - 1),
    );
  }
}

/**
 * `late_commit_never_not_executed` (a write the provider commits 200 ms after receiving it) and
 * `pending_never_not_executed` (a write held pending): noted not applicable when the provider cannot
 * delay a write or has no observable pending state.
 */
export async function lateCommitCases(ctx: KitContext): Promise<void> {
  if (ctx.provider.supportsDelayedWrites === false) ctx.notes.set("late_commit_never_not_executed", "the provider cannot delay a write");
  else await lateCommitCase(ctx, "late_commit_never_not_executed", 200);
  if (!ctx.provider.hasPendingState) ctx.notes.set("pending_never_not_executed", "the provider has no observable pending state");
  else await lateCommitCase(ctx, "pending_never_not_executed", 0);
}

/**
 * Looks a key up while its write (committed `delayMs` after it is received) is in flight, judging
 * every answer; fails `c` when any answer was `confirmed_not_executed` and the write then committed,
 * and then settles the committed key.
 */
async function lateCommitCase(ctx: KitContext, c: KitCaseName, delayMs: number): Promise<void> {
  const tool = ctx.tools[0]!;
  const args = ctx.provider.argumentSets(tool)[1]!;
  const fingerprint = fingerprintArguments(args);
  const key = newUlid();
  const at = Date.now();
  let settled = false;
  const writing = ctx.write(tool, key, args, { delayMs }).finally(() => {
    settled = true;
  });
  const notExecuted: string[] = [];
  await sleep(30);
  while (!settled) {
    const d = await ctx.judge(c, tool, key, fingerprint, await ctx.decide(tool, key, fingerprint, at));
    if (d.decision === "confirmed_not_executed") notExecuted.push(new Date().toISOString());
    await sleep(40);
  }
  const written = await writing;
  if (written.status === "committed" && notExecuted.length > 0)
    ctx.fail(c, `decided confirmed_not_executed while the write (${tool}, key ${key}) was in flight; it committed afterwards`);
  if (written.status === "committed") await ctx.settleCommitted(c, tool, key, fingerprint, at);
}

/**
 * `aborted_lookup_confirms_nothing`: a lookup of a committed key whose signal aborts (after 50 ms
 * with the provider's lookups slowed to 400 ms, or before it starts when they cannot be slowed) must
 * settle within 1.5 s and confirm nothing.
 */
export async function abortedLookupCase(ctx: KitContext): Promise<void> {
  const c: KitCaseName = "aborted_lookup_confirms_nothing";
  const { provider } = ctx;
  const tool = ctx.tools[0]!;
  const args = provider.argumentSets(tool)[0]!;
  const key = newUlid();
  const at = Date.now();
  await ctx.write(tool, key, args);
  await ctx.settleCommitted(c, tool, key, fingerprintArguments(args), at);
  const slowed = provider.setLookupDelay !== undefined;
  if (slowed) await provider.setLookupDelay!(400);
  const signal = slowed ? AbortSignal.timeout(50) : AbortSignal.abort(new Error("aborted by the kit"));
  const request: LookupRequest = {
    effectId: newUlid(),
    serverId: ctx.serverId,
    toolName: tool,
    idempotencyKey: key,
    requestFingerprint: fingerprintArguments(args),
    firstDispatchedAtMs: at,
    lastDispatchedAtMs: at,
  };
  const answer = await Promise.race([
    ctx.guarded.lookup(request, { signal, logger: NOOP_LOGGER }).then(
      (v) => ({ v }),
      () => ({ v: "rejected" as unknown }),
    ),
    sleep(1_500).then(() => ({ v: "hung" as unknown })),
  ]);
  if (slowed) await provider.setLookupDelay!(0);
  const outcome = (answer.v as { outcome?: unknown } | null)?.outcome;
  if (answer.v === "hung") ctx.fail(c, "the lookup did not settle within 1.5 s after its signal aborted");
  else if (outcome === "confirmed_succeeded" || outcome === "confirmed_not_executed")
    ctx.fail(c, `answered ${String(outcome)} after its signal aborted (it could not have asked the provider)`);
}

/**
 * `provider_outage_confirms_nothing`: while the provider's lookup API is down, nothing may be
 * confirmed, neither a committed key nor a never-used one (a failed lookup proves nothing). Noted
 * when the provider cannot simulate an outage.
 */
export async function providerOutageCase(ctx: KitContext): Promise<void> {
  const c: KitCaseName = "provider_outage_confirms_nothing";
  const { provider } = ctx;
  if (provider.setOutage === undefined) {
    ctx.notes.set(c, "the provider cannot simulate an outage");
    return;
  }
  const tool = ctx.tools[0]!;
  const args = provider.argumentSets(tool)[0]!;
  const committedKey = newUlid();
  const at = Date.now();
  await ctx.write(tool, committedKey, args);
  const neverUsedKey = newUlid();
  await provider.setOutage(true);
  try {
    for (const key of [committedKey, neverUsedKey]) {
      const d = await ctx.decide(tool, key, fingerprintArguments(args), at - ctx.inFlightMs - 1);
      if (d.decision === "confirmed_succeeded" || d.decision === "confirmed_not_executed") {
        ctx.fail(
          c,
          `decided ${d.decision} (${tool}, key ${key}) while the provider's lookup API was down: a failed lookup proves nothing (throw, or answer still_unknown)`,
        );
      }
    }
  } finally {
    await provider.setOutage(false);
  }
}

/**
 * `forgetful_provider_never_not_executed`: a provider that forgets every key sooner than declared:
 * a miss must never be believed. The runtime's retention canary (an older committed key the adapter
 * confirmed before) must catch it, so the adapter must ask the provider about the canary, not answer
 * it from memory. Noted under a key fence (misses need no canary) or when the provider cannot forget.
 */
export async function forgetfulProviderCase(ctx: KitContext): Promise<void> {
  const c: KitCaseName = "forgetful_provider_never_not_executed";
  const { provider } = ctx;
  if (ctx.declaration.keyFencing.kind !== "max_in_flight") ctx.notes.set(c, "the adapter declares a key fence: its misses need no canary");
  else if (provider.forgetEverything === undefined) ctx.notes.set(c, "the provider cannot forget keys");
  else {
    const tool = ctx.tools[0]!;
    const [a0, a1] = provider.argumentSets(tool);
    const canaryKey = newUlid();
    const canaryAt = Date.now();
    await ctx.write(tool, canaryKey, a0!);
    await ctx.settleCommitted(c, tool, canaryKey, fingerprintArguments(a0!), canaryAt);
    const key = newUlid();
    const at = Date.now();
    await ctx.write(tool, key, a1!);
    await sleep(ctx.inFlightMs + 20); // past the in-flight window: only the canary stands between a miss and not_executed
    await provider.forgetEverything();
    const fingerprint = fingerprintArguments(a1!);
    const d = await ctx.judge(c, tool, key, fingerprint, await ctx.decide(tool, key, fingerprint, at, canaryKey));
    if (d.decision === "confirmed_not_executed")
      ctx.fail(
        c,
        `the retention canary (key ${canaryKey}) was confirmed although the provider had forgotten it: answer lookups from the provider, never from memory`,
      );
  }
}
