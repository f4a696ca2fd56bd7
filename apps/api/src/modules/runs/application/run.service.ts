// The run API's service: create a run on a Driver, enqueue tool calls idempotently, read runs, delete what no fence retains.
import {
  fingerprintArguments,
  newUlid,
  type CreateRunRequest,
  type CreateRunResponse,
  type EnqueueToolCallRequest,
  type EnqueueToolCallResponse,
  type RunStatus,
  type ToolCallView,
  MAX_ARGUMENTS_BYTES,
} from "@mosoo/contracts";
import { UserFacingError } from "../../../kernel/user-facing-error.js";
import { runRepository, type RunRow } from "../infrastructure/run.repository.js";
import { commandTables, driverInstanceTables } from "../../ledger/application/owned-tables.port.js";
import { effectRows, type EffectRow } from "../../ledger/application/effect-rows.service.js";
import type { StoreTx } from "../../../platform/db/store.port.js";
import { parseJsonColumn } from "../../../platform/db/json-column.js";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";
import { toRunView, type RunView } from "./run-view.query.js";
import type { ReconciliationRecordsPort } from "./reconciliation-records.port.js";
import { planIntent, recordIntent } from "../../ledger/application/effect-intent.service.js";
import { guardRepeat, type RepeatGuardWindows } from "./repeat-guard.policy.js";
import type { RepeatGuardMetrics } from "../infrastructure/repeat-guard.metrics.js";
import { turnToolCallStatus } from "../../ledger/domain/turn-account.js";
import { isTerminalCommandStatus } from "../../ledger/domain/command-lifecycle.machine.js";
import { toolCallFacts } from "../../ledger/application/turn-account-facts.query.js";
import { reachesRun, reachesSession, sessionNotFound, UNRESTRICTED_CALLER, type RunCaller } from "../domain/run-access.js";

/**
 * Answers a retried enqueue (same run and `toolCallId`) with the first one, or refuses it when the
 * server, tool or arguments differ (Stripe-style idempotency: same key, different request = conflict).
 * @throws UserFacingError `tool_call.conflict`.
 */
async function replayEnqueue(
  tx: StoreTx,
  existing: EffectRow,
  req: EnqueueToolCallRequest,
  requestFingerprint: string,
  driverInstanceId: string,
): Promise<EnqueueToolCallResponse & { driverInstanceId: string }> {
  if (existing.serverId !== req.serverId || existing.toolName !== req.toolName || existing.requestFingerprint !== requestFingerprint) {
    throw new UserFacingError(
      "tool_call.conflict",
      `tool call ${existing.toolCallId} was already queued with another server, tool or arguments`,
      {
        effectId: existing.id,
      },
    );
  }
  const cmd = await commandTables().findById(tx, existing.commandId);
  return {
    commandId: existing.commandId,
    effectId: existing.id,
    idempotencyKey: existing.idempotencyKey,
    seq: cmd?.seq ?? 0,
    replayed: true,
    driverInstanceId,
  };
}

/**
 * The enqueue's check of its run by a plain read (on SQLite its status stays current until the commit:
 * `findRunForIntent`): the replay's answer when the client's tool-call id was queued already, else the run's
 * session, Driver instance and, on SQLite, `statusUnderWriteLock`.
 * @throws UserFacingError `run.not_found`, `run.not_active`, and the replay's `tool_call.conflict`.
 */
async function checkRunForIntent(
  tx: StoreTx,
  runId: string,
  req: EnqueueToolCallRequest,
  requestFingerprint: string,
): Promise<
  | (EnqueueToolCallResponse & { driverInstanceId: string })
  | { sessionId: string; driverInstanceId: string; statusUnderWriteLock?: RunStatus }
> {
  const found = await runRepository.findRunForIntent(tx, runId);
  const run = found?.run;
  if (!run) throw new UserFacingError("run.not_found", `no run ${runId}`);
  if (req.toolCallId) {
    const existing = await effectRows.findByClientToolCall(tx, runId, req.toolCallId);
    if (existing) return await replayEnqueue(tx, existing, req, requestFingerprint, run.driverInstanceId);
  }
  if (run.status !== "active")
    throw new UserFacingError(
      "run.not_active",
      `run ${runId} is ${run.status}; no tool call was queued; create a new run (POST /v1/runs) to continue`,
      { runStatus: run.status },
    );
  return {
    sessionId: run.sessionId,
    driverInstanceId: run.driverInstanceId,
    ...(found.statusUnderWriteLock === undefined ? {} : { statusUnderWriteLock: found.statusUnderWriteLock }),
  };
}

