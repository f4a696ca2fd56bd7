import { describe, expect, it } from "vitest";
import type { CompensationPlanRequest, ReconciliationAdapter } from "../src/index.ts";
import { NOOP_LOGGER, planCompensation, MAX_COMPENSATION_ARGUMENTS_BYTES } from "../src/host/index.ts";
import { makeDeclaration } from "./reconcile-fixtures.ts";

const declaration = makeDeclaration({
  tools: ["create_issue", "close_issue"],
  compensations: { create_issue: { toolName: "close_issue", description: "Close the created issue." } },
});

const request: CompensationPlanRequest = {
  effectId: "01JAAAAAAAAAAAAAAAAAAAAAAA",
  serverId: "tracker",
  toolName: "create_issue",
  idempotencyKey: "01JBBBBBBBBBBBBBBBBBBBBBBB",
  arguments: { title: "t" },
  result: { outputText: "Created issue #1" },
};

function adapterPlanning(
  plan: (r: CompensationPlanRequest, ctx: { signal: AbortSignal }) => Promise<unknown>,
): ReconciliationAdapter & { calls: number } {
  const adapter = {
    declaration,
    calls: 0,
    lookup: () => Promise.resolve(null),
    planCompensation: (r: CompensationPlanRequest, ctx: { signal: AbortSignal }) => {
      adapter.calls += 1;
      return plan(r, ctx);
    },
  };
  return adapter;
}

describe("planCompensation (fail-closed)", () => {
  it("plans the declared compensating tool with the adapter's validated arguments", async () => {
    const adapter = adapterPlanning((r) => Promise.resolve({ arguments: { issueKey: r.idempotencyKey } }));
    const decision = await planCompensation({ adapter, request, timeoutMs: 1_000, logger: NOOP_LOGGER });
    expect(decision).toEqual({
      kind: "planned",
      toolName: "close_issue",
      arguments: { issueKey: request.idempotencyKey },
      adapter: { id: declaration.id, version: declaration.version },
    });
  });

  it("refuses an undeclared tool without calling the adapter (compensation.not_declared)", async () => {
    const adapter = adapterPlanning(() => Promise.resolve({ arguments: {} }));
    const decision = await planCompensation({
      adapter,
      request: { ...request, toolName: "close_issue" },
      timeoutMs: 1_000,
      logger: NOOP_LOGGER,
    });
    expect(decision).toMatchObject({ kind: "refused", code: "compensation.not_declared" });
    expect(adapter.calls).toBe(0);
  });

  it("refuses an adapter that declares the compensation but has no planCompensation", async () => {
    const adapter: ReconciliationAdapter = { declaration, lookup: () => Promise.resolve(null) };
    expect(await planCompensation({ adapter, request, timeoutMs: 1_000, logger: NOOP_LOGGER })).toMatchObject({
      kind: "refused",
      code: "compensation.not_declared",
    });
  });

  it.each<[string, (r: CompensationPlanRequest, ctx: { signal: AbortSignal }) => Promise<unknown>]>([
    ["throws", () => Promise.reject(new Error("provider down"))],
    ["answers no arguments", () => Promise.resolve({})],
    ["answers arguments that are not an object", () => Promise.resolve({ arguments: ["a"] })],
    ["answers extra keys", () => Promise.resolve({ arguments: {}, toolName: "delete_everything" })],
    ["answers oversized arguments", () => Promise.resolve({ arguments: { blob: "x".repeat(MAX_COMPENSATION_ARGUMENTS_BYTES) } })],
    ["never answers", () => new Promise(() => {})],
  ])("refuses an adapter that %s (compensation.plan_failed)", async (_label, plan) => {
    const decision = await planCompensation({ adapter: adapterPlanning(plan), request, timeoutMs: 50, logger: NOOP_LOGGER });
    expect(decision).toMatchObject({ kind: "refused", code: "compensation.plan_failed" });
  });

  it("the tool the adapter plans for is always the declared one, whatever the adapter returns", async () => {
    const decision = await planCompensation({
      adapter: adapterPlanning(() => Promise.resolve({ arguments: { toolName: "x" } })),
      request,
      timeoutMs: 1_000,
      logger: NOOP_LOGGER,
    });
    expect(decision).toMatchObject({ kind: "planned", toolName: "close_issue" });
  });
});
