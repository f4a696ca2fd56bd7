import {
  newUlid,
  type CommandUpdateRequest,
  type CommandUpdateResponse,
  type DriverCommandEnvelope,
  type EffectClaim,
  type EffectClaimRequest,
  type EffectCompleteRequest,
  type EffectDeadlineMissedRequest,
  type EffectLateResultRequest,
  type EffectTaskCreatedRequest,
  type EffectMarkUnknownRequest,
  type EffectTransitionResponse,
} from "@mosoo/contracts";
import type { DriverRouteName, RouteInput, RouteOutput } from "@mosoo/contracts";
import type { DriverCommandApi, DriverRoute } from "../../src/api-client.js";

/** One recorded call of the fake API. */
export type RecordedApiCall =
  | { method: "commandUpdate"; commandId: string; body: CommandUpdateRequest }
  | { method: "effectClaim"; body: EffectClaimRequest }
  | { method: "effectComplete"; effectId: string; body: EffectCompleteRequest }
  | { method: "effectMarkUnknown"; effectId: string; body: EffectMarkUnknownRequest }
  | { method: "effectDeadlineMissed"; effectId: string; body: EffectDeadlineMissedRequest }
  | { method: "effectLateResult"; effectId: string; body: EffectLateResultRequest }
  | { method: "effectTaskCreated"; effectId: string; body: EffectTaskCreatedRequest };

/**
 * An in-memory, recording fake of the command/effect part of the API (a test double of the HTTP
 * boundary). Answers are scriptable per call; every call is also appended to `events` as
 * `api:<method>[:<status>]` so tests can order API calls against tool calls.
 */
export class RecordingApi implements DriverCommandApi {
  readonly calls: RecordedApiCall[] = [];
  claim: EffectClaim;
  acceptOutcome: CommandUpdateResponse = { outcome: "applied", status: "accepted" };
  completeAnswer: () => Promise<EffectTransitionResponse> = async () => ({ outcome: "applied", status: "succeeded" });
  /** The answer to a missed send-by deadline report (default: the API settled it `not_executed`). */
  deadlineMissedAnswer: () => Promise<EffectTransitionResponse> = async () => ({ outcome: "applied", status: "not_executed" });
  /** The answer to late evidence (default: the API settled it `succeeded`, `reported_late`). */
  lateResultAnswer: () => Promise<EffectTransitionResponse> = async () => ({ outcome: "applied", status: "succeeded" });
  /** Runs while the claim request is in flight (e.g. a test advances a fake clock: a slow answer). */
  onClaim: () => void = () => {};

  constructor(
    readonly events: string[] = [],
    readonly effectId: string = newUlid(),
  ) {
    this.claim = { kind: "execute", effectId, attempt: 1, idempotencyKey: newUlid(), sendWithinMs: 10_000 };
  }

  /** The typed call of the Driver's API port, dispatched to the fake's per-route answers below. @throws Error for a route this fake does not answer. */
  async call<N extends DriverRouteName>(name: N, input: RouteInput<DriverRoute<N>>): Promise<RouteOutput<DriverRoute<N>>> {
    const { params, body } = input as { params?: Record<string, string>; body?: never };
    const answers: Partial<Record<DriverRouteName, () => Promise<unknown>>> = {
      commandUpdate: () => this.commandUpdate(params!["commandId"]!, body!),
      effectClaim: () => this.effectClaim(body!),
      effectComplete: () => this.effectComplete(params!["effectId"]!, body!),
      effectMarkUnknown: () => this.effectMarkUnknown(params!["effectId"]!, body!),
      effectDeadlineMissed: () => this.effectDeadlineMissed(params!["effectId"]!, body!),
      effectLateResult: () => this.effectLateResult(params!["effectId"]!, body!),
      effectTaskCreated: () => this.effectTaskCreated(params!["effectId"]!, body!),
    };
    const answer = answers[name];
    if (!answer) throw new Error(`RecordingApi answers no ${name}`);
    return (await answer()) as RouteOutput<DriverRoute<N>>;
  }

  async commandUpdate(commandId: string, body: CommandUpdateRequest): Promise<CommandUpdateResponse> {
    this.calls.push({ method: "commandUpdate", commandId, body });
    this.events.push(`api:commandUpdate:${body.status}`);
    if (body.status === "accepted") return this.acceptOutcome;
    return { outcome: "applied", status: body.status };
  }

  async effectClaim(body: EffectClaimRequest): Promise<EffectClaim> {
    this.calls.push({ method: "effectClaim", body });
    this.events.push("api:effectClaim");
    this.onClaim();
    return this.claim;
  }

  async effectComplete(effectId: string, body: EffectCompleteRequest): Promise<EffectTransitionResponse> {
    this.calls.push({ method: "effectComplete", effectId, body });
    this.events.push("api:effectComplete");
    return this.completeAnswer();
  }

  async effectMarkUnknown(effectId: string, body: EffectMarkUnknownRequest): Promise<EffectTransitionResponse> {
    this.calls.push({ method: "effectMarkUnknown", effectId, body });
    this.events.push("api:effectMarkUnknown");
    return { outcome: "applied", status: "unknown" };
  }

  async effectDeadlineMissed(effectId: string, body: EffectDeadlineMissedRequest): Promise<EffectTransitionResponse> {
    this.calls.push({ method: "effectDeadlineMissed", effectId, body });
    this.events.push("api:effectDeadlineMissed");
    return this.deadlineMissedAnswer();
  }

  async effectLateResult(effectId: string, body: EffectLateResultRequest): Promise<EffectTransitionResponse> {
    this.calls.push({ method: "effectLateResult", effectId, body });
    this.events.push("api:effectLateResult");
    return this.lateResultAnswer();
  }

  /** Records the task-handle report and answers `applied` (the effect stays `executing`). */
  async effectTaskCreated(effectId: string, body: EffectTaskCreatedRequest): Promise<EffectTransitionResponse> {
    this.calls.push({ method: "effectTaskCreated", effectId, body });
    this.events.push("api:effectTaskCreated");
    return { outcome: "applied", status: "executing" };
  }

  /** The recorded calls of one method. */
  callsOf<M extends RecordedApiCall["method"]>(method: M): Extract<RecordedApiCall, { method: M }>[] {
    return this.calls.filter((c): c is Extract<RecordedApiCall, { method: M }> => c.method === method);
  }
}

/** An `mcp.execute` envelope as the API delivers it. */
export function mcpExecuteEnvelope(
  overrides: {
    status?: DriverCommandEnvelope["status"];
    redelivery?: boolean;
    serverId?: string;
    toolName?: string;
    args?: Record<string, unknown>;
  } = {},
): DriverCommandEnvelope {
  const commandId = newUlid();
  return {
    commandId,
    seq: 1,
    runId: newUlid(),
    type: "mcp.execute",
    status: overrides.status ?? "delivered",
    redelivery: overrides.redelivery ?? false,
    payload: {
      commandId,
      requestId: "req-1",
      serverId: overrides.serverId ?? "issues",
      toolCallId: "call-1",
      toolName: overrides.toolName ?? "create_issue",
      argumentsJson: JSON.stringify(overrides.args ?? { title: "Broken login" }),
    },
  };
}
