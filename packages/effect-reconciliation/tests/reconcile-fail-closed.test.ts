import { newUlid } from "@mosoo/contracts";
import { describe, expect, it } from "vitest";
import type { AdapterLogger } from "../src/index.ts";
import { MAX_RECEIPT_BYTES, MAX_RESULT_BYTES, reconcileEffect, type ReconcileDecision } from "../src/host/index.ts";
import {
  HOUR_MS,
  OTHER_FINGERPRINT,
  SERVER_ID,
  T0,
  TIMEOUT_MS,
  makeDeclaration,
  makeEffect,
  notExecutedAnswer,
  observedAt,
  scriptedAdapter,
  succeededAnswer,
} from "./reconcile-fixtures.ts";

const NOW = T0 + 10 * 60 * 1000;

function stillUnknown(decision: ReconcileDecision) {
  if (decision.decision !== "still_unknown") throw new Error(`expected still_unknown, got ${JSON.stringify(decision)}`);
  return decision;
}

describe("DESIGN §5 row 1: throws, rejects, or exceeds the lookup timeout → still_unknown", () => {
  it("a synchronous throw becomes adapter_error with a one-line, stack-free error", async () => {
    const effect = makeEffect();
    const { adapter, calls } = scriptedAdapter(() => {
      throw new Error("socket hang up\n    at connect (net.js:1:1)");
    });
    const d = stillUnknown(await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS }));
    expect(d).toMatchObject({
      reasonSource: "runtime",
      reasonCode: "adapter_error",
      operatorAttention: false,
      adapter: { id: "issues-adapter", version: "1.2.0" },
    });
    expect(d.error).toContain("socket hang up");
    expect(d.error).not.toMatch(/\n/);
    expect(calls).toHaveLength(1);
  });

  it("a rejection becomes adapter_error", async () => {
    const effect = makeEffect();
    const { adapter } = scriptedAdapter(() => Promise.reject(new TypeError("fetch failed")));
    const d = stillUnknown(await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS }));
    expect(d.reasonCode).toBe("adapter_error");
    expect(d.error).toBe("TypeError: fetch failed");
  });

  it("an adapter that ignores the signal and never settles is not waited for: lookup_timeout, and its signal was aborted", async () => {
    const effect = makeEffect();
    const { adapter, calls } = scriptedAdapter(() => new Promise(() => {}));
    const d = stillUnknown(await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: 20 }));
    expect(d.reasonCode).toBe("lookup_timeout");
    expect(d.nextLookupNotBeforeMs).toBeUndefined();
    expect(calls[0]?.context.signal.aborted).toBe(true);
  });

  it("an adapter that honours the signal by rejecting with an AbortError counts as lookup_timeout, not adapter_error", async () => {
    const effect = makeEffect();
    const { adapter } = scriptedAdapter(
      (_request, { signal }) =>
        new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true })),
    );
    const d = stillUnknown(await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: 20 }));
    expect(d.reasonCode).toBe("lookup_timeout");
  });

  it("a late answer after the timeout is dropped without an unhandled rejection", async () => {
    const effect = makeEffect();
    let rejectLate: (error: Error) => void = () => {};
    const { adapter } = scriptedAdapter(() => new Promise((_resolve, reject) => (rejectLate = reject)));
    const d = stillUnknown(await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: 10 }));
    rejectLate(new Error("late"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(d.reasonCode).toBe("lookup_timeout");
  });

  it("the caller's own signal cancels the lookup: lookup_cancelled", async () => {
    const effect = makeEffect();
    const controller = new AbortController();
    const { adapter } = scriptedAdapter(() => {
      controller.abort();
      return new Promise(() => {});
    });
    const d = stillUnknown(
      await reconcileEffect({
        effect,
        binding: { serverId: SERVER_ID, adapter },
        nowMs: NOW,
        timeoutMs: 60_000,
        signal: controller.signal,
      }),
    );
    expect(d.reasonCode).toBe("lookup_cancelled");
  });
});

