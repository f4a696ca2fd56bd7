/**
 * The hostile-adapter suite (docs/DESIGN.md §4 "The sandbox is the operating system's"): a real API
 * (`startApi`, SQLite store, HTTP, sweep) whose bindings file binds one server per attack to
 * tests/fixtures/sandbox/hostile.adapter.ts, each lookup doing ONE hostile thing through the REAL
 * sandbox (child processes, permission model, limits). This test process holds the API's secrets in
 * its own environment, as a deployed API would. The attacks include reading the bindings file, a file
 * beside the adapter module and the module itself (the process may read its bundle alone), and
 * forging an answer on the reply pipe. For each attack: it is refused or contained, the
 * effect stays `unknown` with the expected reason, no secret of the API appears in any log line, any
 * stored row or any HTTP answer, and `/health` answers 200 throughout.
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadApiConfig } from "../src/config/api-config.js";
import { startApi, type RunningApi } from "../src/server.js";
import { seedEffects } from "../bench/bench-store.harness.js";
import { sandboxNodeArgs } from "../src/modules/reconciliation/infrastructure/adapter-sandbox.process.js";

const HOSTILE = fileURLToPath(new URL("./fixtures/sandbox/hostile.adapter.ts", import.meta.url));
/** A data file beside the hostile module (in the folder a module named by path once made readable). */
const SIBLING = fileURLToPath(new URL("./fixtures/sandbox/beside-the-adapter.json", import.meta.url));
const API_DIR = fileURLToPath(new URL("..", import.meta.url));
const SO = fileURLToPath(import.meta.resolve("better-sqlite3/build/Release/better_sqlite3.node"));

/** The API's secrets (in this process's environment and in its config), and a binding's provider credential. */
const SECRETS = {
  MOSOO_OPERATOR_TOKEN: "sandbox-operator-token-5f1e9c2a7b",
  MOSOO_DRIVER_ENROLLMENT_TOKEN: "sandbox-enrollment-token-8d3b6a0c4e",
  MOSOO_API_KEYS: "admin:sandbox-admin-key-2c7e9f1a3b:runs:write+runs:read+runs:delete+metrics:read",
};
const SECRET_VALUES = ["sandbox-operator-token-5f1e9c2a7b", "sandbox-enrollment-token-8d3b6a0c4e", "sandbox-admin-key-2c7e9f1a3b"];
const PROVIDER_TOKEN = "provider-credential-4a8c2e6f0b";

/**
 * Each attack, its server id, its target and the reason its lookup must record. `probe_refused`: the
 * sandbox refused the act (the adapter caught the refusal and said so); `probe_done`: the act ran
 * but is contained (what it wrote went to the host, which logs it tagged); `adapter_crashed`: the
 * host killed the process past a bound; `invalid_adapter_output`: the runtime refused the answer.
 */
function attacks(dir: string, apiUrl: () => string) {
  return [
    { attack: "env", reason: "probe_done", what: "reads process.env: only the binding's env is there" },
    { attack: "proc_environ", reason: "probe_refused", what: "reads /proc/self/environ" },
    { attack: "read_file", reason: "probe_refused", what: "reads the store file", target: join(dir, "api.db") },
    { attack: "read_file", reason: "probe_refused", what: "reads the API's files", target: join(API_DIR, "src", "server.ts") },
    { attack: "read_file", reason: "probe_refused", what: "reads the bindings file", target: join(dir, "bindings.json") },
    { attack: "read_file", reason: "probe_refused", what: "reads a file beside its own module", target: SIBLING },
    { attack: "read_file", reason: "probe_refused", what: "reads its own module's source", target: HOSTILE },
    {
      attack: "write_file",
      reason: "probe_refused",
      what: "writes into the install (dist/)",
      target: join(API_DIR, "dist", "sandbox-probe.js"),
    },
    {
      attack: "write_file",
      reason: "probe_refused",
      what: "writes into node_modules",
      target: join(API_DIR, "node_modules", "pino", "pino.js"),
    },
    { attack: "write_file", reason: "probe_refused", what: "writes the bindings file", target: join(dir, "bindings.json") },
    { attack: "write_fd1", reason: "probe_done", what: "writes a forged log line to fd 1" },
    { attack: "write_fd2", reason: "probe_done", what: "writes to fd 2" },
    { attack: "spawn", reason: "probe_refused", what: "spawns a process" },
    { attack: "fork", reason: "probe_refused", what: "forks", target: HOSTILE },
    { attack: "addon", reason: "probe_refused", what: "loads a native addon", target: SO },
    { attack: "alloc_2gb", reason: "adapter_crashed", what: "allocates 2 GB" },
    { attack: "spin_60s", reason: "adapter_crashed", what: "spins 60 s (CPU bound 500 ms)" },
    { attack: "operator_api", reason: "probe_refused", what: "calls the operator API with every credential it finds", target: "" },
    { attack: "loot_in_reason_code", reason: "x<hex>", what: "encodes what it finds in reasonCode" },
    { attack: "long_reason_code", reason: "invalid_adapter_output", what: "answers a reasonCode that is not a short code" },
    { attack: "forge_reply", reason: "adapter_crashed", what: "writes an answer for its own call on the reply pipe (fd 3)" },
    // `Error: ` + pad + ` Authorization: Bearer `: the credential straddles the 300th character, where the host cuts
    {
      attack: "token_in_error",
      reason: "adapter_error",
      what: "throws its credential across the error's 300-character cut",
      target: "260",
    },
  ].map((a, i) => ({ ...a, serverId: `h${i}-${a.attack.replace(/_/g, "-")}`, target: a.target === "" ? apiUrl() : a.target }));
}

