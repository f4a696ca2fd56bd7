// The Driver process's main loop: identity, connect, heartbeats, and the long-poll of commands handled one at a time.
import type { ConnectDriverResponse, DriverCommandEnvelope } from "@mosoo/contracts";
import type { Logger } from "pino";
import type { DriverApi } from "./api-client.js";
import { ApiRequestError, ApiUnavailableError, isConnectionLostError, isInstanceFinalizedError } from "./api-errors.js";
import { normalizeApiUrl, type DriverState } from "./driver-config.contract.js";
import { DriverConfigError } from "./driver-config.loader.js";
import type { DriverStateRepository } from "./driver-state.repository.js";
import { handlePolledCommand, type PollRound } from "./driver-command.service.js";
import type { McpToolCaller } from "./mcp-connections.js";
import type { ResultOutboxRepository } from "./result-outbox.repository.js";
import { drainResultOutbox } from "./result-report.service.js";

/** Why {@link DriverLoop.run} returned, and the process exit code that goes with it. */
export type DriverStopReason =
  /** A graceful stop (SIGTERM/SIGINT or {@link DriverLoop.stop}); exit code 0. */
  | { kind: "stopped"; signal: string; finalized: boolean; exitCode: 0 }
  /** 401 or 409 `driver.connection_superseded`: another process owns the instance or the token is gone; exit code 1. */
  | { kind: "connection_lost"; status: number; code: string; exitCode: 1 }
  /** Startup failed (API unreachable after retries, register refused, …); exit code 1. */
  | { kind: "startup_failed"; code: string; message: string; exitCode: 1 };

/** Dependencies and settings of a {@link DriverLoop}. */
export interface DriverLoopOptions {
  /**
   * Builds the API client for a token (`register` needs none). Usually
   * `(token) => token ? client.withDriverToken(token) : client`.
   */
  apiFor: (driverToken: string | undefined) => DriverApi;
  /** Where the Driver identity is kept. */
  stateRepository: DriverStateRepository;
  /** Where provider results are held until the API answered them (next to the state file). */
  outbox: ResultOutboxRepository;
  /** How long one provider result is reported to an API that cannot take it, ms (default `DEFAULT_RESULT_REPORT_BUDGET_MS`). */
  resultReportBudgetMs?: number | undefined;
  /** The MCP side; `closeAll` (if present) runs when the loop ends. */
  mcp: McpToolCaller & { closeAll?: () => Promise<void> };
  /** Base logger (pino). */
  logger: Logger;
  /**
   * The API base URLs (instances of one deployment). A new registration stores
   * the one it registered with ({@link currentApiUrl}) in the state file; a state file is accepted when
   * its URL is one of them.
   */
  apiUrls: readonly string[];
  /**
   * The API base URL requests go to now (the client's fail-over pool: sticky until failure, so right
   * after `register` answered it is the URL that answered; nothing else is in flight then). Default:
   * the first of {@link apiUrls}.
   */
  currentApiUrl?: (() => string) | undefined;
  /** Name sent on `register`. */
  name: string;
  /** Per tool call timeout, ms. */
  toolTimeoutMs: number;
  /** Long-poll wait of `nextCommand`, ms (0–30 000). */
  pollWaitMs: number;
  /** On a graceful stop, `POST finalize` and delete the state file. Default false. */
  finalizeOnExit?: boolean | undefined;
  /** Backoff after a failed poll or reconnect, ms: first and maximum delay. Default 500 / 10 000. */
  backoffMs?: { min: number; max: number } | undefined;
}

/**
 * The Driver process's main loop: identity (state file or `register`), `connect`, heartbeats every
 * `heartbeatTtlMs / 3`, and the long-poll of commands, each handled to its terminal update one at
 * a time, in order. A non-fatal API failure while handling a command triggers a reconnect, so the
 * API redelivers every command without a terminal receipt (see `CommandQueueService` in command-queue.service.ts).
 *
 * Provider results: each is written to the outbox before it is sent and reported until the API
 * answered it (see `reportProviderResult`). At start, before it connects and pulls commands, the loop
 * reports what the outbox holds (`drainResultOutbox`), with the identity of the state file and each
 * attempt's own connection: a result the provider returned to a process that then died reaches the
 * ledger as the completion of its attempt (or as late evidence if the effect was fenced meanwhile),
 * so the command, redelivered, finds its effect `succeeded`.
 *
 * Several API URLs: the client moves to the next URL when one is unreachable and goes on with the
 * same instance, token and connection (the database is shared), so heartbeats,
 * a re-issued long-poll and the reports of the command in hand simply land on the next instance.
 * One exception, the long-poll: the API hands a command out once per connection, so a poll whose
 * answer may have been lost (connection reset or timeout, or a 5xx such as 503 `store.commit_unknown`
 * or a gateway's 502/504: the API may have marked a command delivered in an answer that never
 * arrived) is not resent blind. The loop reconnects instead, on
 * the next URL, after its usual backoff (`poll.answer_may_be_lost`), and the API redelivers every
 * command without a terminal receipt (§3 rule 11). That is safe exactly there: between two commands
 * the Driver holds no attempt, so the new connection supersedes nothing in flight. A poll that
 * provably never left (connection refused) is simply re-issued on the next URL, same connection.
 */
