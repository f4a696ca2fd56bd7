// The fixture provider's behaviour, independent of transport: its issue tools, fault switches and held responses.
import { setTimeout as sleep } from "node:timers/promises";
import { DEFAULT_KEY_PLACEMENT, fingerprintArguments, type KeyPlacement } from "@mosoo/contracts";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { pino, type Logger } from "pino";
import { CLOSE_ISSUE_TOOL, type CloseIssueArgs } from "./close-issue.contract.js";
import {
  CREATE_ISSUE_TOOL,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  PROVIDER_OPERATION_ID_META,
  type CreateIssueArgs,
} from "./create-issue.contract.js";
import { DEFAULT_FIXTURE_FAULTS, FixtureFaultsPatchSchema, type FixtureFaults } from "./fixture-faults.contract.js";
import type { FixtureStats } from "./fixture-stats.contract.js";
import { FixtureTaskStore } from "./fixture-task-store.js";
import type { GetOperationAnswer } from "./get-operation.contract.js";
import { IssueStore, type CommitOutcome } from "./issue-store.repository.js";
import { toolError } from "./tool-result.js";

/** A W3C trace-context `traceparent` (version 00: trace id, parent span id, flags, lowercase hex). */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * What `exitAfterCommit` does right after a new write commits:
 * - `"drop-response"` (in-process use): the call never gets an answer (its promise never settles);
 * - `"kill-process"` (process mode, `main.ts`): `process.kill(process.pid, "SIGKILL")`, an abrupt exit
 *   with no response, no cleanup, no flush.
 */
export type ExitAfterCommitMode = "drop-response" | "kill-process";

/** Options of {@link FixtureProviderService}. */
export interface FixtureProviderServiceOptions {
  /** The durable store; the service takes ownership and closes it in `close()`. */
  store: IssueStore;
  /** When true, a `getOperation` miss durably fences the key (default false). */
  fenceOnLookupMiss?: boolean;
  /** Initial fault switches (validated like `POST /control/faults`); the rest stay off. */
  faults?: Partial<FixtureFaults>;
  /** Default `"drop-response"`. */
  exitAfterCommitMode?: ExitAfterCommitMode;
  /** pino logger; default: silent. */
  logger?: Logger;
  /**
   * Where the write tools read the idempotency key (default `_meta["io.mosoo/idempotency-key"]`).
   * With `{in: "argument", name}` the key is a tool argument; it is removed before the request
   * fingerprint is computed, so the fingerprint covers the caller's own arguments only.
   */
  keyPlacement?: KeyPlacement;
  /** When true, the write tools advertise the zero-code convention in `tools/list` (`_meta["io.mosoo/idempotency"]`). */
  advertiseIdempotency?: boolean;
  /**
   * The write tools' MCP task support (MCP 2025-11-25 "Tasks"): `"optional"` or `"required"` declares
   * `execution.taskSupport` on `createIssue` and `closeIssue` and the `tasks` capability; a
   * task-augmented call answers a task at once and runs the write in the background. Absent (the
   * default): no task support, every call answers its result directly.
   */
  taskSupport?: FixtureTaskSupport;
  /** The `pollInterval` (ms, positive integer) every task suggests; default 100. */
  taskPollIntervalMs?: number;
}

/** The task support a fixture provider can declare on its write tools (see `FixtureProviderServiceOptions.taskSupport`). */
export type FixtureTaskSupport = "optional" | "required";

/**
 * The provider's behaviour, independent of any transport: the `createIssue`, `closeIssue` and
 * `getOperation` tools, the fault switches and the held responses. One instance serves every MCP request.
 */
export class FixtureProviderService {
  readonly fenceOnLookupMiss: boolean;
  readonly keyPlacement: KeyPlacement;
  readonly advertiseIdempotency: boolean;
  /** The write tools' task support, or undefined for none. */
  readonly taskSupport: FixtureTaskSupport | undefined;
  /** The MCP tasks of this provider, shared by every request it serves; live as long as the provider. */
  readonly tasks: FixtureTaskStore;
  private readonly store: IssueStore;
  private readonly exitMode: ExitAfterCommitMode;
  private readonly logger: Logger;
  private currentFaults: FixtureFaults;
  private readonly held = new Set<() => void>();
  private readonly faultListeners = new Set<(faults: FixtureFaults) => void>();
  private readonly shutdown = new AbortController();

  /** @throws ZodError when `options.faults` is invalid. */
  constructor(options: FixtureProviderServiceOptions) {
    this.store = options.store;
    this.fenceOnLookupMiss = options.fenceOnLookupMiss ?? false;
    this.keyPlacement = options.keyPlacement ?? DEFAULT_KEY_PLACEMENT;
    this.advertiseIdempotency = options.advertiseIdempotency ?? false;
    this.exitMode = options.exitAfterCommitMode ?? "drop-response";
    this.logger = options.logger ?? pino({ level: "silent" });
    this.currentFaults = { ...DEFAULT_FIXTURE_FAULTS, ...FixtureFaultsPatchSchema.parse(options.faults ?? {}) };
    this.taskSupport = options.taskSupport;
    this.tasks = new FixtureTaskStore(() => this.currentFaults.expireTasks, options.taskPollIntervalMs ?? 100);
  }