/** Refuses a delete while any of `effects` holds a fence (docs/DESIGN.md §3 rule 9). @throws UserFacingError `effect.fence_retained`. */
async function refuseIfFenced(tx: StoreTx, by: Parameters<typeof effectRows.listFenced>[1], what: string): Promise<void> {
  const fenced = await effectRows.listFenced(tx, by);
  if (fenced.length > 0) {
    throw new UserFacingError(
      "effect.fence_retained",
      `${what} has ${fenced.length} executing or unknown effects; they must be resolved first: npm run effects -- show <effectId> for each of details.effectIds, then reconcile or resolve it (docs/operating.md, "When an effect is unknown")`,
      {
        effectIds: fenced.map((e) => e.id),
      },
    );
  }
}

/**
 * The run API: create a run leased to a Driver instance, enqueue `mcp.execute` tool calls
 * (intent and command in one transaction, see {@link recordIntent}), read a run, and delete runs,
 * sessions and Driver instances unless a fence is retained (rule 9).
 */
export class RunService {
  /**
   * @param repeatGuard per MCP server id, the repeat guard's window (ms; see {@link guardRepeat}); empty: off for every server.
   * @param repeatMetrics the refusal counter (`mosoo_tool_call_repeat_refused_total`).
   */
  constructor(
    private readonly ctx: RuntimeContext,
    /** The reconciliation records of an effect, for the run view (the reconciliation module's, wired by the composition root). */
    private readonly reconciliationRecords: ReconciliationRecordsPort,
    private readonly repeatGuard: RepeatGuardWindows = new Map(),
    private readonly repeatMetrics?: RepeatGuardMetrics,
  ) {}

  /**
   * Creates a run (and a session owned by `caller.keyName` when `sessionId` is absent) leased to
   * `driverInstanceId`. A caller restricted to some Drivers joins only a session it created: any other
   * (another key's, or one created before owners were recorded) answers as a missing one.
   * @throws UserFacingError `driver.not_found`, `driver.finalized`, `session.not_found` (missing or not
   *   reachable by `caller`, the same answer), `run.driver_busy`.
   */
  async createRun(req: CreateRunRequest, caller: RunCaller = UNRESTRICTED_CALLER): Promise<CreateRunResponse> {
    const now = this.ctx.clock.nowMs();
    const runId = newUlid(now);
    const sessionId = req.sessionId ?? newUlid(now);
    await this.ctx.store.transaction(async (tx) => {
      const driver = await driverInstanceTables().findById(tx, req.driverInstanceId);
      if (!driver) throw new UserFacingError("driver.not_found", `no Driver instance ${req.driverInstanceId}`);
      if (driver.status === "finalized" || driver.status === "finalizing") {
        throw new UserFacingError("driver.finalized", `Driver instance ${driver.id} was finalized`);
      }
      if (req.sessionId) {
        const session = await runRepository.findSession(tx, req.sessionId);
        if (!session || !reachesSession(caller, session.createdByKey)) throw sessionNotFound(req.sessionId);
      } else {
        await runRepository.insertSession(tx, sessionId, now, caller.keyName);
      }
      const active = await runRepository.findActiveRunOfDriver(tx, driver.id);
      if (active)
        throw new UserFacingError(
          "run.driver_busy",
          `Driver instance ${driver.id} already holds active run ${active.id}; queue tool calls on that run, or delete it (DELETE /v1/runs/${active.id}, scope runs:delete) before creating another`,
          {
            runId: active.id,
          },
        );
      await runRepository.insertRun(tx, {
        id: runId,
        sessionId,
        driverInstanceId: driver.id,
        status: "active",
        createdAtMs: now,
        updatedAtMs: now,
      });
      await runRepository.appendEvent(tx, runId, "run.created", { driverInstanceId: driver.id, sessionId }, now);
    });
    this.ctx.logger.info({ runId, sessionId, driverInstanceId: req.driverInstanceId }, "run.created");
    return { runId, sessionId };
  }

