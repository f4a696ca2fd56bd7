// Driver instances: registration (the token shown once, stored hashed), authentication, connections that supersede each other, heartbeats.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import {
  DriverTokenSchema,
  newUlid,
  type DRIVER_API,
  type RouteOutput,
  type ConnectDriverResponse,
  type RegisterDriverRequest,
  type RegisterDriverResponse,
} from "@mosoo/contracts";
import { UserFacingError } from "../../../kernel/user-facing-error.js";
import { commandRepository } from "../infrastructure/command.repository.js";
import { driverInstanceRepository, type DriverInstanceRow } from "../infrastructure/driver-instance.repository.js";
import { effectRows } from "../../ledger/application/effect-rows.service.js";
import type { RuntimeContext } from "../../../kernel/runtime-context.js";

function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/**
 * What proves a registration may happen (checked by `CredentialGuard` in credential-guard.ts): the enrollment token or the operator token
 * registers a new instance; re-registering an existing instance id needs that instance's own token
 * (`instance` with its id) or the operator token.
 */
export type RegistrationAuthority = { kind: "enrollment" } | { kind: "operator" } | { kind: "instance"; driverInstanceId: string };

/** A Driver instance as stored (the row the credential guard hands to the Driver routes). */
export type { DriverInstanceRow };

/**
 * Driver instances: register (the bearer token is returned once and stored only as its sha-256),
 * authenticate, connect (a new connection id each time, superseding the previous one), heartbeat.
 */
export class DriverInstanceService {
  constructor(private readonly ctx: RuntimeContext) {}

  /**
   * Registers a new instance, or re-registers `driverInstanceId` (revoking its old token), on the
   * proof `authority` gives (see {@link RegistrationAuthority}).
   * @throws UserFacingError `auth.forbidden` (403: the enrollment token re-registering an existing id, an
   *   instance token registering another or a new instance), `driver.not_found` (unknown id), `driver.not_finalized` (re-register of an
   *   instance that was not finalized, also when a concurrent re-register won the compare-and-set), `effect.fence_retained` (re-register while any of its effects
   *   is `executing`/`unknown`).
   */
  async register(req: RegisterDriverRequest, authority: RegistrationAuthority): Promise<RegisterDriverResponse> {
    // Identity takeover: only the instance itself or an operator may reuse an id.
    const allowed =
      authority.kind === "operator" ||
      (req.driverInstanceId === undefined
        ? authority.kind === "enrollment"
        : authority.kind === "instance" && authority.driverInstanceId === req.driverInstanceId);
    if (!allowed) throw new UserFacingError("auth.forbidden", "this credential may not register this Driver instance");
    const now = this.ctx.clock.nowMs();
    const id = req.driverInstanceId ?? newUlid(now);
    const driverToken = `mdt_${id}_${randomBytes(32).toString("base64url")}`;
    await this.ctx.store.transaction(async (tx) => {
      if (!req.driverInstanceId) {
        await driverInstanceRepository.insert(tx, {
          id,
          name: req.name,
          status: "registered",
          tokenHash: hashToken(driverToken),
          registeredAtMs: now,
        });
        return;
      }
      const existing = await driverInstanceRepository.findById(tx, id);
      if (!existing) throw new UserFacingError("driver.not_found", `no Driver instance ${id}`);
      // Only an instance whose finalization repair already ran may be re-registered (see `FinalizationRepairService` in finalization-repair.service.ts): a live instance's run and commands are never handed over without that repair.
      if (existing.status !== "finalized") {
        throw new UserFacingError(
          "driver.not_finalized",
          `Driver instance ${id} is ${existing.status}; it must be finalized before it is re-registered: stop its process and let it finalize (or wait one MOSOO_HEARTBEAT_TTL_MS for the sweep), or register a new instance without driverInstanceId`,
        );
      }
      const fenced = await effectRows.listFenced(tx, { driverInstanceId: id });
      if (fenced.length > 0) {
        throw new UserFacingError(
          "effect.fence_retained",
          `Driver instance ${id} has ${fenced.length} executing or unknown effects; resolve them before re-registering: npm run effects -- show <effectId> for each of details.effectIds, then reconcile or resolve it`,
          {
            effectIds: fenced.map((e) => e.id),
          },
        );
      }
      const reregistered = await driverInstanceRepository.updateIfStatus(tx, id, ["finalized"], {
        name: req.name,
        status: "registered",
        tokenHash: hashToken(driverToken),
        connectionId: null,
        lastHeartbeatAtMs: null,
        registeredAtMs: now,
        finalizedAtMs: null,
      });
      // Lost compare-and-set: a concurrent re-register (e.g. on another API instance) won; this token was never stored.
      if (!reregistered) {
        throw new UserFacingError(
          "driver.not_finalized",
          `Driver instance ${id} was re-registered concurrently; it is no longer finalized`,
        );
      }
    });
    this.ctx.logger.info({ driverInstanceId: id, reregistered: Boolean(req.driverInstanceId) }, "driver.registered");
    return { driverInstanceId: id, driverToken };
  }