describe("hostile adapters in the real sandbox", { timeout: 240_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), "mosoo-hostile-"));
  const logLines: string[] = [];
  const savedEnv = { ...process.env };
  let api: RunningApi;
  let cases: ReturnType<typeof attacks>;
  const health = { ok: 0, failed: [] as string[] };
  let probing = true;
  let probe: Promise<void> = Promise.resolve();
  const effectIds = new Map<string, string>();
  const installed = { pino: "" };

  beforeAll(async () => {
    Object.assign(process.env, SECRETS); // the API process's environment holds its secrets
    installed.pino = readFileSync(join(API_DIR, "node_modules", "pino", "pino.js"), "utf8");
    // the operator_api target is the API's own URL, so the port is chosen first
    const port = await freePort();
    cases = attacks(dir, () => `http://127.0.0.1:${port}`);
    const bindings = Object.fromEntries(
      cases.map((c) => [
        c.serverId,
        {
          package: { module: HOSTILE, export: "hostileAdapterFactory" },
          options: { attack: c.attack, ...(c.target ? { target: c.target } : {}) },
          env: { PROVIDER_TOKEN },
        },
      ]),
    );
    writeFileSync(join(dir, "bindings.json"), JSON.stringify({ bindings }));
    const sink = new Writable({
      write(chunk, _enc, done) {
        logLines.push(...String(chunk).split("\n").filter(Boolean));
        done();
      },
    });
    api = await startApi(
      loadApiConfig({
        ...SECRETS,
        MOSOO_DB_FILE: join(dir, "api.db"),
        MOSOO_PORT: String(port),
        MOSOO_EFFECT_RECONCILIATION: "on",
        MOSOO_RECONCILIATION_BINDINGS_FILE: join(dir, "bindings.json"),
        MOSOO_ADAPTER_HEAP_MB: "32",
        MOSOO_ADAPTER_CPU_MS: "500",
        MOSOO_LOOKUP_TIMEOUT_MS: "20000",
        MOSOO_RECONCILIATION_CONCURRENCY: "4",
        MOSOO_SWEEP_INTERVAL_MS: "200",
        MOSOO_LOOKUP_BACKOFF_INITIAL_MS: "600000",
        MOSOO_LOOKUP_BACKOFF_MAX_MS: "600000",
      }),
      pino({ level: "debug" }, sink),
    );
    probe = (async () => {
      while (probing) {
        try {
          const res = await fetch(`${api.url}/health`, { signal: AbortSignal.timeout(5_000) });
          if (res.status === 200) health.ok += 1;
          else health.failed.push(`HTTP ${res.status}`);
        } catch (error) {
          health.failed.push(String(error));
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    // one unknown effect per attack, never looked up: the API's sweep looks each up through its adapter
    const sqlite = new Database(join(dir, "api.db"));
    sqlite.pragma("busy_timeout = 5000");
    for (const c of cases) {
      const before = new Set(sqlite.prepare("SELECT id FROM external_tool_effects").pluck().all() as string[]);
      seedEffects(sqlite, { count: 1, status: "unknown", serverId: c.serverId });
      const id = (sqlite.prepare("SELECT id FROM external_tool_effects").pluck().all() as string[]).find((e) => !before.has(e))!;
      effectIds.set(c.serverId, id);
    }
    const deadline = Date.now() + 180_000;
    const looked = sqlite.prepare("SELECT count(DISTINCT effect_id) FROM effect_reconciliations").pluck();
    while ((looked.get() as number) < cases.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    sqlite.close();
    // the hook bundles and binds 22 adapters and waits for their lookups: far beyond the default 10 s hook bound on a busy machine
  }, 240_000);

  afterAll(async () => {
    probing = false;
    await probe;
    await api?.close();
    for (const key of Object.keys(SECRETS)) if (savedEnv[key] === undefined) delete process.env[key];
    rmSync(dir, { recursive: true, force: true });
  });

  it("each attack is refused or contained, and the effect stays unknown with the expected reason", async () => {
    // every attack's result in one table, compared whole (a failure shows each attack that went astray)
    const seen: Record<string, string> = {};
    const expected: Record<string, string> = {};
    for (const c of cases) {
      const id = effectIds.get(c.serverId)!;
      const res = await fetch(`${api.url}/api/operator/effects/${id}`, {
        headers: { authorization: `Bearer ${SECRETS.MOSOO_OPERATOR_TOKEN}` },
      });
      const shown = (await res.json()) as {
        status: string;
        resolution: string | null;
        reconciliations: Array<{ outcome: string; reasonCode: string | null }>;
      };
      const first = shown.reconciliations[0];
      seen[c.what] = `${shown.status}/${shown.resolution} ${first?.outcome}/${first?.reasonCode}`;
      // all it found to encode is the credential its own binding names (the API's are not there)
      const loot = Buffer.from(first?.reasonCode?.slice(1) ?? "", "hex").toString();
      const reason =
        c.attack === "loot_in_reason_code" && loot.length > 0 && PROVIDER_TOKEN.startsWith(loot) ? first?.reasonCode : c.reason;
      expected[c.what] = `unknown/null still_unknown/${reason}`;
    }
    process.stdout.write(
      `${Object.entries(seen)
        .map(([what, result]) => `${what} → ${result}`)
        .join("\n")}\n`,
    );
    expect(seen).toEqual(expected);
  });

  it("what each act reached: only the binding's env, nothing written, stdout/stderr tagged in the log", () => {
    const probes = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l["msg"] === "sandbox.probe");
    const env = probes.find((p) => p["attack"] === "env")!;
    expect(env["env"]).toEqual({ PROVIDER_TOKEN: "[redacted]" });
    expect(probes.find((p) => p["attack"] === "proc_environ")!["result"]).toBe("ERR_ACCESS_DENIED");
    // the in-process guard answers first; the permission model below it refuses too (next describe)
    expect(probes.find((p) => p["attack"] === "addon")!["result"]).toBe("process.dlopen is not available to adapter code");
    expect(existsSync(join(API_DIR, "dist", "sandbox-probe.js"))).toBe(false);
    expect(readFileSync(join(API_DIR, "node_modules", "pino", "pino.js"), "utf8")).toBe(installed.pino);
    expect(JSON.parse(readFileSync(join(dir, "bindings.json"), "utf8"))).toHaveProperty("bindings");
    const outputs = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l["msg"] === "adapter.output");
    expect(outputs).toContainEqual(
      expect.objectContaining({ adapterId: "hostile-sandbox", stream: "stdout", line: expect.stringContaining("forged") }),
    );
    expect(outputs).toContainEqual(
      expect.objectContaining({ adapterId: "hostile-sandbox", stream: "stderr", line: "FATAL forged line on stderr" }),
    );
    // the forged line never became a log line of its own
    expect(logLines.some((l) => l.includes('"forged":true') && !l.includes("adapter.output"))).toBe(false);
  });

  it("a binding's credential in a thrown error or a log line is redacted before the text is cut, wherever the cut falls", async () => {
    for (const c of cases.filter((k) => k.attack === "token_in_error")) {
      const res = await fetch(`${api.url}/api/operator/effects/${effectIds.get(c.serverId)!}`, {
        headers: { authorization: `Bearer ${SECRETS.MOSOO_OPERATOR_TOKEN}` },
      });
      const { reconciliations } = (await res.json()) as { reconciliations: Array<{ error: string | null }> };
      const error = reconciliations[0]?.error ?? "";
      expect(error, c.what).toContain("Bearer [redac");
      expect(error, c.what).not.toContain(PROVIDER_TOKEN.slice(0, 8));
    }
    // its log line, cut at 500 characters, kept the credential's place but none of it
    const lines = logLines.filter((l) => l.includes("Authorization: Bearer"));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).not.toContain(PROVIDER_TOKEN.slice(0, 8));
  });

  it("no secret in any log line, stored row or HTTP answer; /health answered throughout", async () => {
    const copy = join(dir, "copy.db");
    copyFileSync(join(dir, "api.db"), copy);
    const sqlite = new Database(copy, { readonly: true });
    const tables = sqlite.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
    const rows = tables.map((t) => JSON.stringify(sqlite.prepare(`SELECT * FROM "${t}"`).all())).join("\n");
    sqlite.close();
    const answers: string[] = [];
    for (const id of effectIds.values())
      answers.push(
        await (
          await fetch(`${api.url}/api/operator/effects/${id}`, { headers: { authorization: `Bearer ${SECRETS.MOSOO_OPERATOR_TOKEN}` } })
        ).text(),
      );
    const hex = (s: string) => Buffer.from(s).toString("hex");
    const forms = (secret: string) => [secret, hex(secret).slice(0, 24), Buffer.from(secret).toString("base64").slice(0, 16)];
    for (const secret of SECRET_VALUES) {
      for (const form of forms(secret)) {
        expect(
          logLines.filter((l) => l.includes(form)),
          `log: ${secret}`,
        ).toEqual([]);
        expect(rows.includes(form), `rows: ${secret}`).toBe(false);
        expect(
          answers.filter((a) => a.includes(form)),
          `answers: ${secret}`,
        ).toEqual([]);
      }
    }
    // the binding's own credential: the adapter may send it anywhere (it is its own), but the log redacts it
    expect(logLines.filter((l) => l.includes(PROVIDER_TOKEN))).toEqual([]);
    // the operator route refused every credential the adapter found: no audit row, no operator resolution
    expect(rows).not.toContain("trusted-admin");
    expect(health.failed).toEqual([]);
    expect(health.ok).toBeGreaterThan(0);
  });
});

