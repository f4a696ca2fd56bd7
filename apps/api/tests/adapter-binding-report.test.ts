import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { declarationHash } from "@mosoo/effect-reconciliation/host";
import { loadApiConfig } from "../src/config/api-config.js";
import { startApi } from "../src/server.js";
import { bindingReport, noLookupReason } from "../src/modules/reconciliation/application/binding-report.service.js";
import { commitAtProvider, createDoubleWorld, dispatchWrite, type DoubleWorld, reconnectDriver } from "./kit/index.js";
import { reconciliationRecords } from "./helpers/reconciliation-db.js";

let f: DoubleWorld | undefined;
const dirs: string[] = [];
afterEach(() => {
  f?.close();
  f = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** An effect fenced `unknown` on `serverId`/`toolName` (claimed, then redelivered to a reconnected Driver with the flag's lookup). */
async function unknownEffect(fx: DoubleWorld, opts: { serverId?: string; toolName?: string } = {}) {
  const call = await dispatchWrite(fx, opts);
  const restarted = await reconnectDriver(fx.runtime, call.driver);
  await fx.runtime.commands.nextCommand(restarted.instance, restarted.connectionId, 0);
  await fx.runtime.ledger.claim(restarted.instance, restarted.connectionId, call.commandId);
  return call;
}

describe("why an effect gets no lookup (effects show)", () => {
  it("names the undeclared tool and its adapter, the unbound server, or the flag", async () => {
    f = createDoubleWorld();
    const undeclared = await unknownEffect(f, { toolName: "deleteIssue" });
    const unbound = await unknownEffect(f, { serverId: "mailer", toolName: "sendMail" });
    const covered = await unknownEffect(f);
    expect((await f.runtime.operator.show(undeclared.effectId)).noLookupReason).toBe(
      "no lookup: tool deleteIssue not declared by adapter provider-double",
    );
    expect((await f.runtime.operator.show(unbound.effectId)).noLookupReason).toBe("no binding for server mailer");
    expect((await f.runtime.operator.show(covered.effectId)).noLookupReason).toBeNull();
    expect(noLookupReason({ ...f.settings, enabled: false }, "tracker", "createIssue")).toBe("flag off");
  });

  it("a tool the binding's tools leave out is named as such", () => {
    f = createDoubleWorld();
    const settings = {
      ...f.settings,
      boundAdapters: new Map([
        [
          "tracker",
          {
            serverId: "tracker",
            adapter: f.adapter,
            coverage: { covered: ["createIssue"], notCovered: ["closeIssue"] },
            provenance: { source: { module: "m", export: "e" }, packageName: "p", packageVersion: "1.0.0", declarationHash: "sha256:x" },
          },
        ],
      ]),
    };
    expect(noLookupReason(settings, "tracker", "closeIssue")).toBe(
      'no lookup: tool closeIssue not covered by the binding of tracker (its "tools" leave it out)',
    );
    const [line] = bindingReport(settings, [
      { serverId: "tracker", toolName: "deleteIssue" },
      { serverId: "other", toolName: "x" },
    ]);
    expect(line).toMatchObject({ serverId: "tracker", covered: ["createIssue"], packageName: "p", declarationHash: "sha256:x" });
    expect(line!.notCovered).toEqual([
      { toolName: "closeIssue", reason: 'no lookup: tool closeIssue not covered by the binding of tracker (its "tools" leave it out)' },
      { toolName: "deleteIssue", reason: "no lookup: tool deleteIssue not declared by adapter provider-double" },
    ]);
  });
});

describe("provenance of every lookup", () => {
  it("the adapter's package, package version and declaration hash are recorded with the outcome", async () => {
    f = createDoubleWorld();
    const hash = declarationHash(f.adapter.declaration);
    (f.settings as { boundAdapters?: unknown }).boundAdapters = new Map([
      [
        "tracker",
        {
          serverId: "tracker",
          adapter: f.adapter,
          coverage: { covered: ["createIssue"], notCovered: [] },
          provenance: {
            source: { module: "@acme/tracker-adapter", export: "factory" },
            packageName: "@acme/tracker-adapter",
            packageVersion: "2.3.4",
            declarationHash: hash,
          },
        },
      ],
    ]);
    const call = await dispatchWrite(f);
    await commitAtProvider(f, call);
    const restarted = await reconnectDriver(f.runtime, call.driver);
    await f.runtime.commands.nextCommand(restarted.instance, restarted.connectionId, 0);
    expect((await f.runtime.ledger.claim(restarted.instance, restarted.connectionId, call.commandId)).kind).toBe("completed");
    const [record] = reconciliationRecords(f.store, call.effectId) as unknown as Array<Record<string, unknown>>;
    expect(record).toMatchObject({
      outcome: "confirmed_succeeded",
      adapter_package: "@acme/tracker-adapter",
      adapter_package_version: "2.3.4",
      adapter_declaration_hash: hash,
    });
    const shown = (await f.runtime.operator.show(call.effectId)).reconciliations[0]!;
    expect(shown).toMatchObject({ adapterPackage: "@acme/tracker-adapter", adapterPackageVersion: "2.3.4", adapterDeclarationHash: hash });
  });
});

describe("the startup report", () => {
  it("logs one reconciliation.binding line per bound server: covered tools, uncovered ones with their reason, the package", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mosoo-report-"));
    dirs.push(dir);
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
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(l));
        done();
      },
    });
    const api = await startApi(
      loadApiConfig({
        MOSOO_DB_FILE: join(dir, "api.db"),
        MOSOO_PORT: "0",
        MOSOO_EFFECT_RECONCILIATION: "on",
        MOSOO_RECONCILIATION_BINDINGS_FILE: bindings,
      }),
      pino({ level: "info" }, sink),
      { sweep: false },
    );
    await api.close();
    const report = lines.find((l) => l["msg"] === "reconciliation.binding");
    expect(report).toMatchObject({
      serverId: "tracker",
      adapterId: "fixture-issue-tracker",
      adapterVersion: "1.1.0",
      packageName: "@mosoo/fixture-adapter",
      packageVersion: "1.1.0",
      covered: ["createIssue"],
      notCovered: [
        { toolName: "closeIssue", reason: 'no lookup: tool closeIssue not covered by the binding of tracker (its "tools" leave it out)' },
      ],
    });
    expect(report!["declarationHash"]).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});
