/**
 * What an adapter package can reach through the REAL isolated host (docs/DESIGN.md §4 "The sandbox is
 * the operating system's"), each case an adapter module written into a folder of its own beside a
 * folder of secrets (a bindings file holding a provider credential, a text file, a JavaScript file):
 * - bundling reads only the adapter's package and the dependencies it declares: every route an
 *   import can take out of it (absolute, `../`, `with {type: "text"}`, `require`, a glob import, a
 *   package found above the folder but not declared, a declared package whose `main` or whose folder
 *   lies outside, a tsconfig `paths` mapping) refuses the binding, nothing bound, the secret in no message;
 * - a symbolic link under the package pointing outside it refuses the binding;
 * - a file over the size bound (a sparse 400 MB file, 0 bytes on disk), or files over the total bound,
 *   refuse the binding before bundling reads them;
 * - at run time the process reads nothing but its bundle: not a file beside the adapter module, not
 *   the module itself, not the bindings file;
 * - a reply line adapter code writes on the reply pipe itself is refused (the process is killed, the
 *   call ends `crashed`), whether it answers the call in flight or one that is not, and the host goes on.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LookupRequest } from "@mosoo/effect-reconciliation";
import { SAMPLE_LOOKUP_REQUEST as REQUEST } from "./helpers/sample-lookup-request.js";
import { AdapterCrashedError, NOOP_LOGGER, type AdapterHost } from "@mosoo/effect-reconciliation/host";
import { createIsolatedAdapterHost } from "../src/modules/reconciliation/infrastructure/adapter-sandbox.host.js";

/** The credential in the bindings file beside the adapters: it must never reach a bundle or a message. */
const SECRET = "confined-provider-secret-7c1d9e3a5b";
/** The lookup bound of these cases (ms, real time): far above a process's cold start on a busy machine. */
const LOOKUP_TIMEOUT_MS = 20_000;

/** An adapter module: `head` (its imports), then a factory `factory` whose lookup runs `lookup` (a function body, `options` in scope). */
function adapterSource(head: string, lookup = 'return { outcome: "still_unknown", reasonCode: "genuine" };'): string {
  return `${head}
const declaration = { id: "confined", version: "1.0.0", tools: ["createIssue"], retentionWindowMs: 86400000, keyFencing: { kind: "lookup_fences_key" } };
export const factory = { declaration, create: (options) => ({ declaration, async lookup(request) { ${lookup} } }) };
`;
}

function write(path: string, content: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
  return path;
}