  /**
   * Enqueues one `mcp.execute` on an active run: the command row and the effect's intent (with
   * its idempotency key and request fingerprint) commit together or not at all.
   * A retry with the same `toolCallId` returns the first enqueue (`replayed: true`) or is refused.
   * @throws UserFacingError `run.not_found`, `run.not_active` (nothing queued), `request.invalid` (arguments
   *   over {@link MAX_ARGUMENTS_BYTES} or not canonicalizable, e.g. a non-finite number), `tool_call.conflict`.
   */
  async enqueueToolCall(runId: string, req: EnqueueToolCallRequest): Promise<EnqueueToolCallResponse> {
    const argumentsJson = JSON.stringify(req.arguments);
    if (Buffer.byteLength(argumentsJson) > MAX_ARGUMENTS_BYTES) {
      throw new UserFacingError("request.invalid", `arguments exceed ${MAX_ARGUMENTS_BYTES} bytes`);
    }
    let requestFingerprint: string;
    try {
      requestFingerprint = fingerprintArguments(req.arguments);
    } catch (err) {
      // RFC 8785 has no form for non-finite numbers (1e400 parses as Infinity): refuse, never store a lossy copy.
      throw new UserFacingError(
        "request.invalid",
        `arguments must be plain JSON with finite numbers (${err instanceof Error ? err.message : String(err)})`,
      );
    }
    const now = this.ctx.clock.nowMs();
    const res = await this.enqueueIn(runId, req, argumentsJson, requestFingerprint, now).catch((err: unknown) => {
      if (err instanceof UserFacingError && err.code === "tool_call.repeat_refused") {
        const d = err.details as { effectId?: string; status?: string; toolCallId?: string };
        this.repeatMetrics?.refused.inc({ server: req.serverId, tool: req.toolName, earlier_status: String(d.status) });
        this.ctx.logger.warn(
          {
            runId,
            serverId: req.serverId,
            toolName: req.toolName,
            earlierEffectId: d.effectId,
            earlierStatus: d.status,
            earlierToolCallId: d.toolCallId,
          },
          "tool_call.repeat_refused",
        );
      }
      throw err;
    });
    const { driverInstanceId, ...answer } = res;
    this.ctx.logger.info(
      { runId, commandId: answer.commandId, effectId: answer.effectId, driverInstanceId, seq: answer.seq, replayed: answer.replayed },
      answer.replayed ? "effect.intent_replayed" : "effect.intent_recorded",
    );
    // Idempotency keys only at debug: a key lets its holder ask a provider about a write.
    this.ctx.logger.debug({ effectId: answer.effectId, idempotencyKey: answer.idempotencyKey }, "effect.intent_key");
    if (!answer.replayed) this.ctx.notifier.notifyCommitted(driverInstanceId);
    return answer;
  }

