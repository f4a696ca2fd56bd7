/**
 * The representative workload of the index justification: every path of the effect
 * lifecycle the runtime serves, driven through the HTTP app and the services of the test kit (never
 * a repository), so it keeps working when the store's internals change. What it runs, in steps
 * (each step's name is recorded with the statements it prepared):
 * Driver register/connect/heartbeat; run create, enqueue (with a client toolCallId, and its
 * replay); deliver, long-poll, accept, claim, complete, terminal update; run view and events;
 * mark-unknown then late evidence; a missed send-by deadline; a redelivery to a reconnected Driver
 * (fence, inline lookup); sweep lookups; operator list/show/stats/change feed, reconcile, resolve, a
 * refused action; compensation against the real fixture provider; Driver finalization repair;
 * heartbeat expiry; deletes of a run, a session and a Driver (and a refused one); the purge of
 * never-connected registrations; a fence-less miss checked against the retention canary; an API restart (expired leases, binding report); the effects CLI on
 * the store file. Test-only.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import pino from "pino";
import { fingerprintArguments } from "@mosoo/contracts";
import { buildEffectsCli } from "../../src/entry/cli/effects-cli.js";
import { loadApiConfig } from "../../src/config/api-config.js";
import { startApi } from "../../src/server.js";
import {
  buildHttpApp,
  connectDriver,
  createDoubleWorld,
  createFixtureProviderWorld,
  createTempDir,
  dispatchWrite,
  executeNextCommand,
  finalizeDriver,
  seedRetentionCanary,
  type DoubleWorld,
  type HttpApp,
  operatorNamed,
} from "../kit/index.js";
import { defaultCredential, requestJson, TEST_AUTH, TEST_SECRETS } from "./http-call.js";
import type { SqlCapture } from "./sql-capture.js";

/** A Driver as the HTTP protocol sees it: its instance id, bearer token and current connection. */
interface HttpDriver {
  id: string;
  token: string;
  connectionId: string;
}

type Call = (method: string, path: string, body?: unknown, token?: string) => Promise<{ status: number; body: any }>;