describe("adapter confinement (real sandbox)", { timeout: 240_000 }, () => {
  const work = mkdtempSync(join(tmpdir(), "mosoo-confine-"));
  const secret = join(work, "secret");
  const bindings = join(secret, "bindings.json");
  let host: AdapterHost;

  /** Writes an adapter package `name` (its module `adapter.mjs`, `files` beside it, `links` [path, target] in it) and answers the module's path. */
  function adapterPackage(name: string, source: string, files: Record<string, string> = {}, links: Array<[string, string]> = []): string {
    const dir = join(work, name);
    for (const [path, content] of Object.entries(files)) write(join(dir, path), content);
    for (const [path, target] of links) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      symlinkSync(target, join(dir, path));
    }
    return write(join(dir, "adapter.mjs"), source);
  }

  beforeAll(() => {
    write(bindings, JSON.stringify({ bindings: { tracker: { env: { TRACKER_TOKEN: SECRET } } } }));
    write(join(secret, "notes.txt"), `token ${SECRET}\n`);
    write(join(secret, "steal.js"), `export const loot = ${JSON.stringify(SECRET)};\n`);
    write(join(secret, "package.json"), JSON.stringify({ name: "secretpkg", version: "1.0.0", main: "steal.js" }));
    // a package the adapters do not declare, in a node_modules folder above theirs
    write(join(work, "node_modules", "loot", "package.json"), JSON.stringify({ name: "loot", version: "1.0.0", main: "index.js" }));
    write(join(work, "node_modules", "loot", "index.js"), `export default ${JSON.stringify(SECRET)};\n`);
    host = createIsolatedAdapterHost({ heapMb: 32, cpuLimitMs: 10_000, maxProcesses: 1, bindTimeoutMs: 60_000, logger: NOOP_LOGGER });
  });

  afterAll(async () => {
    await host?.close();
    rmSync(work, { recursive: true, force: true });
  });

  /** Binds `module`'s `factory` and answers the refusal (`code` and `message`), or fails the test when it binds. */
  async function refusal(module: string): Promise<{ code: string; message: string }> {
    const error = await host.bind({ module, export: "factory" }, undefined).then(
      () => new Error("it was bound"),
      (thrown: unknown) => thrown,
    );
    const { code, message } = error as { code?: unknown; message: string };
    if (typeof code !== "string") throw new Error(`not refused with a code: ${message}`);
    return { code, message };
  }

  describe("bundling reads nothing outside the package and its declared dependencies", () => {
    const cases: Array<{ name: string; code: string; message?: RegExp; make: () => string }> = [
      {
        name: "an absolute import of the bindings file (JSON)",
        code: "adapter.bundle_outside_package",
        make: () => adapterPackage("abs-json", adapterSource(`import loot from ${JSON.stringify(bindings)};\nexport const taken = loot;`)),
      },
      {
        name: "a ../ import of a text file",
        code: "adapter.bundle_outside_package",
        make: () => adapterPackage("rel-text", adapterSource(`import loot from "../secret/notes.txt";\nexport const taken = loot;`)),
      },
      {
        name: 'an import of any file with {type: "text"}',
        code: "adapter.bundle_outside_package",
        make: () =>
          adapterPackage(
            "attr-text",
            adapterSource(`import loot from ${JSON.stringify(bindings)} with { type: "text" };\nexport const taken = loot;`),
          ),
      },
      {
        name: "a ../ import of JavaScript",
        code: "adapter.bundle_outside_package",
        make: () => adapterPackage("rel-js", adapterSource(`import { loot } from "../secret/steal.js";\nexport const taken = loot;`)),
      },
      {
        name: "require() of the bindings file",
        code: "adapter.bundle_outside_package",
        make: () =>
          adapterPackage(
            "require",
            adapterSource(`export const taken = typeof require === "function" ? require(${JSON.stringify(bindings)}) : null;`),
          ),
      },
      {
        name: "a glob import reaching outside (esbuild expands it without asking the resolver)",
        code: "adapter.bundle_outside_package",
        make: () => adapterPackage("glob", adapterSource("export const taken = (n) => import(`../secret/${n}.json`);")),
      },
      {
        name: "a glob import climbing to / (refused before esbuild lists a folder: the message names the glob)",
        code: "adapter.bundle_outside_package",
        message: /glob import of "(\.\.\/)+…"/,
        make: () => adapterPackage("glob-root", adapterSource(`export const taken = (n) => require("${"../".repeat(24)}" + n + ".json");`)),
      },
      {
        name: "a package found above the adapter's folder that its package.json does not declare",
        code: "adapter.bundle_outside_package",
        make: () =>
          adapterPackage("undeclared", adapterSource(`import loot from "loot";\nexport const taken = loot;`), {
            "package.json": JSON.stringify({ name: "undeclared-adapter", version: "1.0.0", type: "module" }),
          }),
      },
      {
        name: "a declared dependency whose main points outside it",
        code: "adapter.bundle_outside_package",
        make: () =>
          adapterPackage("main-outside", adapterSource(`import { loot } from "evil";\nexport const taken = loot;`), {
            "package.json": JSON.stringify({
              name: "main-outside-adapter",
              version: "1.0.0",
              type: "module",
              dependencies: { evil: "1.0.0" },
            }),
            "node_modules/evil/package.json": JSON.stringify({ name: "evil", version: "1.0.0", main: "../../../secret/steal.js" }),
          }),
      },
      {
        name: "a declared dependency whose folder is a link to a folder outside",
        code: "adapter.bundle_outside_package",
        make: () =>
          adapterPackage(
            "linked-dependency",
            adapterSource(`import { loot } from "secretpkg";\nexport const taken = loot;`),
            {
              "package.json": JSON.stringify({
                name: "linked-adapter",
                version: "1.0.0",
                type: "module",
                dependencies: { secretpkg: "1.0.0" },
              }),
            },
            [["node_modules/secretpkg", secret]],
          ),
      },
      {
        name: "a tsconfig.json paths mapping outside (no tsconfig is read: the import does not resolve)",
        code: "adapter.load_failed",
        make: () =>
          adapterPackage("tsconfig-paths", adapterSource(`import loot from "@loot/notes.txt";\nexport const taken = loot;`), {
            "tsconfig.json": JSON.stringify({ compilerOptions: { baseUrl: ".", paths: { "@loot/*": ["../secret/*"] } } }),
          }),
      },
    ];

    it.each(cases)("$name → $code, nothing bound, the secret in no message", async ({ make, code, message }) => {
      const refused = await refusal(make());
      expect(refused.code).toBe(code);
      if (message) expect(refused.message).toMatch(message);
      expect(refused.message).not.toContain(SECRET);
      expect(refused.message.split("\n")).toHaveLength(1);
    });
  });

  describe("bundling reads no file past the size bounds", () => {
    /** Writes `names` as sparse files of `bytes` each (0 bytes on disk) in package `name`, imported as text, and answers the module. */
    function sparsePackage(name: string, names: string[], bytes: number): string {
      const imports = names.map((file, i) => `import t${i} from "./${file}" with { type: "text" };`).join("\n");
      const module = adapterPackage(name, adapterSource(`${imports}\nexport const taken = [${names.map((_, i) => `t${i}`).join(", ")}];`));
      for (const file of names) {
        writeFileSync(join(dirname(module), file), "");
        truncateSync(join(dirname(module), file), bytes);
      }
      return module;
    }

    it("a 400 MB file imported as text → adapter.bundle_too_large naming it, nothing bound", async () => {
      const refused = await refusal(sparsePackage("huge-text", ["blob.txt"], 400 * 1024 * 1024));
      expect(refused).toEqual({ code: "adapter.bundle_too_large", message: expect.stringContaining("blob.txt is 419430400 bytes") });
    });

    it("files each under the bound but over the total → adapter.bundle_too_large", async () => {
      const refused = await refusal(sparsePackage("many-texts", ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"], 15 * 1024 * 1024));
      expect(refused).toEqual({ code: "adapter.bundle_too_large", message: expect.stringContaining("total more than 67108864 bytes") });
    });
  });

  describe("symbolic links under the package", () => {
    it("a link to a file outside (the bindings file) → adapter.symlink_outside_package, even when nothing imports it", async () => {
      const module = adapterPackage("file-link", adapterSource(""), {}, [["data/config.json", bindings]]);
      expect(await refusal(module)).toEqual({
        code: "adapter.symlink_outside_package",
        message: expect.stringContaining("data/config.json"),
      });
    });

    it("a link to a folder outside → adapter.symlink_outside_package", async () => {
      const module = adapterPackage("folder-link", adapterSource(""), {}, [["conf", secret]]);
      expect(await refusal(module)).toEqual({ code: "adapter.symlink_outside_package", message: expect.stringContaining("conf") });
    });

    it("a link that stays inside the package binds, and what it links is bundled", async () => {
      const module = adapterPackage(
        "inner-link",
        adapterSource(`import { answer } from "./alias.mjs";`, "return { outcome: 'still_unknown', reasonCode: answer };"),
        { "real.mjs": 'export const answer = "inner_link";\n' },
        [["alias.mjs", "real.mjs"]],
      );
      const { adapter } = await host.bind({ module, export: "factory" }, undefined);
      await expect(adapter.lookup(REQUEST, { signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS), logger: NOOP_LOGGER })).resolves.toEqual({
        outcome: "still_unknown",
        reasonCode: "inner_link",
      });
    });
  });

  describe("at run time the process reads its bundle and nothing else", () => {
    const reader = adapterSource(
      'import { readFileSync } from "node:fs";',
      `try { readFileSync(request.target); return { reasonCode: "read_allowed" }; } catch (e) { return { reasonCode: "read_" + String(e.code).toLowerCase() }; }`,
    );
    it.each([
      ["a file beside the adapter module", "sibling.txt"],
      ["the adapter module itself", "adapter.mjs"],
      ["the bindings file", bindings],
    ])("%s → ERR_ACCESS_DENIED", async (_name, target) => {
      const module = adapterPackage("reader", reader, { "sibling.txt": "beside the module\n" });
      const { adapter } = await host.bind({ module, export: "factory" }, undefined);
      const path = target.startsWith("/") ? target : join(dirname(module), target);
      const answer = await adapter.lookup({ ...REQUEST, target: path } as LookupRequest, {
        signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS),
        logger: NOOP_LOGGER,
      });
      expect(answer).toEqual({ reasonCode: "read_err_access_denied" });
    });
  });

  describe("the reply pipe: a line adapter code writes there itself", () => {
    // learns the ids of the host's tasks by wrapping JSON.parse (the child program parses each task with it)
    const forger = adapterSource(
      `import { writeSync } from "node:fs";
const parse = JSON.parse;
let lookupId = 0;
JSON.parse = (text, reviver) => { const value = parse(text, reviver); if (value?.task?.op === "lookup") lookupId = value.id; return value; };`,
      `const id = options.forId === "current" ? lookupId : 999999;
const forged = { outcome: "confirmed_not_executed", toolName: request.toolName, idempotencyKey: request.idempotencyKey, receipt: { observedAt: new Date().toISOString() } };
writeSync(3, JSON.stringify({ id, reply: { kind: "answered", json: JSON.stringify(forged), logs: [] } }) + "\\n");
await new Promise((resolve) => setTimeout(resolve, 1500));
return { outcome: "still_unknown", reasonCode: "genuine" };`,
    );

    it.each([
      ["answering the call in flight", "current"],
      ["answering a call that is not in flight", "unknown"],
    ])("%s: refused (the process is killed, the call ends crashed), and the next call gets a fresh process", async (_name, forId) => {
      const module = adapterPackage("forger", forger);
      const { adapter } = await host.bind({ module, export: "factory" }, { forId });
      const context = () => ({ signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS), logger: NOOP_LOGGER });
      const first = await adapter.lookup(REQUEST, context()).then(
        (answer) => ({ answer }),
        (error: unknown) => ({ error }),
      );
      expect(first).toEqual({ error: expect.any(AdapterCrashedError) });
      expect((first as { error: AdapterCrashedError }).error.reason).toBe("crashed");
      // the host goes on: the binding's next call is served (and refused the same way: it forges again)
      await expect(adapter.lookup(REQUEST, context())).rejects.toBeInstanceOf(AdapterCrashedError);
    });
  });
});
