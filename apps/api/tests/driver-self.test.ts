/**
 * `GET /v1/drivers/self` (DRIVER_API.self): the API's view of the calling Driver instance. The Driver
 * logs `driver.fenced_effects` from it at startup (apps/driver tests), so its counts must follow the
 * ledger: an executing effect counts as executing, a fenced one as unknown, a settled one as neither.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DRIVER_API } from "@mosoo/contracts";
import {
  buildHttpApp,
  connectDriver,
  createTestWorld,
  deliverAcceptClaim,
  enqueueCreateIssue,
  type HttpApp,
  type TestWorld,
} from "./kit/index.js";
import { requestJson, TEST_AUTH } from "./helpers/http-call.js";

let w: TestWorld;
let app: HttpApp;

beforeEach(() => {
  w = createTestWorld({ heartbeatTtlMs: 10_000 });
  app = buildHttpApp(w.runtime, TEST_AUTH);
});
afterEach(() => w.close());

const self = async (token: string) => requestJson(app, "GET", DRIVER_API.self.path, undefined, token);

describe("GET /v1/drivers/self", () => {
  it("answers the instance's status, connection, heartbeat expiry and its executing/unknown effects", async () => {
    const driver = await connectDriver(w.runtime);
    const first = await self(driver.token);
    expect(first.status).toBe(200);
    expect(DRIVER_API.self.response.parse(first.body)).toEqual({
      driverInstanceId: driver.instance.id,
      name: "driver-a",
      status: "connected",
      connectionId: driver.connectionId,
      lastHeartbeatAtMs: w.clock.nowMs(),
      heartbeatTtlMs: 10_000,
      heartbeatExpiresAtMs: w.clock.nowMs() + 10_000,
      effects: { executing: 0, unknown: 0 },
      pendingCommandCount: 0,
    });

    await enqueueCreateIssue(w.runtime, driver);
    expect((await self(driver.token)).body).toMatchObject({ effects: { executing: 0, unknown: 0 }, pendingCommandCount: 1 });

    const { claim } = await deliverAcceptClaim(w.runtime, driver);
    if (claim.kind !== "execute") throw new Error(`expected an execute claim, got ${claim.kind}`);
    expect((await self(driver.token)).body).toMatchObject({ effects: { executing: 1, unknown: 0 }, pendingCommandCount: 1 });

    await w.runtime.ledger.markUnknown(driver.instance, claim.effectId, {
      connectionId: driver.connectionId,
      attempt: claim.attempt,
      reason: "transport_lost",
    });
    expect((await self(driver.token)).body).toMatchObject({ effects: { executing: 0, unknown: 1 } });
  });

  it("changes nothing, and another instance's token sees only its own instance", async () => {
    const a = await connectDriver(w.runtime, "driver-a");
    const b = await connectDriver(w.runtime, "driver-b");
    await enqueueCreateIssue(w.runtime, a);
    const before = (await self(a.token)).body;
    expect((await self(a.token)).body).toEqual(before);
    const seenByB = await self(b.token);
    expect(seenByB.body).toMatchObject({ driverInstanceId: b.instance.id, pendingCommandCount: 0 });
  });

  it("refuses a missing or unknown token (401) and a finalized instance (409 driver.finalized)", async () => {
    const driver = await connectDriver(w.runtime);
    expect((await self("")).status).toBe(401);
    expect((await self("mdt_not-a-real-token")).status).toBe(401);
    await w.runtime.repair.finalize(driver.instance.id, "driver_request");
    const finalized = await self(driver.token);
    expect(finalized.status).toBe(409);
    expect(finalized.body.error.code).toBe("driver.finalized");
  });
});