/** Asserts an HTTP answer's status (the workload must take the path it means to), returning its body. */
async function expectStatus(p: Promise<{ status: number; body: any }>, status: number, what: string): Promise<any> {
  const res = await p;
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

const RESULT = (toolName: string, serverId = "tracker") => ({ outputText: "ok", requestId: "req-1", serverId, toolName });

/** The steps over one HTTP app: a Driver's protocol calls and the run API. */
function protocol(call: Call) {
  const self = {
    async driver(name: string): Promise<HttpDriver> {
      const reg = await expectStatus(call("POST", "/v1/drivers/register", { name }), 201, "register");
      const conn = await expectStatus(call("POST", "/v1/drivers/connect", undefined, reg.driverToken), 200, "connect");
      return { id: reg.driverInstanceId, token: reg.driverToken, connectionId: conn.connectionId };
    },
    async reconnect(d: HttpDriver): Promise<HttpDriver> {
      const conn = await expectStatus(call("POST", "/v1/drivers/connect", undefined, d.token), 200, "reconnect");
      return { ...d, connectionId: conn.connectionId };
    },
    async run(d: HttpDriver): Promise<{ runId: string; sessionId: string }> {
      return expectStatus(call("POST", "/v1/runs", { driverInstanceId: d.id }), 201, "create run");
    },
    /** Enqueues a `createIssue` on `tracker` (or what `more` says); 201, or 200 for a replay (`expected`). */
    async enqueue(runId: string, args: Record<string, unknown>, more: Record<string, unknown> = {}, expected = 201) {
      const body = { serverId: "tracker", toolName: "createIssue", arguments: args, requestId: "req-1", ...more };
      return expectStatus(call("POST", `/v1/runs/${runId}/tool-calls`, body), expected, "enqueue") as Promise<{
        commandId: string;
        effectId: string;
        idempotencyKey: string;
      }>;
    },
    async next(d: HttpDriver, waitMs = 0) {
      const body = await expectStatus(
        call("GET", `/v1/drivers/commands/next?connectionId=${d.connectionId}&waitMs=${waitMs}`, undefined, d.token),
        200,
        "next",
      );
      return body.command as { commandId: string; status: string } | null;
    },
    async accept(d: HttpDriver, commandId: string) {
      await expectStatus(
        call("POST", `/v1/drivers/commands/${commandId}/update`, { connectionId: d.connectionId, status: "accepted" }, d.token),
        200,
        "accept",
      );
    },
    async claim(d: HttpDriver, commandId: string) {
      return expectStatus(call("POST", "/v1/drivers/effects/claim", { connectionId: d.connectionId, commandId }, d.token), 200, "claim");
    },
    /**
     * Delivers commands on `d`'s connection until `commandId` comes (a reconnected Driver gets every
     * command without a terminal receipt back first), accepts it and claims it; the claim's answer.
     */
    async deliverClaim(d: HttpDriver, commandId: string) {
      for (;;) {
        const cmd = await self.next(d);
        if (!cmd) throw new Error(`command ${commandId} was not delivered`);
        if (cmd.commandId !== commandId) continue;
        if (cmd.status !== "accepted") await self.accept(d, cmd.commandId);
        return { commandId, claim: await self.claim(d, cmd.commandId) };
      }
    },
    async report(d: HttpDriver, effectId: string, kind: string, body: Record<string, unknown>) {
      return expectStatus(
        call("POST", `/v1/drivers/effects/${effectId}/${kind}`, { connectionId: d.connectionId, ...body }, d.token),
        200,
        kind,
      );
    },
  };
  return self;
}

/** The operator's routes (operator token). */
function operatorCall(app: HttpApp): Call {
  return (method, path, body) => requestJson(app, method, path, body, TEST_SECRETS.operatorToken);
}

const AUDIT = { reason: "index workload" };

/** The provider double commits the write under `key` (the Driver's call reached it; asserted). */
async function commit(fx: DoubleWorld, key: string, args: Record<string, unknown>): Promise<void> {
  const res = await fx.double.commit(key, args);
  if (res.status !== "committed") throw new Error(`the provider double did not commit ${key}: ${res.status}`);
}

/** The ledger's paths on a file-backed double world (reconciliation on, `tracker` bound to the provider double). */
async function ledgerPaths(capture: SqlCapture, fx: DoubleWorld, app: HttpApp): Promise<string> {
  const call: Call = (method, path, body, token) => requestJson(app, method, path, body, token ?? defaultCredential(method, path));
  const p = protocol(call);
  const op = operatorCall(app);

  capture.step("driver register, connect, heartbeat");
  const d = await p.driver("d-main");
  await expectStatus(call("POST", "/v1/drivers/heartbeat", { connectionId: d.connectionId }, d.token), 200, "heartbeat");

  capture.step("run create, enqueue, replayed enqueue");
  const run = await p.run(d);
  const first = await p.enqueue(run.runId, { title: "a", body: "b" }, { toolCallId: "call-1" });
  await p.enqueue(run.runId, { title: "a", body: "b" }, { toolCallId: "call-1" }, 200);

  capture.step("deliver, accept, claim, complete, terminal update");
  const { claim } = await p.deliverClaim(d, first.commandId);
  await p.report(d, first.effectId, "complete", { attempt: claim.attempt, result: RESULT("createIssue"), receipt: null });
  await expectStatus(
    call(
      "POST",
      `/v1/drivers/commands/${first.commandId}/update`,
      { connectionId: d.connectionId, status: "completed", result: RESULT("createIssue") },
      d.token,
    ),
    200,
    "terminal update",
  );

  capture.step("long-poll woken by an enqueue");
  const polled = p.next(d, 5_000);
  const second = await p.enqueue(run.runId, { title: "c", body: "d" });
  if ((await polled)?.commandId !== second.commandId) throw new Error("the long-poll did not deliver the enqueued command");

  capture.step("run view and events");
  await expectStatus(call("GET", `/v1/runs/${run.runId}`), 200, "run view");
  await expectStatus(call("GET", `/v1/runs/${run.runId}/events?afterSeq=0`), 200, "events");
  await expectStatus(call("GET", `/v1/runs/${run.runId}/events?afterSeq=2`), 200, "events after");

  capture.step("mark-unknown, then late evidence");
  await p.accept(d, second.commandId);
  const c2 = await p.claim(d, second.commandId);
  await p.report(d, second.effectId, "mark-unknown", { attempt: c2.attempt, reason: "transport broke" });
  await p.report(d, second.effectId, "late-result", {
    attempt: c2.attempt,
    idempotencyKey: second.idempotencyKey,
    toolName: "createIssue",
    requestFingerprint: fingerprintArguments({ title: "c", body: "d" }),
    result: RESULT("createIssue"),
    receipt: null,
  });

  capture.step("missed send-by deadline");
  const third = await p.enqueue(run.runId, { title: "e", body: "f" });
  const c3 = (await p.deliverClaim(d, third.commandId)).claim;
  await p.report(d, third.effectId, "deadline-missed", { attempt: c3.attempt, elapsedMs: 60_000 });

  capture.step("redelivery to a reconnected Driver: fence, inline lookup");
  const args4 = { title: "g", body: "h" };
  const fourth = await p.enqueue(run.runId, args4);
  await p.deliverClaim(d, fourth.commandId);
  await commit(fx, fourth.idempotencyKey, args4);
  const d2 = await p.reconnect(d);
  await p.deliverClaim(d2, fourth.commandId);

  capture.step("sweep lookups of unknown effects");
  const args5 = { title: "i", body: "j" };
  const fifth = await p.enqueue(run.runId, args5);
  const c5 = (await p.deliverClaim(d2, fifth.commandId)).claim;
  await p.report(d2, fifth.effectId, "mark-unknown", { attempt: c5.attempt, reason: "transport broke" });
  const sixth = await p.enqueue(run.runId, { title: "k", body: "l" });
  const c6 = (await p.deliverClaim(d2, sixth.commandId)).claim;
  await p.report(d2, sixth.effectId, "mark-unknown", { attempt: c6.attempt, reason: "transport broke" });
  await commit(fx, fifth.idempotencyKey, args5);
  fx.clock.advance(5_000);
  await fx.runtime.sweep.sweepOnce();
  fx.clock.advance(5_000);
  await fx.runtime.sweep.sweepOnce();

  capture.step("lookups that cannot tell (the adapter throws) and that conflict (another fingerprint)");
  const ninth = await p.enqueue(run.runId, { title: "y", body: "z" });
  const c9 = (await p.deliverClaim(d2, ninth.commandId)).claim;
  await p.report(d2, ninth.effectId, "mark-unknown", { attempt: c9.attempt, reason: "transport broke" });
  for (const adapterFault of ["throws", "conflicting_fingerprint"] as const) {
    fx.double.setFaults({ adapterFault });
    fx.clock.advance(10_000);
    await fx.runtime.sweep.sweepOnce();
  }
  fx.double.setFaults({ adapterFault: "none" });

  capture.step("operator: list, show, stats, change feed, reconcile, resolve, a refused action");
  const unbound = await p.enqueue(run.runId, { to: "ops" }, { serverId: "mailer", toolName: "sendMail" });
  const c7 = (await p.deliverClaim(d2, unbound.commandId)).claim;
  await p.report(d2, unbound.effectId, "mark-unknown", { attempt: c7.attempt, reason: "transport broke" });
  const bound = await p.enqueue(run.runId, { title: "w", body: "x" });
  const c8 = (await p.deliverClaim(d2, bound.commandId)).claim;
  await p.report(d2, bound.effectId, "mark-unknown", { attempt: c8.attempt, reason: "transport broke" });
  const E = "/api/operator/effects";
  const page = await expectStatus(op("GET", `${E}?limit=2`), 200, "operator list");
  await expectStatus(op("GET", `${E}?limit=2&cursor=${page.nextCursor ?? unbound.effectId}`), 200, "operator list page 2");
  await expectStatus(op("GET", `${E}?status=unknown`), 200, "operator list by status");
  await expectStatus(op("GET", `${E}?status=succeeded&serverId=tracker&toolName=createIssue&minAgeMs=0`), 200, "operator list filtered");
  await expectStatus(op("GET", `${E}?runId=${run.runId}`), 200, "operator list by run");
  for (const filter of ["serverId=tracker", "toolName=createIssue", "minAgeMs=0", "attention=lookup_bound_reached"]) {
    await expectStatus(op("GET", `${E}?${filter}`), 200, `operator list ${filter}`);
  }
  await expectStatus(op("GET", `${E}/${unbound.effectId}`), 200, "operator show");
  await fx.runtime.operator.stats();
  await fx.runtime.operator.changeMarker();
  await fx.runtime.operator.unknownTotal();
  await expectStatus(op("POST", `${E}/${bound.effectId}/reconcile`, AUDIT), 200, "operator reconcile");
  await expectStatus(op("POST", `${E}/${unbound.effectId}/resolve`, { outcome: "not_executed", ...AUDIT }), 200, "operator resolve");
  await expectStatus(op("POST", `${E}/${unbound.effectId}/resolve`, { outcome: "not_executed", ...AUDIT }), 409, "refused resolve");

  capture.step("Driver finalization repair");
  const df = await p.driver("d-finalize");
  const runF = await p.run(df);
  const argsF = { title: "m", body: "n" };
  const executing = await p.enqueue(runF.runId, argsF);
  await p.deliverClaim(df, executing.commandId);
  await commit(fx, executing.idempotencyKey, argsF);
  await p.enqueue(runF.runId, { title: "o", body: "p" });
  await expectStatus(call("POST", "/v1/drivers/finalize", { connectionId: df.connectionId }, df.token), 200, "finalize");

  capture.step("re-registration of a finalized instance");
  const dr = await p.driver("d-reregister");
  await expectStatus(call("POST", "/v1/drivers/finalize", { connectionId: dr.connectionId }, dr.token), 200, "finalize to re-register");
  const again = { name: "d-reregistered", driverInstanceId: dr.id };
  await expectStatus(call("POST", "/v1/drivers/register", again, dr.token), 201, "re-register with its own token");

  capture.step("deletes: run, session, Driver, and a refused one");
  const fenced = await p.enqueue(run.runId, { title: "q", body: "r" });
  await p.deliverClaim(d2, fenced.commandId);
  await expectStatus(call("DELETE", `/v1/runs/${run.runId}`), 409, "refused run delete");
  await p.report(d2, fenced.effectId, "complete", { attempt: 1, result: RESULT("createIssue"), receipt: null });
  await expectStatus(call("DELETE", `/v1/runs/${runF.runId}`), 204, "run delete");
  const other = await p.run(await p.driver("d-session"));
  await expectStatus(call("DELETE", `/v1/sessions/${other.sessionId}`), 204, "session delete");
  await expectStatus(call("DELETE", `/v1/drivers/${df.id}`), 204, "Driver purge");

  capture.step("heartbeat expiry and the purge of never-connected registrations (maintenance sweep)");
  const dx = await p.driver("d-expiring");
  const runX = await p.run(dx);
  const expiring = await p.enqueue(runX.runId, { title: "s", body: "t" });
  await p.deliverClaim(dx, expiring.commandId);
  await expectStatus(call("POST", "/v1/drivers/register", { name: "d-never-connected" }), 201, "register only");
  fx.clock.advance(2 * 3_600_000 + 1);
  await fx.runtime.sweep.sweepOnce();
  return first.effectId;
}

/** Compensation (declared by the fixture adapter) against the real fixture provider, in process. */
async function compensationPath(capture: SqlCapture): Promise<void> {
  capture.step("compensation against the fixture provider");
  const s = await createFixtureProviderWorld({ mode: "bound" });
  try {
    const driver = await connectDriver(s.runtime);
    const { runId } = await s.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
    await s.runtime.runs.enqueueToolCall(runId, { serverId: "tracker", toolName: "createIssue", arguments: { title: "u", body: "v" } });
    const created = await executeNextCommand(s, driver);
    await s.runtime.operator.compensate(created.effectId, AUDIT, operatorNamed("alice"));
    await executeNextCommand(s, driver);
    await s.runtime.operator.show(created.effectId);
  } finally {
    await s.dispose();
  }
}

/** The repeat guard (tracker guarded): a write, then the same request again in the same session (refused), then a deliberate repeat and a lookup by tool call. */
async function repeatGuardPath(capture: SqlCapture): Promise<void> {
  capture.step("repeat guard: refused repeat, deliberate repeat, lookup by tool call");
  const fx = createDoubleWorld({ heartbeatTtlMs: 60_000, repeatGuard: new Map([["tracker", 60_000]]) });
  try {
    const driver = await connectDriver(fx.runtime);
    const { runId } = await fx.runtime.runs.createRun({ driverInstanceId: driver.instance.id });
    const req = { serverId: "tracker", toolName: "createIssue", arguments: { title: "g" } };
    const first = await fx.runtime.runs.enqueueToolCall(runId, { ...req, toolCallId: "tc-g1" });
    const refused = await fx.runtime.runs.enqueueToolCall(runId, req).then(
      () => "went through",
      (err: { code?: string }) => err.code,
    );
    if (refused !== "tool_call.repeat_refused") throw new Error(`repeat guard step: the repeat was ${refused}`);
    await fx.runtime.runs.enqueueToolCall(runId, { ...req, toolCallId: "tc-g2", repeatOfEffectId: first.effectId });
    await fx.runtime.runs.getToolCall(runId, "tc-g2");
  } finally {
    fx.close();
  }
}

/** A fence-less provider (max_in_flight): a committed write, then a Driver lost mid-write whose miss is checked against the retention canary. */
async function retentionCanaryPath(capture: SqlCapture): Promise<void> {
  capture.step("retention canary: a fence-less miss checked against an older committed write");
  const fx = createDoubleWorld({ heartbeatTtlMs: 60_000, double: { keyFencing: { kind: "max_in_flight", maxInFlightMs: 1_000 } } });
  try {
    await seedRetentionCanary(fx);
    const call = await dispatchWrite(fx);
    await finalizeDriver(fx, call);
    fx.clock.advance(20_000); // past claim + send-by deadline + maximum in-flight time
    await fx.runtime.sweep.sweepOnce();
    const status = (await fx.runtime.operator.show(call.effectId)).status;
    if (status !== "not_executed") throw new Error(`retention canary step: the effect is ${status}`);
  } finally {
    fx.close();
  }
}

/** An API process started on the store file (`startApi`: expired leases, binding report), then the effects CLI on the file. */
async function startupAndCli(capture: SqlCapture, dbFile: string, dir: string, effectId: string): Promise<void> {
  capture.step("API startup: expired leases, binding report");
  const bindings = join(dir, "bindings.json");
  writeFileSync(
    bindings,
    JSON.stringify({
      bindings: {
        tracker: {
          package: { module: "@mosoo/fixture-adapter", export: "fixtureIssueTrackerAdapterFactory" },
          options: { url: "http://127.0.0.1:2/mcp" },
          tools: ["createIssue"],
        },
      },
    }),
  );
  const env = { MOSOO_DB_FILE: dbFile, MOSOO_PORT: "0", MOSOO_EFFECT_RECONCILIATION: "on", MOSOO_RECONCILIATION_BINDINGS_FILE: bindings };
  const api = await startApi(loadApiConfig(env), pino({ level: "silent" }), { sweep: false });
  await api.close();

  capture.step("effects CLI on the store file");
  for (const args of [["list"], ["list", "--status", "unknown"], ["show", effectId]]) {
    const program = buildEffectsCli(
      () => undefined,
      { MOSOO_EFFECT_RECONCILIATION: "on" } as NodeJS.ProcessEnv,
      () => Date.now(),
    );
    program.exitOverride();
    program.configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
    await program.parseAsync(["node", "mosoo-effects", "--db", dbFile, ...args]);
  }
}

/**
 * Runs the whole workload under `capture`, on a file-backed store in a temp folder (removed at the
 * end). Every step asserts the path it took (a status code, a delivered command), so a workload
 * that silently stopped exercising a path fails instead of shrinking the capture.
 * @throws Error naming the step whose answer was not the expected one.
 */
export async function runIndexWorkload(capture: SqlCapture): Promise<void> {
  const temp = createTempDir("mosoo-index-plans-");
  const dbFile = join(temp.dir, "api.db");
  try {
    const fx = createDoubleWorld({ dbFile, heartbeatTtlMs: 60_000 });
    const app = buildHttpApp(fx.runtime, TEST_AUTH);
    let effectId: string;
    try {
      effectId = await ledgerPaths(capture, fx, app);
      capture.step("API restart on the same file (expired leases ended)");
      await fx.restart();
    } finally {
      await fx.close();
    }
    await compensationPath(capture);
    await repeatGuardPath(capture);
    await retentionCanaryPath(capture);
    await startupAndCli(capture, dbFile, temp.dir, effectId);
  } finally {
    temp.remove();
  }
}