export class DriverLoop {
  private readonly stopController = new AbortController();
  private stopSignalName: string | null = null;
  private lost: { status: number; code: string } | null = null;
  private connectionId: string | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private heartbeatIntervalMs = 0;
  private heartbeatGeneration = 0;
  /** `connect` requests of ours in flight (a heartbeat superseded by one of them is not a lost connection). */
  private connectsInFlight = 0;
  private log: Logger;

  constructor(private readonly options: DriverLoopOptions) {
    this.log = options.logger;
  }

  /** The current `connectionId` (`null` before the first connect). */
  get currentConnectionId(): string | null {
    return this.connectionId;
  }

  /**
   * Requests a graceful stop: the long-poll is aborted, no new command is started, the command in
   * hand (if any) runs to its terminal update. Idempotent.
   * @param signal a label for the log (e.g. `SIGTERM`).
   */
  stop(signal = "stop"): void {
    if (this.stopController.signal.aborted) return;
    this.stopSignalName = signal;
    this.log.info({ signal }, "driver.stopping");
    this.stopController.abort(new Error(`stopping on ${signal}`));
  }

  /**
   * Runs until stopped or until the connection is lost.
   * @returns the stop reason with its exit code.
   * @throws DriverConfigError (`config.invalid`) when the state file belongs to another API URL.
   */
  async run(): Promise<DriverStopReason> {
    let state: DriverState;
    let api: DriverApi;
    try {
      state = await this.identity(false);
      api = this.options.apiFor(state.driverToken);
      await drainResultOutbox({ api, outbox: this.options.outbox, logger: this.log, budgetMs: this.options.resultReportBudgetMs });
      try {
        await this.connect(api);
      } catch (error) {
        if (!isInstanceFinalizedError(error)) throw error;
        // The saved instance was finalized (its commands already ended by the repair): start as a new one.
        this.log.warn({ stateFile: this.options.stateRepository.filePath }, "driver.instance_finalized_registering_new");
        state = await this.identity(true);
        api = this.options.apiFor(state.driverToken);
        await this.connect(api);
      }
    } catch (error) {
      await this.options.mcp.closeAll?.();
      if (error instanceof DriverConfigError) throw error;
      if (isConnectionLostError(error)) return this.lostReason((error as ApiRequestError).status, (error as ApiRequestError).code);
      const code = (error as { code?: unknown }).code;
      const reason = {
        kind: "startup_failed",
        code: typeof code === "string" ? code : "driver.startup_failed",
        message: (error as Error).message,
        exitCode: 1,
      } as const;
      this.log.error({ errorCode: reason.code, err: reason.message }, "driver.startup_failed");
      return reason;
    }

    await this.reportFencedEffects(api);
    await this.pollLoop(api);

    this.clearHeartbeat();
    let finalized = false;
    if (!this.lost && this.options.finalizeOnExit && this.connectionId) finalized = await this.finalize(api);
    await this.options.mcp.closeAll?.();
    if (this.lost) return this.lostReason(this.lost.status, this.lost.code);
    this.log.info({ signal: this.stopSignalName, finalized }, "driver.stopped");
    return { kind: "stopped", signal: this.stopSignalName ?? "stop", finalized, exitCode: 0 };
  }