  /**
   * The `createIssue` tool. Reads the key where `keyPlacement` says (default `meta["io.mosoo/idempotency-key"]`), counts the call,
   * applies the faults (read once, on arrival), runs the commit transaction and answers the created
   * (or replayed) issue, or a tool error (`FIXTURE_TOOL_ERROR_CODES`). Never throws for a business refusal.
   * @param args validated arguments.
   * @param meta the request's `_meta` (MCP `extra._meta`).
   */
  async createIssue(input: CreateIssueArgs, meta: Record<string, unknown> | undefined): Promise<CallToolResult> {
    const [args, key] = this.splitKey(input, meta);
    return this.runWrite(
      CREATE_ISSUE_TOOL,
      key,
      (key) => this.store.commitCreateIssue({ idempotencyKey: key, args, requestFingerprint: fingerprintArguments(args) }),
      meta,
    );
  }

  /**
   * The `closeIssue` tool (the compensating action of `createIssue`): the same key handling, faults
   * and replay / conflict / fence rules as {@link createIssue}, keyed by its OWN idempotency key;
   * answers the closure, or a tool error (`issue_not_found`, `issue_already_closed`, …). Never throws
   * for a business refusal.
   */
  async closeIssue(input: CloseIssueArgs, meta: Record<string, unknown> | undefined): Promise<CallToolResult> {
    const [args, key] = this.splitKey(input, meta);
    return this.runWrite(
      CLOSE_ISSUE_TOOL,
      key,
      (key) => this.store.commitCloseIssue({ idempotencyKey: key, args, requestFingerprint: fingerprintArguments(args) }),
      meta,
    );
  }

  /** Reads the key where {@link keyPlacement} says and returns the arguments without it (the fingerprinted ones). */
  private splitKey<A extends Record<string, unknown>>(input: A, meta: Record<string, unknown> | undefined): [A, unknown] {
    if (this.keyPlacement.in === "meta") return [input, meta?.[this.keyPlacement.name]];
    const { [this.keyPlacement.name]: key, ...rest } = input;
    return [rest as A, key];
  }