describe("DESIGN §5 row 2: output fails schema validation, or receipt over the size limit → invalid_adapter_output", () => {
  const effect = makeEffect();
  const malformed: Array<[string, unknown]> = [
    ["undefined", undefined],
    ["null", null],
    ["a string", "confirmed_succeeded"],
    ["an unknown outcome", { outcome: "probably_fine", toolName: effect.toolName, idempotencyKey: effect.idempotencyKey }],
    ["a success without a result", { ...succeededAnswer(effect), result: undefined }],
    ["a success without a receipt", { ...succeededAnswer(effect), receipt: undefined }],
    [
      "a misspelled receipt field",
      { ...succeededAnswer(effect), receipt: { observedAt: observedAt(), requestFingerPrint: OTHER_FINGERPRINT } },
    ],
    [
      "an uppercase fingerprint",
      { ...succeededAnswer(effect), receipt: { observedAt: observedAt(), requestFingerprint: OTHER_FINGERPRINT.toUpperCase() } },
    ],
    ["a non-ISO observedAt", { ...notExecutedAnswer(effect), receipt: { observedAt: "yesterday" } }],
    ["a still_unknown with a bad reason code", { outcome: "still_unknown", reasonCode: "Rate Limited" }],
    ["a still_unknown with a negative retryAfterMs", { outcome: "still_unknown", reasonCode: "rate_limited", retryAfterMs: -5 }],
    ["an extra top-level key", { ...notExecutedAnswer(effect), proof: "trust me" }],
    ["a non-JSON detail value", { ...notExecutedAnswer(effect), receipt: { observedAt: observedAt(), detail: { n: Number.NaN } } }],
  ];
  it.each(malformed)("%s", async (_label, answer) => {
    const { adapter } = scriptedAdapter(() => Promise.resolve(answer));
    const d = stillUnknown(await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS }));
    expect(d).toMatchObject({ reasonSource: "runtime", reasonCode: "invalid_adapter_output" });
    expect(d.error).toBeTruthy();
  });

  it("hostile answers (throwing getter, proxy, deep nesting) are refused without throwing", async () => {
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 50_000; i += 1) {
      const next: Record<string, unknown> = {};
      deep["d"] = next;
      deep = next;
    }
    const hostile: unknown[] = [
      {
        get outcome(): string {
          throw new Error("getter boom");
        },
      },
      // `then` must read as undefined, or the adapter's own promise would reject (adapter_error).
      new Proxy(
        {},
        {
          get: (_target, property) => {
            if (property === "then") return undefined;
            throw new Error("proxy boom");
          },
          ownKeys: () => {
            throw new Error("proxy keys");
          },
        },
      ),
      { ...notExecutedAnswer(effect), receipt: { observedAt: observedAt(), detail: root } },
    ];
    for (const answer of hostile) {
      const { adapter } = scriptedAdapter(() => Promise.resolve(answer));
      const d = stillUnknown(
        await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS }),
      );
      expect(d.reasonCode).toBe("invalid_adapter_output");
    }
  });

  function receiptOfBytes(bytes: number): Record<string, unknown> {
    const base = { observedAt: observedAt(), detail: { pad: "" } };
    const padding = bytes - JSON.stringify(base).length;
    return { observedAt: observedAt(), detail: { pad: "p".repeat(padding) } };
  }

  it(`a receipt of ${MAX_RECEIPT_BYTES + 1} bytes is refused; one of exactly ${MAX_RECEIPT_BYTES} bytes is accepted`, async () => {
    const over = receiptOfBytes(MAX_RECEIPT_BYTES + 1);
    const exact = receiptOfBytes(MAX_RECEIPT_BYTES);
    expect(Buffer.byteLength(JSON.stringify(over))).toBe(MAX_RECEIPT_BYTES + 1);
    expect(Buffer.byteLength(JSON.stringify(exact))).toBe(MAX_RECEIPT_BYTES);
    const refused = scriptedAdapter(() => Promise.resolve(succeededAnswer(effect, { receipt: over }))).adapter;
    const accepted = scriptedAdapter(() => Promise.resolve(succeededAnswer(effect, { receipt: exact }))).adapter;
    const d1 = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter: refused }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    const d2 = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter: accepted }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(stillUnknown(d1).reasonCode).toBe("invalid_adapter_output");
    expect(d2.decision).toBe("confirmed_succeeded");
  });

  it("receipt size counts UTF-8 bytes, not characters", async () => {
    const base = JSON.stringify({ observedAt: observedAt(), detail: { pad: "" } }).length;
    const chars = Math.floor((MAX_RECEIPT_BYTES - base) / 2) + 1; // 2 bytes each in UTF-8: over by ≥ 1 byte
    const receipt = { observedAt: observedAt(), detail: { pad: "é".repeat(chars) } };
    expect(JSON.stringify(receipt).length).toBeLessThanOrEqual(MAX_RECEIPT_BYTES);
    const { adapter } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect, { receipt })));
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(stillUnknown(d).reasonCode).toBe("invalid_adapter_output");
  });

  it(`a result over ${MAX_RESULT_BYTES} bytes is refused`, async () => {
    const result = { content: [{ type: "text", text: "r".repeat(MAX_RESULT_BYTES) }] };
    const { adapter } = scriptedAdapter(() => Promise.resolve(succeededAnswer(effect, { result })));
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(stillUnknown(d).reasonCode).toBe("invalid_adapter_output");
  });
});

