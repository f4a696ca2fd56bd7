// What an agent does after an interrupted turn, on real processes: resend the turn naively, or follow the run error's account.
import { join } from "node:path";
import type { ProviderControlClient, RunApiClient, RunViewBody } from "../http-clients.js";
import { pollUntil } from "../http-clients.js";
import type { ManagedProcess } from "../managed-process.js";
import { startDriverProcess } from "../stack.js";
import type { Timeline } from "./scenario.types.js";

/** The second write of a two-call turn (the first is `enqueueCreateIssue`'s, tool call `tc-db-1`). */
export const SECOND_ISSUE = { toolCallId: "tc-db-2", arguments: { title: "Disk full on db-2", body: "seen at 03:13" } } as const;
/** The arguments the agent sent per tool call id (it knows its own turn). */
const SENT: Record<string, Record<string, unknown>> = {
  "tc-db-1": { title: "Disk full on db-1", body: "seen at 03:12" },
  [SECOND_ISSUE.toolCallId]: SECOND_ISSUE.arguments,
};

/**
 * After the run ended: `resend_turn` — the agent (or the person behind it) sends its last request again
 * as new tool calls; `follow_advice` — it reads the run error's account, leaves the completed writes
 * alone and sends again, as new tool calls, only the ones the account says were never done.
 */
export type TurnFollowUp = "resend_turn" | "follow_advice";

/** One account line as the run error carries it. */
interface AccountLine {
  toolCallId: string;
  effectId: string;
  status: string;
}

/** The `details.account.toolCalls` of a run error (empty when absent). */
export function accountOf(error: RunViewBody["run"]["error"]): AccountLine[] {
  const account = error?.details?.["account"] as { toolCalls?: AccountLine[] } | undefined;
  return Array.isArray(account?.toolCalls) ? account.toolCalls : [];
}

/** What a repeat refusal's answer ends with when its details name the write the run's account lists for that tool call. */
const NAMES_EARLIER_WRITE = " naming the earlier write";

/**
 * How a `tool_call.repeat_refused` answer names the earlier write: {@link NAMES_EARLIER_WRITE} when its
 * `details.effectId` is the effect the run error's account lists for `toolCallId`, else which effect it named instead.
 */
function namedWrite(details: { effectId?: unknown } | undefined, account: AccountLine[], toolCallId: string): string {
  const earlier = account.find((c) => c.toolCallId === toolCallId)?.effectId;
  return earlier !== undefined && details?.effectId === earlier
    ? NAMES_EARLIER_WRITE
    : ` naming ${String(details?.effectId)}, not the account's ${String(earlier)}`;
}

/**
 * Runs the follow-up in a new run of the same session on a new Driver process (its own state file):
 * returns what each new enqueue answered (`toolCallId → HTTP status and code`) and, for `follow_advice`,
 * the status each resent call ended with. Every process it starts is pushed to `procs`.
 */
export async function followUpTurn(
  kind: TurnFollowUp,
  ctx: {
    runs: RunApiClient;
    control: ProviderControlClient;
    apiUrl: string;
    enrollmentToken: string;
    mcpConfigFile: string;
    workDir: string;
    sessionId: string;
    error: RunViewBody["run"]["error"];
    timeline: Timeline;
    procs: ManagedProcess[];
    timeoutMs: number;
  },
): Promise<Record<string, unknown>> {
  // the crash is over: the provider answers normally again (the held response of the dead Driver goes nowhere)
  await ctx.control.setFaults({ holdResponseAfterCommit: false });
  await ctx.control.release();
  const driver = await startDriverProcess({
    apiUrl: ctx.apiUrl,
    stateFile: join(ctx.workDir, "driver-c-state.json"),
    mcpConfigFile: ctx.mcpConfigFile,
    name: "driver-c",
    enrollmentToken: ctx.enrollmentToken,
  });
  ctx.procs.push(driver.proc);
  const { runId } = await ctx.runs.createRun(driver.driverInstanceId, ctx.sessionId);
  ctx.timeline(`Driver C connected; a new run ${runId} in the same session`);
  const account = accountOf(ctx.error);
  const toSend =
    kind === "resend_turn"
      ? account.map((c) => c.toolCallId)
      : account.filter((c) => c.status === "never_sent" || c.status === "not_executed" || c.status === "failed").map((c) => c.toolCallId);
  const answers: Record<string, string> = {};
  const ended: Record<string, string> = {};
  for (const toolCallId of toSend) {
    const args = SENT[toolCallId];
    if (!args) continue;
    const again = `${toolCallId}-again`;
    const res = await ctx.runs.tryEnqueueToolCall(runId, {
      serverId: "tracker",
      toolName: "createIssue",
      arguments: args,
      toolCallId: again,
    });
    const error = res.body["error"] as { code?: string; details?: { effectId?: unknown; status?: unknown } } | undefined;
    const code = error?.code;
    const named = code === "tool_call.repeat_refused" ? namedWrite(error?.details, account, toolCallId) : "";
    answers[toolCallId] = `${res.status}${code ? ` ${code}` : ""}${named}`;
    const earlier = named === NAMES_EARLIER_WRITE ? ` (effect ${String(error?.details?.effectId)}, ${String(error?.details?.status)})` : "";
    ctx.timeline(
      `${kind === "resend_turn" ? "resent" : "sent again, as the account allows,"} ${toolCallId} as ${again}: ${answers[toolCallId]}${earlier}`,
    );
    if (res.status === 201) {
      const view = await pollUntil(
        async () => {
          const v = await ctx.runs.getToolCall(runId, again);
          return ["completed", "failed"].includes(v.commandStatus) ? v : undefined;
        },
        ctx.timeoutMs,
        `the resent ${again} ends`,
      );
      ended[toolCallId] = view.status;
    }
  }
  return { followUp: kind, followUpAnswers: answers, ...(Object.keys(ended).length > 0 ? { followUpEnded: ended } : {}) };
}