  private async identity(forceNew: boolean): Promise<DriverState> {
    const { stateRepository, apiUrls, name } = this.options;
    const existing = forceNew ? null : await stateRepository.load();
    if (existing) {
      if (!apiUrls.some((url) => normalizeApiUrl(url) === normalizeApiUrl(existing.apiUrl))) {
        throw new DriverConfigError(
          `state file ${stateRepository.filePath} belongs to ${existing.apiUrl}, not to ${apiUrls.length === 1 ? apiUrls[0] : `any of ${apiUrls.join(", ")}`}; use another --state-file`,
        );
      }
      this.log = this.options.logger.child({ driverInstanceId: existing.driverInstanceId });
      return existing;
    }
    const registered = await this.options.apiFor(undefined).call("register", { body: { name } });
    // the URL that answered `register` (after a fail-over, not the first configured one)
    const apiUrl = normalizeApiUrl(this.options.currentApiUrl?.() ?? (apiUrls[0] as string));
    const state: DriverState = { apiUrl, driverInstanceId: registered.driverInstanceId, driverToken: registered.driverToken };
    await stateRepository.save(state);
    this.log = this.options.logger.child({ driverInstanceId: state.driverInstanceId });
    this.log.info({ name, stateFile: stateRepository.filePath }, "driver.registered");
    return state;
  }

  /**
   * At startup, asks the API for its view of this instance (`GET /v1/drivers/self`) and, when some of
   * its effects are `executing` or `unknown` (fenced: never sent again; settled only by reconciliation,
   * late evidence or an operator, see `decideLateEvidence` in effect-lifecycle.machine.ts), logs `driver.fenced_effects` with
   * their counts, so whoever restarts a crashed Driver sees what it left in doubt. Informational: a
   * failure is logged (`driver.self_unavailable`) and the Driver goes on.
   */
  private async reportFencedEffects(api: DriverApi): Promise<void> {
    try {
      const self = await api.call("self", {});
      if (self.effects.executing + self.effects.unknown > 0)
        this.log.warn(
          { executing: self.effects.executing, unknown: self.effects.unknown, pendingCommandCount: self.pendingCommandCount },
          "driver.fenced_effects",
        );
    } catch (error) {
      this.log.debug({ err: (error as Error).message }, "driver.self_unavailable");
    }
  }

  private async connect(api: DriverApi): Promise<ConnectDriverResponse> {
    let connected: ConnectDriverResponse;
    this.connectsInFlight += 1;
    try {
      connected = await api.call("connect", {});
    } finally {
      this.connectsInFlight -= 1;
    }
    this.connectionId = connected.connectionId;
    this.log.info(
      {
        connectionId: connected.connectionId,
        pendingCommandCount: connected.pendingCommandCount,
        heartbeatTtlMs: connected.heartbeatTtlMs,
      },
      "driver.connected",
    );
    this.scheduleHeartbeat(api, connected.heartbeatTtlMs);
    return connected;
  }

  /**
   * Polls and handles commands, one at a time, until stopped or the connection is lost. A failed round
   * backs off (`backoffMs`, doubling up to its max; reset by a poll that answered) before the next one.
   */
  private async pollLoop(api: DriverApi): Promise<void> {
    const signal = this.stopController.signal;
    const backoff = this.options.backoffMs ?? { min: 500, max: 10_000 };
    let delayMs = backoff.min;
    const round: PollRound = { step: "connect", needsReconnect: false };
    while (!signal.aborted && !this.lost) {
      round.step = "connect";
      try {
        const { command, connectionId } = await this.pollOnce(api, round, signal);
        delayMs = backoff.min;
        if (!command) continue;
        round.step = "command";
        await handlePolledCommand(
          command,
          {
            api,
            mcp: this.options.mcp,
            connectionId,
            logger: this.log,
            toolTimeoutMs: this.options.toolTimeoutMs,
            outbox: this.options.outbox,
            resultReportBudgetMs: this.options.resultReportBudgetMs,
          },
          round,
        );
      } catch (error) {
        if (signal.aborted) break;
        if (isConnectionLostError(error)) {
          this.markLost((error as ApiRequestError).status, (error as ApiRequestError).code);
          break;
        }
        this.logRoundFailure(error, round, delayMs);
        await sleep(delayMs, signal);
        delayMs = Math.min(delayMs * 2, backoff.max);
      }
    }
  }

  /**
   * One long-poll (`nextCommand`, `pollWaitMs`), after a reconnect when the last round asked for one.
   * @returns the command handed out (or `null`) and the connection it was handed out on.
   * @throws the API's error; `round.step` says whether it came from the reconnect or the poll.
   */
  private async pollOnce(
    api: DriverApi,
    round: PollRound,
    signal: AbortSignal,
  ): Promise<{ command: DriverCommandEnvelope | null; connectionId: string }> {
    if (round.needsReconnect) {
      await this.connect(api);
      round.needsReconnect = false;
    }
    const connectionId = this.connectionId as string;
    round.step = "poll";
    // A poll is resent (to the next URL) only when it provably never left, never after a 5xx; see the class doc.
    const { command } = await api.call(
      "nextCommand",
      { query: { connectionId, waitMs: this.options.pollWaitMs } },
      { signal, resendAfter: (failure) => failure instanceof ApiUnavailableError && failure.delivery === "not_sent" },
    );
    return { command, connectionId };
  }