describe("DESIGN §5 row 3: the provider's recorded request fingerprint differs → key_conflict, flagged for an operator", () => {
  it.each(["confirmed_succeeded", "confirmed_not_executed"] as const)("for %s", async (outcome) => {
    const effect = makeEffect();
    const receipt = { observedAt: observedAt(), requestFingerprint: OTHER_FINGERPRINT };
    const answer = outcome === "confirmed_succeeded" ? succeededAnswer(effect, { receipt }) : notExecutedAnswer(effect, { receipt });
    const { adapter } = scriptedAdapter(() => Promise.resolve(answer));
    const d = stillUnknown(await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS }));
    expect(d).toMatchObject({ reasonSource: "runtime", reasonCode: "key_conflict", operatorAttention: true, receipt });
    expect(d.error).toContain(OTHER_FINGERPRINT);
  });

  it("a receipt without a fingerprint cannot conflict and is accepted", async () => {
    const effect = makeEffect();
    const { adapter } = scriptedAdapter(() => Promise.resolve(succeededAnswer(effect, { receipt: { observedAt: observedAt() } })));
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(d.decision).toBe("confirmed_succeeded");
  });
});

describe("DESIGN §5 row 4: confirmed_not_executed once the retention window has passed → retention_expired", () => {
  const retentionWindowMs = 2 * HOUR_MS;
  const declaration = makeDeclaration({ retentionWindowMs });

  it("refused when the provider may have forgotten the key, flagged for an operator", async () => {
    const effect = makeEffect();
    const { adapter } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect)), declaration);
    const d = stillUnknown(
      await reconcileEffect({
        effect,
        binding: { serverId: SERVER_ID, adapter },
        nowMs: T0 + retentionWindowMs + 1,
        timeoutMs: TIMEOUT_MS,
      }),
    );
    expect(d).toMatchObject({ reasonCode: "retention_expired", operatorAttention: true });
  });

  it("the window is measured to the latest moment the answer can be read (nowMs + timeoutMs): the last timeoutMs before it are refused", async () => {
    const effect = makeEffect();
    const { adapter } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect)), declaration);
    const atLimit = T0 + retentionWindowMs - TIMEOUT_MS;
    const accepted = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: atLimit, timeoutMs: TIMEOUT_MS });
    const refused = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: atLimit + 1, timeoutMs: TIMEOUT_MS });
    expect(accepted.decision).toBe("confirmed_not_executed");
    expect(stillUnknown(refused).reasonCode).toBe("retention_expired");
  });

  it("the window starts at the first dispatch: a recent re-dispatch does not make an old key remembered again", async () => {
    const effect = makeEffect({ firstDispatchedAtMs: T0, lastDispatchedAtMs: T0 + retentionWindowMs });
    const { adapter } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect)), declaration);
    const d = await reconcileEffect({
      effect,
      binding: { serverId: SERVER_ID, adapter },
      nowMs: T0 + retentionWindowMs + 10,
      timeoutMs: TIMEOUT_MS,
    });
    expect(stillUnknown(d).reasonCode).toBe("retention_expired");
  });

  it("does not apply to confirmed_succeeded (a remembered write is still proof)", async () => {
    const effect = makeEffect();
    const { adapter } = scriptedAdapter(() => Promise.resolve(succeededAnswer(effect)), declaration);
    const d = await reconcileEffect({
      effect,
      binding: { serverId: SERVER_ID, adapter },
      nowMs: T0 + 10 * retentionWindowMs,
      timeoutMs: TIMEOUT_MS,
    });
    expect(d.decision).toBe("confirmed_succeeded");
  });
});

