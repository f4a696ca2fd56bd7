// The per-Driver-instance command queue: long-poll delivery, redelivery on every new connection, compare-and-set status updates.
import {
  McpExecuteCommandSchema,
  TraceContextSchema,
  type TraceContext,
  effectNotExecutedError,
  effectUnknownError,
  type CommandUpdateRequest,
  type CommandUpdateResponse,
  type DriverCommandEnvelope,
  type RunError,
} from "@mosoo/contracts";
import { decideCommandTransition, isTerminalCommandStatus } from "../../ledger/domain/command-lifecycle.machine.js";
import { UserFacingError } from "../../../kernel/user-facing-error.js";
import { commandRepository } from "../infrastructure/command.repository.js";
import { commandContextRepository } from "../infrastructure/command-context.repository.js";
import { driverInstanceRepository, type DriverInstanceRow } from "../infrastructure/driver-instance.repository.js";
import { runTables } from "../../ledger/application/owned-tables.port.js";
import { effectRows } from "../../ledger/application/effect-rows.service.js";
import { assertCurrentConnection } from "../../ledger/application/connection-fence.policy.js";
import { fenceExecutingEffect } from "../../ledger/application/effect-ledger.service.js";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";

/**
 * The details kept from a Driver's error when the ledger answers `external_effect.unknown` for it:
 * the Driver's own details (without its effect ids: the ledger names the effect) when it reported
 * `external_effect.unknown` too, else only `{reportedError: <its code>}`.
 */
function unknownErrorDetails(reported: RunError): Record<string, unknown> {
  if (reported.code !== "external_effect.unknown") return { reportedError: reported.code };
  const { effectId: _effectId, effectIds: _effectIds, ...rest } = reported.details;
  return rest;
}

/** {@link CommandQueueService} internal: a delivery whose compare-and-set lost (the command changed after it was read). */
const DELIVERY_LOST = Symbol("delivery lost");

/**
 * The envelope's `traceContext` from a command's stored columns: absent when the enqueue was not
 * traced, or when the stored value does not pass `TraceContextSchema` (a trace is never a reason
 * to hold a command back; the CHECKs make that rare).
 */
function storedTraceContext(traceParent: string | null, traceState: string | null): { traceContext?: TraceContext } {
  if (traceParent === null) return {};
  const parsed = TraceContextSchema.safeParse({ traceparent: traceParent, ...(traceState !== null ? { tracestate: traceState } : {}) });
  return parsed.success ? { traceContext: parsed.data } : {};
}

/**
 * The per-instance command queue: delivery (long-poll, redelivery on every new connection:
 * docs/DESIGN.md §3 rule 11) and status updates, each a compare-and-set with a typed outcome.
 */
export class CommandQueueService {
  constructor(private readonly ctx: RuntimeContext) {}