  /**
   * The write path shared by both write tools: key checks, call count, faults, commit, after-commit
   * faults. Its log lines carry the caller's W3C `_meta.traceparent` when it sent a well-formed one
   * (what a traced provider would continue).
   */
  private async runWrite(
    tool: string,
    key: unknown,
    commit: (key: string) => CommitOutcome<CallToolResult>,
    meta: Record<string, unknown> | undefined,
  ): Promise<CallToolResult> {
    if (key === undefined || key === "") {
      const where = this.keyPlacement.in === "meta" ? `_meta["${this.keyPlacement.name}"]` : `the argument "${this.keyPlacement.name}"`;
      return toolError("idempotency_key_required", `send the idempotency key in ${where}`);
    }
    if (typeof key !== "string" || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      return toolError("idempotency_key_invalid", `the idempotency key must be a string of 1-${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
    }
    if (this.shutdown.signal.aborted) return toolError("provider_unavailable", "the provider is shutting down");
    const faults = { ...this.currentFaults };
    this.store.recordCreateCall(key);
    const traceparent = meta?.["traceparent"];
    const log = this.logger.child({
      idempotencyKey: key,
      tool,
      ...(typeof traceparent === "string" && TRACEPARENT.test(traceparent) ? { traceparent } : {}),
    });
    if (faults.failBeforeCommit) {
      log.info(`${tool} refused by the failBeforeCommit fault`);
      return toolError("provider_unavailable", "the provider is unavailable (failBeforeCommit fault); nothing was written");
    }
    if (faults.delayBeforeCommitMs > 0) {
      log.info({ delayMs: faults.delayBeforeCommitMs }, "delaying the commit");
      try {
        await sleep(faults.delayBeforeCommitMs, undefined, { signal: this.shutdown.signal });
      } catch {
        return toolError("provider_unavailable", "the provider shut down before the commit; nothing was written");
      }
    }
    if (faults.holdBeforeCommit && !this.shutdown.signal.aborted) {
      log.info("holding the call before its commit until release");
      await new Promise<void>((resolve) => this.held.add(resolve));
      if (this.shutdown.signal.aborted)
        return toolError("provider_unavailable", "the provider shut down before the commit; nothing was written");
      log.info("released: committing now");
    }
    const outcome = commit(key);
    switch (outcome.kind) {
      case "conflict":
        log.warn("idempotency conflict");
        return toolError(
          "idempotency_conflict",
          `key ${key} was already used with other arguments or another tool (recorded fingerprint ${outcome.recordedFingerprint}); nothing was written`,
        );
      case "fenced":
        log.info("commit refused: key fenced");
        return toolError(
          "idempotency_key_fenced",
          `key ${key} was fenced at ${outcome.fencedAt} and can never commit; nothing was written`,
        );
      case "issue_not_found":
        return toolError("issue_not_found", "no such issue; nothing was written");
      case "issue_already_closed":
        return toolError(
          "issue_already_closed",
          `the issue was already closed at ${outcome.closedAt} under another key; nothing was written`,
        );
      case "replayed":
        log.info("replayed the recorded write");
        return outcome.result;
      case "committed":
        log.info({ operationId: outcome.result._meta?.[PROVIDER_OPERATION_ID_META] }, `${tool} committed`);
        return this.afterCommit(faults, outcome.result);
    }
  }

  /**
   * The `getOperation` tool: the lookup transaction (see `IssueStore.lookupOperation`; the `forgetKeys`
   * fault read at each call), answered as
   * `structuredContent` and as the same JSON in a text block.
   */
  getOperation(idempotencyKey: string): CallToolResult {
    const answer: GetOperationAnswer = this.store.lookupOperation(idempotencyKey, {
      fenceOnMiss: this.fenceOnLookupMiss,
      forgetKeys: this.currentFaults.forgetKeys,
    });
    this.logger.info({ idempotencyKey, found: answer.found }, "getOperation");
    return { content: [{ type: "text", text: JSON.stringify(answer) }], structuredContent: answer };
  }

  /** What the store really holds for the key, without side effects (see `IssueStore.peek`): ground truth for a conformance kit. */
  peek(idempotencyKey: string): ReturnType<IssueStore["peek"]> {
    return this.store.peek(idempotencyKey);
  }

  /** The current fault switches (a copy). */
  faults(): FixtureFaults {
    return { ...this.currentFaults };
  }

  /**
   * Replaces the switches present in `patch`; the others keep their value. Calls already in flight keep the faults they started with.
   * @returns the switches now in force.
   * @throws ZodError when `patch` is not a valid `FixtureFaultsPatch` (nothing changes).
   */
  setFaults(patch: unknown): FixtureFaults {
    const parsed = FixtureFaultsPatchSchema.parse(patch);
    this.currentFaults = { ...this.currentFaults, ...parsed };
    this.logger.info({ faults: this.currentFaults }, "faults changed");
    for (const listener of [...this.faultListeners]) listener(this.faults());
    return this.faults();
  }

  /**
   * Calls `listener` with the switches now in force after every {@link setFaults} (synchronously,
   * before `setFaults` returns); the MCP servers use it to apply `withdrawTaskSupport` to an open session.
   * @returns a function that removes the listener.
   */
  onFaultsChanged(listener: (faults: FixtureFaults) => void): () => void {
    this.faultListeners.add(listener);
    return () => this.faultListeners.delete(listener);
  }

  /**
   * Releases every call held by `holdBeforeCommit` (each then runs its commit transaction, which
   * may refuse it, e.g. a fenced key) and every response held by `holdResponseAfterCommit`.
   * @returns how many were released.
   */
  release(): number {
    const waiting = [...this.held];
    this.held.clear();
    for (const resume of waiting) resume();
    return waiting.length;
  }

  /** How many calls (before their commit) and responses (after it) are held right now. */
  get heldCount(): number {
    return this.held.size;
  }

  /** Per-key counters from the database (see `FixtureStatsSchema`). */
  stats(): FixtureStats {
    return this.store.stats();
  }

  /**
   * Stops the service: delayed calls answer `provider_unavailable` without writing, held responses
   * are released, then the store is closed. Idempotent.
   */
  close(): void {
    this.shutdown.abort();
    this.release();
    this.tasks.close();
    this.store.close();
  }

  private async afterCommit(faults: FixtureFaults, result: CallToolResult): Promise<CallToolResult> {
    if (faults.exitAfterCommit) {
      if (this.exitMode === "kill-process") {
        this.logger.warn("exitAfterCommit: killing the process after the commit");
        process.kill(process.pid, "SIGKILL");
      }
      return new Promise<never>(() => {});
    }
    if (faults.holdResponseAfterCommit && !this.shutdown.signal.aborted) {
      await new Promise<void>((resolve) => this.held.add(resolve));
    }
    return result;
  }
}

/**
 * Opens the provider's SQLite file at `dbFile` and builds the service on it; the store is closed
 * again if the service cannot be built (e.g. invalid faults), so nothing is left open.
 * @throws when the database cannot be opened or the options are invalid (ZodError for faults).
 */
export function openFixtureProviderService(dbFile: string, options: Omit<FixtureProviderServiceOptions, "store">): FixtureProviderService {
  const store = IssueStore.open(dbFile);
  try {
    return new FixtureProviderService({ store, ...options });
  } catch (error) {
    store.close();
    throw error;
  }
}