describe("DESIGN §5 row 5: not_executed without a fence inside the maximum in-flight time → in_flight_window", () => {
  const maxInFlightMs = 30_000;
  const unfenced = makeDeclaration({ keyFencing: { kind: "max_in_flight", maxInFlightMs } });

  it("refused, and the next lookup is scheduled at lastDispatchedAtMs + maxInFlightMs", async () => {
    const effect = makeEffect({ firstDispatchedAtMs: T0 - 5000, lastDispatchedAtMs: T0 });
    const { adapter } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect)), unfenced);
    const d = stillUnknown(
      await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: T0 + 1000, timeoutMs: TIMEOUT_MS }),
    );
    expect(d).toMatchObject({ reasonSource: "runtime", reasonCode: "in_flight_window", operatorAttention: false });
    expect(d.nextLookupNotBeforeMs).toBe(T0 + maxInFlightMs);
  });

  it("accepted from lastDispatchedAtMs + maxInFlightMs on (the retention canary confirmed)", async () => {
    const effect = makeEffect();
    const canary = makeEffect({ firstDispatchedAtMs: T0 - 1, lastDispatchedAtMs: T0 - 1 });
    const { adapter } = scriptedAdapter(
      (request) => Promise.resolve(request.idempotencyKey === canary.idempotencyKey ? succeededAnswer(canary) : notExecutedAnswer(effect)),
      unfenced,
    );
    const before = await reconcileEffect({
      effect,
      binding: { serverId: SERVER_ID, adapter },
      nowMs: T0 + maxInFlightMs - 1,
      timeoutMs: TIMEOUT_MS,
      canary,
    });
    const at = await reconcileEffect({
      effect,
      binding: { serverId: SERVER_ID, adapter },
      nowMs: T0 + maxInFlightMs,
      timeoutMs: TIMEOUT_MS,
      canary,
    });
    expect(stillUnknown(before).reasonCode).toBe("in_flight_window");
    expect(at).toMatchObject({ decision: "confirmed_not_executed", adapter: { id: "issues-adapter", version: "1.2.0" } });
  });

  it("a fenced provider's not_executed right after the dispatch is accepted (the fence is the proof)", async () => {
    const effect = makeEffect();
    const { adapter } = scriptedAdapter(
      () => Promise.resolve(notExecutedAnswer(effect)),
      makeDeclaration({ keyFencing: { kind: "lookup_fences_key" } }),
    );
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: T0 + 1, timeoutMs: TIMEOUT_MS });
    expect(d.decision).toBe("confirmed_not_executed");
  });

  it("a success inside the in-flight window is accepted (a commit already landed)", async () => {
    const effect = makeEffect();
    const { adapter } = scriptedAdapter(() => Promise.resolve(succeededAnswer(effect)), unfenced);
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: T0 + 1, timeoutMs: TIMEOUT_MS });
    expect(d.decision).toBe("confirmed_succeeded");
  });
});

describe("DESIGN §5 row 6: answers for a tool it did not declare, or another effect → refused", () => {
  it("an answer about another idempotency key is refused as answer_mismatch", async () => {
    const effect = makeEffect();
    const { adapter } = scriptedAdapter(() => Promise.resolve(succeededAnswer(effect, { idempotencyKey: newUlid() })));
    const d = stillUnknown(await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS }));
    expect(d).toMatchObject({ reasonSource: "runtime", reasonCode: "answer_mismatch" });
  });

  it("an answer about another tool (one the adapter does not declare) is refused as answer_mismatch", async () => {
    const effect = makeEffect();
    const { adapter } = scriptedAdapter(() => Promise.resolve(notExecutedAnswer(effect, { toolName: "delete_repository" })));
    const d = stillUnknown(await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS }));
    expect(d.reasonCode).toBe("answer_mismatch");
  });
});