  /** The enqueue's one transaction (see {@link enqueueToolCall}). */
  private async enqueueIn(
    runId: string,
    req: EnqueueToolCallRequest,
    argumentsJson: string,
    requestFingerprint: string,
    now: number,
  ): Promise<EnqueueToolCallResponse & { driverInstanceId: string }> {
    return this.ctx.store.transaction(async (tx): Promise<EnqueueToolCallResponse & { driverInstanceId: string }> => {
      const plan = planIntent({ ...req, clientToolCallId: req.toolCallId ?? null, argumentsJson, nowMs: now });
      // SQLite without a client tool-call id (nothing to replay): the run's read rides on the command's INSERT,
      // which writes only for an active run (`insertOfActiveRun`; a refusal below rolls it back with the rest);
      // otherwise, and on PostgreSQL, a plain read.
      const numbered = req.toolCallId ? undefined : await commandTables().insertOfActiveRun(tx, runId, plan.command);
      const checked = numbered
        ? { sessionId: numbered.sessionId, driverInstanceId: numbered.driverInstanceId, statusUnderWriteLock: "active" as const }
        : await checkRunForIntent(tx, runId, req, requestFingerprint);
      if ("replayed" in checked) return checked;
      const run = checked;
      const repeatOfEffectId = await guardRepeat(
        tx,
        {
          sessionId: run.sessionId,
          serverId: req.serverId,
          toolName: req.toolName,
          requestFingerprint,
          repeatOfEffectId: req.repeatOfEffectId,
          nowMs: now,
        },
        this.repeatGuard.get(req.serverId),
      );
      const recorded = await recordIntent(tx, {
        sessionId: run.sessionId,
        ...(repeatOfEffectId ? { repeatOfEffectId } : {}),
        runId,
        driverInstanceId: run.driverInstanceId,
        serverId: req.serverId,
        toolName: req.toolName,
        clientToolCallId: req.toolCallId ?? null,
        requestId: req.requestId,
        argumentsJson,
        requestFingerprint,
        ...(run.statusUnderWriteLock === undefined ? {} : { runStatusUnderWriteLock: run.statusUnderWriteLock }),
        plan,
        ...(numbered ? { commandWritten: { seq: numbered.seq, driverStatus: numbered.driverStatus } } : {}),
        nowMs: now,
      });
      // The statuses recordIntent's writes saw under the rows' locks (the Driver's for the `seq`, the run's for
      // the event): a Driver being repaired (its run is about to fail), or a finalization repair that committed
      // meanwhile (PostgreSQL writes at READ COMMITTED), queues nothing (rolled back), never a command on a failed run.
      const { seen, ...intent } = recorded;
      if (seen.driverStatus === "finalizing" || seen.driverStatus === "finalized")
        throw new UserFacingError(
          "run.not_active",
          `run ${runId} is ending: its Driver instance is ${seen.driverStatus}; no tool call was queued`,
          {
            driverStatus: seen.driverStatus,
          },
        );
      if (seen.runStatus !== "active")
        throw new UserFacingError("run.not_active", `run ${runId} ended while the tool call was being queued; no tool call was queued`, {
          runStatus: seen.runStatus,
        });
      // the Driver's long-poll wakes when this commits, on whichever API instance holds it (see `PgCommandWakeups` in pg-command-wakeups.ts)
      await this.ctx.notifier.notifyInTransaction(tx, run.driverInstanceId);
      return { ...intent, replayed: false, driverInstanceId: run.driverInstanceId };
    });
  }

  /**
   * What became of tool call `toolCallId` of run `runId` (the agent's, or the generated one the turn's
   * account lists): command and effect status, the stored result or the command's error.
   * @throws UserFacingError `run.not_found`, `tool_call.not_found`.
   */
  async getToolCall(runId: string, toolCallId: string): Promise<ToolCallView> {
    return this.ctx.store.read(async (tx) => {
      if (!(await runRepository.findRun(tx, runId))) throw new UserFacingError("run.not_found", `no run ${runId}`);
      const e = await effectRows.findByRunToolCall(tx, runId, toolCallId);
      if (!e) throw new UserFacingError("tool_call.not_found", `run ${runId} has no tool call ${toolCallId}`);
      const cmd = await commandTables().findById(tx, e.commandId);
      const compensated =
        e.status === "succeeded" &&
        (await effectRows.listByRun(tx, runId)).some((c) => c.compensatesEffectId === e.id && c.status === "succeeded");
      const commandError = parseJsonColumn(cmd?.errorJson ?? null) as { code?: unknown } | null;
      return {
        runId,
        toolCallId: e.toolCallId,
        serverId: e.serverId,
        toolName: e.toolName,
        commandId: e.commandId,
        commandStatus: cmd?.status ?? "queued",
        effectId: e.id,
        effectStatus: e.status,
        resolution: e.resolution,
        status:
          cmd && !isTerminalCommandStatus(cmd.status) && (e.status === "intent" || e.status === "executing")
            ? "in_flight"
            : turnToolCallStatus(toolCallFacts(e, cmd, compensated)),
        result: parseJsonColumn(e.resultJson),
        error: commandError,
        repeatOfEffectId: e.repeatOfEffectId,
        createdAtMs: e.createdAtMs,
        updatedAtMs: e.updatedAtMs,
      };
    });
  }

