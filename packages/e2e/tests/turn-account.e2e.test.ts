/**
 * docs/DESIGN.md §3 rules 16 and 17 on real processes: a turn with one write the provider committed
 * (reconciled in the finalization repair) and one command never sent. The run error lists both; the
 * agent follows its advice (sends again only the never-sent one, as a new tool call) and the completed
 * write is not repeated: one provider write for its key, two in all.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCrashScenario } from "../src/scenarios/crash-scenario.js";
import { FOLLOW_ADVICE_SCENARIO } from "../src/scenarios/crash-scenarios.js";

/** Bound (ms) of the case on the shared, loaded 2-core machine: a hang bound, not a timing assertion. */
const CASE_TIMEOUT_MS = 300_000;

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe("real processes: an interrupted turn's account", () => {
  it(
    "lists the reconciled write and the never-sent command; following it sends only the never-sent one; provider writes stay 1 for the write",
    async () => {
      const workDir = mkdtempSync(join(tmpdir(), "mosoo-e2e-turn-account-"));
      dirs.push(workDir);
      const steps: string[] = [];
      const result = await runCrashScenario(FOLLOW_ADVICE_SCENARIO, { workDir, timeline: (s) => steps.push(s) });
      expect(result.failures).toEqual([]);
      expect(result.line).toMatchObject({
        providerWrites: 1,
        providerWritesAll: 2,
        runError: "runtime.turn_interrupted_after_writes",
        runRetryable: false,
        runAccount: ["tc-db-1:succeeded", "tc-db-2:never_sent"],
        followUpAnswers: { "tc-db-2": "201" },
        followUpEnded: { "tc-db-2": "succeeded" },
      });
      const message = steps.find((s) => s.startsWith("run error:")) ?? "";
      expect(message).toContain("must not be sent again: createIssue (toolCallId tc-db-1)");
      expect(message).toContain("may be sent again as new tool calls: createIssue (toolCallId tc-db-2, never sent)");
      expect(message).not.toMatch(/Please resend your last request/);
    },
    CASE_TIMEOUT_MS,
  );
});