describe("the adapter's own still_unknown", () => {
  it("passes its reason code through, with nextLookupNotBeforeMs = nowMs + retryAfterMs", async () => {
    const effect = makeEffect();
    const { adapter } = scriptedAdapter(() =>
      Promise.resolve({ outcome: "still_unknown", reasonCode: "rate_limited", retryAfterMs: 45_000 }),
    );
    const d = stillUnknown(await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS }));
    expect(d).toEqual({
      decision: "still_unknown",
      reasonSource: "adapter",
      reasonCode: "rate_limited",
      adapter: { id: "issues-adapter", version: "1.2.0" },
      operatorAttention: false,
      nextLookupNotBeforeMs: NOW + 45_000,
    });
  });

  it("an adapter reusing a runtime code's spelling is still told apart by reasonSource", async () => {
    const effect = makeEffect();
    const { adapter } = scriptedAdapter(() => Promise.resolve({ outcome: "still_unknown", reasonCode: "key_conflict" }));
    const d = stillUnknown(await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS }));
    expect(d).toMatchObject({ reasonSource: "adapter", reasonCode: "key_conflict", operatorAttention: false });
    expect(d.nextLookupNotBeforeMs).toBeUndefined();
  });
});

describe("validated confirmations", () => {
  it("confirmed_succeeded carries the result and receipt as detached JSON copies and the adapter's id and version", async () => {
    const effect = makeEffect();
    const answer = succeededAnswer(effect) as Extract<ReturnType<typeof succeededAnswer>, { outcome: "confirmed_succeeded" }>;
    const { adapter, calls } = scriptedAdapter(() => Promise.resolve(answer));
    const d = await reconcileEffect({ effect, binding: { serverId: SERVER_ID, adapter }, nowMs: NOW, timeoutMs: TIMEOUT_MS });
    expect(d).toEqual({
      decision: "confirmed_succeeded",
      result: answer.result,
      receipt: answer.receipt,
      adapter: { id: "issues-adapter", version: "1.2.0" },
    });
    if (d.decision !== "confirmed_succeeded") return;
    expect(d.result).not.toBe(answer.result);
    expect(d.receipt).not.toBe(answer.receipt);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.request).toEqual({
      effectId: effect.effectId,
      serverId: effect.serverId,
      toolName: effect.toolName,
      idempotencyKey: effect.idempotencyKey,
      requestFingerprint: effect.requestFingerprint,
      firstDispatchedAtMs: effect.firstDispatchedAtMs,
      lastDispatchedAtMs: effect.lastDispatchedAtMs,
    });
  });

  it("the adapter's logger carries adapterId and effectId, and a throwing host logger changes nothing", async () => {
    const effect = makeEffect();
    const entries: Array<{ fields: Record<string, unknown>; message: string }> = [];
    const throwing: AdapterLogger = {
      debug: (fields, message) => void entries.push({ fields, message }),
      info: () => {
        throw new Error("log sink down");
      },
      warn: () => {
        throw new Error("log sink down");
      },
      error: () => {
        throw new Error("log sink down");
      },
    };
    const { adapter } = scriptedAdapter((_request, { logger }) => {
      logger.debug({ step: "read" }, "looking up");
      logger.error({ step: "read" }, "boom");
      return Promise.resolve(notExecutedAnswer(effect));
    });
    const d = await reconcileEffect({
      effect,
      binding: { serverId: SERVER_ID, adapter },
      nowMs: NOW,
      timeoutMs: TIMEOUT_MS,
      logger: throwing,
    });
    expect(d.decision).toBe("confirmed_not_executed");
    expect(entries).toContainEqual({
      fields: { step: "read", adapterId: "issues-adapter", adapterVersion: "1.2.0", effectId: effect.effectId },
      message: "looking up",
    });
  });
});