  /** The run with its commands, effects (with attempts) and events. @throws UserFacingError `run.not_found`. */
  async getRunView(runId: string): Promise<RunView> {
    return this.ctx.store.read(async (tx) => {
      const run = await runRepository.findRun(tx, runId);
      if (!run) throw new UserFacingError("run.not_found", `no run ${runId}`);
      return toRunView(tx, run, this.reconciliationRecords);
    });
  }

  /** Events of a run with `seq > afterSeq`, in order (the replayable stream). @throws UserFacingError `run.not_found`. */
  async listEvents(runId: string, afterSeq: number) {
    const events = await this.ctx.store.read(async (tx) => {
      if (!(await runRepository.findRun(tx, runId))) throw new UserFacingError("run.not_found", `no run ${runId}`);
      return runRepository.listEvents(tx, runId, afterSeq);
    });
    return events.map((e) => ({
      seq: e.seq,
      id: e.id,
      type: e.type,
      terminal: e.terminal,
      payload: JSON.parse(e.payloadJson) as unknown,
      createdAtMs: e.createdAtMs,
    }));
  }

  /** The Driver instance of run `runId` (empty when there is no such run); a read, for the HTTP layer's key restriction. */
  async driversOfRun(runId: string): Promise<string[]> {
    const run = await this.ctx.store.read((tx) => runRepository.findRun(tx, runId));
    return run ? [run.driverInstanceId] : [];
  }

  /** Deletes a run with its commands, effects and events. @throws UserFacingError `run.not_found`, `effect.fence_retained`. */
  async deleteRun(runId: string): Promise<void> {
    await this.ctx.store.transaction(async (tx) => {
      if (!(await runRepository.findRun(tx, runId))) throw new UserFacingError("run.not_found", `no run ${runId}`);
      await refuseIfFenced(tx, { runId }, `run ${runId}`);
      await runRepository.deleteRun(tx, runId);
    });
    this.ctx.logger.info({ runId }, "run.deleted");
  }

  /**
   * Deletes a session and all its runs. A caller restricted to some Drivers deletes only a session it
   * created whose runs are all on its Drivers; any other answers as a missing one.
   * @throws UserFacingError `session.not_found` (missing or not reachable by `caller`, the same answer), `effect.fence_retained`.
   */
  async deleteSession(sessionId: string, caller: RunCaller = UNRESTRICTED_CALLER): Promise<void> {
    await this.ctx.store.transaction(async (tx) => {
      const session = await runRepository.findSession(tx, sessionId);
      if (!session || !reachesSession(caller, session.createdByKey)) throw sessionNotFound(sessionId);
      const runs = await runRepository.listRunsOfSession(tx, sessionId);
      if (!runs.every((r) => reachesRun(caller, r.driverInstanceId))) throw sessionNotFound(sessionId);
      const runIds = runs.map((r) => r.id);
      await refuseIfFenced(tx, { runIds }, `session ${sessionId}`);
      await runRepository.deleteSession(tx, sessionId);
    });
    this.ctx.logger.info({ sessionId }, "session.deleted");
  }

  /**
   * Purges a finalized Driver instance with its runs, commands and effects (expiry cleanup).
   * @throws UserFacingError `driver.not_found`, `driver.not_finalized`, `effect.fence_retained`.
   */
  async purgeDriver(driverInstanceId: string): Promise<void> {
    await this.ctx.store.transaction(async (tx) => {
      const driver = await driverInstanceTables().findById(tx, driverInstanceId);
      if (!driver) throw new UserFacingError("driver.not_found", `no Driver instance ${driverInstanceId}`);
      await refuseIfFenced(tx, { driverInstanceId }, `Driver instance ${driverInstanceId}`);
      if (driver.status !== "finalized")
        throw new UserFacingError("driver.not_finalized", `Driver instance ${driverInstanceId} is ${driver.status}; finalize it first`);
      await driverInstanceTables().delete(tx, driverInstanceId);
    });
    this.ctx.logger.info({ driverInstanceId }, "driver.purged");
  }
}