  /**
   * The instance whose stored token hash matches `token` (constant-time compare), whatever its
   * status, or undefined (malformed, unknown or revoked token). Reads only.
   */
  async verifyToken(token: string): Promise<DriverInstanceRow | undefined> {
    if (!DriverTokenSchema.safeParse(token).success) return undefined;
    const instance = await this.ctx.store.read((tx) => driverInstanceRepository.findById(tx, token.slice(4, 30)));
    const expected = Buffer.from(instance?.tokenHash ?? "0".repeat(64), "hex");
    const given = Buffer.from(hashToken(token), "hex");
    return instance && timingSafeEqual(expected, given) ? instance : undefined;
  }

  /**
   * Resolves a bearer token to its instance.
   * @throws UserFacingError `auth.invalid_token` (malformed, unknown or revoked), `driver.finalized`.
   */
  async authenticate(token: string): Promise<DriverInstanceRow> {
    const parsed = DriverTokenSchema.safeParse(token);
    if (!parsed.success) throw new UserFacingError("auth.invalid_token", "the Driver token is malformed");
    const id = token.slice(4, 30);
    const instance = await this.ctx.store.read((tx) => driverInstanceRepository.findById(tx, id));
    const expected = Buffer.from(instance?.tokenHash ?? "0".repeat(64), "hex");
    const given = Buffer.from(hashToken(token), "hex");
    if (!instance || !timingSafeEqual(expected, given)) throw new UserFacingError("auth.invalid_token", "the Driver token is not valid");
    if (instance.status === "finalized" || instance.status === "finalizing") {
      throw new UserFacingError("driver.finalized", `Driver instance ${id} was finalized; register again`);
    }
    return instance;
  }

  /**
   * Opens a new connection for the instance; earlier connections are superseded from now on.
   * Every command without a terminal receipt will be delivered again on it (see `CommandQueueService` in command-queue.service.ts).
   * @throws UserFacingError `driver.finalized` when the instance was finalized meanwhile.
   */
  async connect(instance: DriverInstanceRow): Promise<ConnectDriverResponse> {
    const now = this.ctx.clock.nowMs();
    const connectionId = newUlid(now);
    const pending = await this.ctx.store.transaction(async (tx) => {
      const ok = await driverInstanceRepository.updateIfStatus(tx, instance.id, ["registered", "connected"], {
        status: "connected",
        connectionId,
        lastHeartbeatAtMs: now,
      });
      if (!ok) throw new UserFacingError("driver.finalized", `Driver instance ${instance.id} was finalized; register again`);
      // wakes the superseded connection's long-poll, on whichever API instance holds it (see `PgCommandWakeups` in pg-command-wakeups.ts)
      await this.ctx.notifier.notifyInTransaction(tx, instance.id);
      return (await commandRepository.listNonTerminalOfDriver(tx, instance.id)).length;
    });
    this.ctx.logger.info({ driverInstanceId: instance.id, connectionId, pendingCommandCount: pending }, "driver.connected");
    this.ctx.notifier.notifyCommitted(instance.id);
    return { driverInstanceId: instance.id, connectionId, heartbeatTtlMs: this.ctx.settings.heartbeatTtlMs, pendingCommandCount: pending };
  }

  /**
   * Records a heartbeat of the current connection.
   * @throws UserFacingError `driver.connection_superseded` when `connectionId` is not the current one.
   */
  async heartbeat(instance: DriverInstanceRow, connectionId: string): Promise<{ heartbeatTtlMs: number }> {
    const now = this.ctx.clock.nowMs();
    if (!(await this.ctx.store.transaction((tx) => driverInstanceRepository.touchHeartbeat(tx, instance.id, connectionId, now)))) {
      throw new UserFacingError("driver.connection_superseded", "this connection is no longer current; reconnect", { connectionId });
    }
    return { heartbeatTtlMs: this.ctx.settings.heartbeatTtlMs };
  }

  /**
   * The API's view of `instance` (`GET /v1/drivers/self`; shape: `DRIVER_API.self.response`): status,
   * current connection, last heartbeat and its expiry (ms since the epoch; the sweep finalizes the
   * instance after it), its `executing` and `unknown` effects (fenced until settled) and its commands without a terminal receipt. A read: changes nothing.
   * @throws UserFacingError `driver.not_found` when the instance was deleted meanwhile.
   */
  async describe(instance: DriverInstanceRow): Promise<RouteOutput<typeof DRIVER_API.self>> {
    return this.ctx.store.read(async (tx) => {
      const row = await driverInstanceRepository.findById(tx, instance.id);
      if (!row) throw new UserFacingError("driver.not_found", `no Driver instance ${instance.id}`);
      const fenced = await effectRows.listOfDriverInStatus(tx, row.id, ["executing", "unknown"]);
      const ttl = this.ctx.settings.heartbeatTtlMs;
      return {
        driverInstanceId: row.id,
        name: row.name,
        status: row.status,
        connectionId: row.connectionId,
        lastHeartbeatAtMs: row.lastHeartbeatAtMs,
        heartbeatTtlMs: ttl,
        heartbeatExpiresAtMs: row.lastHeartbeatAtMs === null ? null : row.lastHeartbeatAtMs + ttl,
        effects: {
          executing: fenced.filter((e) => e.status === "executing").length,
          unknown: fenced.filter((e) => e.status === "unknown").length,
        },
        pendingCommandCount: (await commandRepository.listNonTerminalOfDriver(tx, row.id)).length,
      };
    });
  }
}
