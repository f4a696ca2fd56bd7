/**
 * Crash points of the Driver's `mcp.execute` handler (Driver side): through its two
 * ports (`DriverCommandApi`, `McpToolCaller`), the k-th port call dies (throws, as a killed
 * connection or process would), for k = 1, 2, … until the handler finishes without reaching k, for
 * each provider-call behaviour. Whatever k: the provider is called at most once, no terminal
 * `completed` update is sent before `effectComplete` was applied; a dead API call ends the handler
 * (the command is left for redelivery), a dead provider call fences the effect (mark unknown, fail).
 */
import { describe, expect, it } from "vitest";
import pino from "pino";
import type { McpToolCaller } from "../src/mcp-connections.js";
import type { DriverCommandApi } from "../src/api-client.js";
import { handleMcpExecuteCommand } from "../src/mcp-execute.handler.js";
import { mcpExecuteEnvelope, RecordingApi } from "./helpers/recording-api.js";

class PortCrash extends Error {
  override readonly name = "PortCrash";
}

type Behaviour = "ok" | "timeout" | "malformed" | "slow_ok" | "tool_error";
const BEHAVIOURS: Behaviour[] = ["ok", "timeout", "malformed", "slow_ok", "tool_error"];

/** Runs the handler once, crashing at the k-th port call; returns the ordered port events and whether the crash fired. */
async function runWithCrashAt(k: number, behaviour: Behaviour) {
  const events: string[] = [];
  let calls = 0;
  let crashed = false;
  const tick = (label: string) => {
    calls += 1;
    if (calls === k) {
      crashed = true;
      events.push(`CRASH@${label}`);
      throw new PortCrash(`crash at port call ${k} (${label})`);
    }
  };
  const api = new RecordingApi(events);
  const wrapped: DriverCommandApi = {
    call: async (name, input) => {
      tick(name === "commandUpdate" ? `commandUpdate:${(input.body as { status: string }).status}` : name);
      return api.call(name, input);
    },
  };
  const mcp: McpToolCaller = {
    hasServer: () => true,
    ensureConnected: async () => {},
    callTool: async () => {
      tick("callTool");
      events.push("mcp:callTool");
      if (behaviour === "timeout") throw new Error("MCP error -32001: Request timed out");
      if (behaviour === "malformed") return { content: "not a list" };
      if (behaviour === "slow_ok") await new Promise((resolve) => setTimeout(resolve, 2));
      return { content: [{ type: "text", text: "created #1" }], ...(behaviour === "tool_error" ? { isError: true } : {}) };
    },
  };
  let threw: unknown = null;
  try {
    await handleMcpExecuteCommand(mcpExecuteEnvelope(), {
      api: wrapped,
      mcp,
      connectionId: "conn-1",
      logger: pino({ level: "silent" }),
      toolTimeoutMs: 1_000,
    });
  } catch (error) {
    threw = error;
  }
  return { events, crashed, threw };
}

describe("Driver handler: crash at the k-th port call, k = 1, 2, … until it completes", () => {
  it.each(BEHAVIOURS)("provider call %s", async (behaviour) => {
    let completedAt = 0;
    for (let k = 1; k <= 20 && completedAt === 0; k++) {
      const { events, crashed, threw } = await runWithCrashAt(k, behaviour);
      const label = `${behaviour}, crash at call ${k}: ${events.join(" → ")}`;
      if (!crashed) {
        completedAt = k;
        expect(threw, label).toBeNull();
      } else if (events.includes("CRASH@callTool")) {
        // the provider call itself died (connection lost mid-call): fate unknown, never retried
        expect(threw, label).toBeNull();
        expect(events.slice(events.indexOf("CRASH@callTool") + 1), label).toEqual(["api:effectMarkUnknown", "api:commandUpdate:failed"]);
      } else {
        // the API could not be told (the process or its connection died): the crash surfaces, no port is used after it
        expect(threw, label).toBeInstanceOf(PortCrash);
        expect(events.at(-1), label).toMatch(/^CRASH@/);
      }
      expect(events.filter((e) => e === "mcp:callTool").length, label).toBeLessThanOrEqual(1);
      const completed = events.indexOf("api:commandUpdate:completed");
      if (completed >= 0) expect(events.indexOf("api:effectComplete"), label).toBeGreaterThanOrEqual(0);
      if (completed >= 0) expect(events.indexOf("api:effectComplete"), label).toBeLessThan(completed);
      expect(events.includes("api:commandUpdate:completed") && events.includes("api:effectMarkUnknown"), label).toBe(false);
    }
    expect(completedAt).toBeGreaterThan(3);
  });
});