  /**
   * The lowest-seq command of the instance that has no terminal receipt and was not yet delivered
   * on `connectionId`, waiting up to `waitMs` (ms) for one; `null` when none came, when `signal`
   * (the HTTP request's) aborts, or when the API is stopping. The wait adds one listener to each
   * signal and removes it when the poll ends (no `AbortSignal.any`: on Node 20 it leaked ~150 bytes
   * per poll).
   * @throws UserFacingError `driver.connection_superseded`.
   */
  async nextCommand(
    instance: DriverInstanceRow,
    connectionId: string,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<DriverCommandEnvelope | null> {
    const deadline = this.ctx.clock.nowMs() + waitMs;
    const shutdown = this.ctx.shutdown.signal;
    for (;;) {
      // The wait listens BEFORE the store is read: a command queued (and its wake-up sent, possibly
      // by another API instance) between this read and the wait is not waited out. `stop` ends the
      // wait (and removes its listeners) when it is not needed.
      const stop = new AbortController();
      const waitMs = Math.max(0, deadline - this.ctx.clock.nowMs());
      const woken = this.ctx.notifier.wait(instance.id, waitMs, signal ? [stop.signal, signal, shutdown] : [stop.signal, shutdown]);
      let envelope: DriverCommandEnvelope | null | typeof DELIVERY_LOST;
      try {
        envelope = await this.tryDeliver(instance.id, connectionId);
      } catch (err) {
        stop.abort();
        throw err;
      }
      if (envelope === DELIVERY_LOST) {
        stop.abort();
        continue; // the command changed under the read: read again (its new state decides)
      }
      const remaining = deadline - this.ctx.clock.nowMs();
      if (envelope || remaining <= 0 || shutdown.aborted || signal?.aborted) {
        stop.abort();
        return envelope;
      }
      await woken;
      // A request that ended meanwhile (the Driver went away) is not handed a command: nobody would
      // read the answer, and the command would count as delivered on this connection.
      if (shutdown.aborted || signal?.aborted) return null;
    }
  }

  /**
   * One delivery attempt: the lowest-seq undelivered command, marked delivered on `connectionId` by a
   * compare-and-set on the status just read. `null`: nothing to deliver; {@link DELIVERY_LOST}: the command
   * changed between the read and the compare-and-set (e.g. settled by a repair on another API instance), so it
   * is not handed out and the caller reads again. `command.delivered` is logged only once the delivery
   * committed (a rolled-back or retried unit of work logs nothing).
   */
  private async tryDeliver(driverInstanceId: string, connectionId: string): Promise<DriverCommandEnvelope | null | typeof DELIVERY_LOST> {
    const now = this.ctx.clock.nowMs();
    const envelope = await this.ctx.store.transaction(async (tx): Promise<DriverCommandEnvelope | null | typeof DELIVERY_LOST> => {
      assertCurrentConnection(await driverInstanceRepository.findById(tx, driverInstanceId), connectionId);
      const cmd = await commandRepository.findUndeliveredOnConnection(tx, driverInstanceId, connectionId);
      if (!cmd) return null;
      if (!(await commandRepository.markDelivered(tx, cmd.id, cmd.status, connectionId, now))) return DELIVERY_LOST;
      return {
        commandId: cmd.id,
        seq: cmd.seq,
        runId: cmd.runId,
        type: cmd.type,
        status: cmd.status,
        redelivery: cmd.deliveryCount > 0,
        payload: McpExecuteCommandSchema.parse(JSON.parse(cmd.payloadJson)),
        ...storedTraceContext(cmd.traceParent, cmd.traceState),
      };
    });
    if (envelope !== null && envelope !== DELIVERY_LOST) {
      const { commandId, seq, status, redelivery } = envelope;
      this.ctx.logger.info({ driverInstanceId, commandId, seq, status, redelivery }, "command.delivered");
    }
    return envelope;
  }

  /**
   * Applies a Driver's status update as a compare-and-set. A `completed` update is accepted only
   * once the command's effect `succeeded` (the result is stored before anything terminal)
   * and stores the ledger's result, not the Driver's copy. A `failed` update on an effect still
   * `executing` fences that effect as `unknown` in the same transaction, so no terminal command
   * leaves an `executing` effect behind; on an effect already `unknown` the stored error is always
   * the ledger's `external_effect.unknown` for that effect (`retryable: false`, `details.effectIds`,
   * see `settleCommandFromEffect` in command-settlement.service.ts; the Driver's own details are kept, its effect ids are not), and on a
   * `not_executed` one it is `external_effect.not_executed`, whatever the Driver sent.
   * @throws UserFacingError `driver.connection_superseded`, `command.not_found` (also for another instance's command).
   */
  async updateCommand(instance: DriverInstanceRow, commandId: string, req: CommandUpdateRequest): Promise<CommandUpdateResponse> {
    const now = this.ctx.clock.nowMs();
    let effectId: string | undefined;
    const res = await this.ctx.store.transaction(async (tx): Promise<CommandUpdateResponse> => {
      if (req.status === "completed") {
        // The usual case first, as one compare-and-set (see `completeFromSucceededEffect`); anything else
        // (a refusal, a duplicate, an effect not yet succeeded, a command without an effect) is judged on the rows.
        const done = await commandRepository.completeFromSucceededEffect(tx, {
          commandId,
          driverInstanceId: instance.id,
          connectionId: req.connectionId,
          nowMs: now,
        });
        if (done) {
          effectId = done.effectId;
          await runTables().appendEvent(
            tx,
            done.runId,
            "tool_call.completed",
            { commandId, effectId: done.effectId, result: JSON.parse(done.resultJson) as unknown },
            now,
          );
          return { outcome: "applied", status: "completed" };
        }
      }
      const { driver, command: cmd, effect } = await commandContextRepository.read(tx, instance.id, commandId);
      assertCurrentConnection(driver, req.connectionId);
      if (!cmd) throw new UserFacingError("command.not_found", `no command ${commandId} for this Driver instance`);
      const decision = decideCommandTransition(cmd.status, req.status);
      if (decision.outcome !== "applied")
        return { outcome: decision.outcome, status: cmd.status, ...(decision.reason ? { reason: decision.reason } : {}) };
      effectId = effect?.id;
      let resultJson: string | undefined;
      let errorJson: string | undefined;
      if (req.status === "completed") {
        if (effect && effect.status !== "succeeded") {
          return { outcome: "rejected", status: cmd.status, reason: `effect ${effect.id} is ${effect.status}; complete the effect first` };
        }
        resultJson = effect?.resultJson ?? JSON.stringify(req.result);
      } else if (req.status === "failed") {
        if (effect?.status === "succeeded") {
          return {
            outcome: "rejected",
            status: cmd.status,
            reason: `effect ${effect.id} already succeeded; send completed with the stored result`,
          };
        }
        let error = req.error;
        if (effect?.status === "executing") {
          await fenceExecutingEffect(tx, effect, "command_failed_while_executing", now);
          error = effectUnknownError(effect.id, { reportedError: req.error.code });
        } else if (effect?.status === "unknown") {
          // the ledger, not the Driver, says what a fenced effect means (see `settleCommandFromEffect` in command-settlement.service.ts):
          // external_effect.unknown naming THIS effect, never retryable, whatever the Driver sent
          error = effectUnknownError(effect.id, unknownErrorDetails(req.error));
        } else if (effect?.status === "not_executed" && error.code !== "external_effect.not_executed") {
          error = effectNotExecutedError(effect.id, { reportedError: req.error.code });
        }
        errorJson = JSON.stringify(error);
      }
      const terminal = isTerminalCommandStatus(req.status);
      const changed = await commandRepository.transition(tx, cmd.id, cmd.status, req.status, now, {
        terminal,
        ...(resultJson !== undefined ? { resultJson } : {}),
        ...(errorJson !== undefined ? { errorJson } : {}),
      });
      if (!changed) return { outcome: "rejected", status: cmd.status, reason: "command changed concurrently" };
      if (terminal) {
        await runTables().appendEvent(
          tx,
          cmd.runId,
          req.status === "completed" ? "tool_call.completed" : "tool_call.failed",
          {
            commandId: cmd.id,
            effectId: effect?.id ?? null,
            ...(errorJson ? { error: JSON.parse(errorJson) as unknown } : { result: JSON.parse(resultJson ?? "null") as unknown }),
          },
          now,
        );
      }
      return { outcome: "applied", status: req.status };
    });
    this.ctx.logger.info({ driverInstanceId: instance.id, commandId, effectId, requested: req.status, ...res }, "command.update");
    return res;
  }
}