  /**
   * Logs a failed round (not a lost connection) before its backoff of `delayMs`: a poll whose answer
   * may be lost asks for a reconnect (`poll.answer_may_be_lost`, see the class doc); any other failure
   * of the reconnect or the poll is `poll.failed`; a command's failure was logged by `handlePolledCommand`.
   */
  private logRoundFailure(error: unknown, round: PollRound, delayMs: number): void {
    const failure = { errorCode: (error as { code?: unknown }).code, err: (error as Error).message, delayMs };
    if (
      round.step === "poll" &&
      ((error instanceof ApiUnavailableError && error.delivery !== "not_sent") || (error instanceof ApiRequestError && error.status >= 500))
    ) {
      // The API may have marked a command delivered on this connection in an answer we never got
      // (lost with the connection, or behind a 5xx such as 503 `store.commit_unknown` or a gateway's 502/504).
      this.log.warn(
        { connectionId: this.connectionId, apiUrl: error instanceof ApiUnavailableError ? error.apiUrl : null, ...failure },
        "poll.answer_may_be_lost",
      );
      round.needsReconnect = true;
    } else if (round.step !== "command") this.log.warn(failure, "poll.failed");
  }

  private scheduleHeartbeat(api: DriverApi, ttlMs: number): void {
    this.clearHeartbeat();
    const generation = this.heartbeatGeneration;
    this.heartbeatIntervalMs = Math.max(1, Math.floor(ttlMs / 3));
    const current = (): boolean => generation === this.heartbeatGeneration && !this.stopController.signal.aborted;
    const tick = async (): Promise<void> => {
      const connectionId = this.connectionId;
      if (!connectionId || !current()) return;
      try {
        const beat = await api.call("heartbeat", { body: { connectionId } });
        this.heartbeatIntervalMs = Math.max(1, Math.floor(beat.heartbeatTtlMs / 3));
        this.log.debug({ connectionId, heartbeatTtlMs: beat.heartbeatTtlMs }, "heartbeat.sent");
      } catch (error) {
        if (connectionId !== this.connectionId) return; // an older connection of ours, replaced by a reconnect
        // Our own reconnect may have superseded this connection before its answer arrived: not a loss.
        if (isConnectionLostError(error) && this.connectsInFlight === 0) {
          this.markLost((error as ApiRequestError).status, (error as ApiRequestError).code);
          this.stopController.abort(new Error("connection lost"));
          return;
        }
        this.log.warn({ connectionId, errorCode: (error as { code?: unknown }).code, err: (error as Error).message }, "heartbeat.failed");
      }
      if (current()) this.heartbeatTimer = setTimeout(() => void tick(), this.heartbeatIntervalMs);
    };
    this.heartbeatTimer = setTimeout(() => void tick(), this.heartbeatIntervalMs);
  }

  private clearHeartbeat(): void {
    this.heartbeatGeneration += 1; // an in-flight tick of the old schedule will not re-arm
    if (this.heartbeatTimer) clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = null;
  }

  private markLost(status: number, code: string): void {
    if (this.lost) return;
    this.lost = { status, code };
    this.clearHeartbeat();
  }

  private lostReason(status: number, code: string): DriverStopReason {
    this.log.error({ status, errorCode: code, connectionId: this.connectionId }, "driver.connection_lost");
    return { kind: "connection_lost", status, code, exitCode: 1 };
  }

  private async finalize(api: DriverApi): Promise<boolean> {
    try {
      const summary = await api.call("finalize", { body: { connectionId: this.connectionId as string } });
      this.log.info({ connectionId: this.connectionId, ...summary }, "driver.finalized");
      // A result still held in the outbox (its report budget ran out) is reported by the next start with
      // this identity, which the API still accepts for a finalized instance's reports: the state file
      // stays until the outbox is empty (that start then registers a new instance, as after any finalization).
      const held = (await this.options.outbox.list()).pending.length;
      if (held === 0) await this.options.stateRepository.remove();
      else this.log.warn({ held, stateFile: this.options.stateRepository.filePath }, "driver.state_kept_for_held_results");
      return true;
    } catch (error) {
      this.log.error({ errorCode: (error as { code?: unknown }).code, err: (error as Error).message }, "driver.finalize_failed");
      return false;
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