describe("the permission model alone, without the in-process guard (the boundary is the operating system's)", () => {
  it("refuses reads outside the allowed paths, writes, child processes, workers and native addons; the env is empty", () => {
    const code = `
      const fs = require("node:fs"), out = {};
      const t = (k, f) => { try { f(); out[k] = "allowed"; } catch (e) { out[k] = e.code; } };
      t("read", () => fs.readFileSync(${JSON.stringify(join(API_DIR, "package.json"))}));
      t("environ", () => fs.readFileSync("/proc/self/environ"));
      t("write", () => fs.writeFileSync(${JSON.stringify(join(tmpdir(), "mosoo-sandbox-probe"))}, "x"));
      t("spawn", () => require("node:child_process").spawnSync("true"));
      t("worker", () => new (require("node:worker_threads").Worker)("0", { eval: true }));
      t("addon", () => process.dlopen({ exports: {} }, ${JSON.stringify(SO)}));
      out.env = Object.keys(process.env);
      process.stdout.write(JSON.stringify(out));`;
    const run = spawnSync(process.execPath, [...sandboxNodeArgs({ readable: [dirname(SO)], heapMb: 32 }), "-e", code], {
      env: {},
      encoding: "utf8",
    });
    expect(JSON.parse(run.stdout)).toEqual({
      read: "ERR_ACCESS_DENIED",
      environ: "ERR_ACCESS_DENIED",
      write: "ERR_ACCESS_DENIED",
      spawn: "ERR_ACCESS_DENIED",
      worker: "ERR_ACCESS_DENIED",
      addon: "ERR_DLOPEN_DISABLED",
      env: [],
    });
  });
});

/** A free TCP port on 127.0.0.1 (bound and released). */
async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}
