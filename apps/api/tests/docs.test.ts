/**
 * The docs stay true: every generated doc (configuration, errors, performance, the OpenAPI document) is what
 * `npm run docs:generate` writes now; every relative link of README.md and docs/*.md resolves to a file (and to a
 * heading, when it names an anchor); no doc speaks of work items by number; the README stays a ten-minute read.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { generatedDocs, publishHistoryRuns, REPO_ROOT } from "../scripts/docs/generated-docs.js";
import { renderPerformance, type PublishedRun } from "../scripts/docs/performance.doc.js";
import { ERROR_NOTES } from "../scripts/docs/error-notes.js";
import { errorCodeGroups } from "../scripts/docs/errors.doc.js";
import { BAD_INPUT_CODES } from "../src/entry/cli/effects-cli.exit-codes.js";

const DOCS = [
  join(REPO_ROOT, "README.md"),
  ...readdirSync(join(REPO_ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => join(REPO_ROOT, "docs", f)),
];

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a markdown file's headings (outside fenced blocks). */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const m = !fenced && /^#{1,6} (.*)$/.exec(line);
    if (m) anchors.add(anchorOf(m[1]!));
  }
  return anchors;
}

describe("generated docs", () => {
  it.each(generatedDocs().map((d) => [relative(REPO_ROOT, d.file), d] as const))("%s is fresh (npm run docs:generate)", (_name, doc) => {
    expect(existsSync(doc.file), `${doc.file} is missing: run npm run docs:generate`).toBe(true);
    expect(readFileSync(doc.file, "utf8") === doc.text, `${doc.file} is stale: run npm run docs:generate`).toBe(true);
  });

  it("errors.md has a hand-written next step for every code of the code lists, and none for a code no list holds", () => {
    const codes = errorCodeGroups().flatMap((g) => g.codes.map((c) => c.code));
    expect(codes.length).toBeGreaterThan(50);
    for (const code of codes) expect(ERROR_NOTES[code]?.next, code).toMatch(/\S/);
    expect(Object.keys(ERROR_NOTES).sort()).toEqual([...new Set(codes)].sort());
  });

  it("every code after which the operator CLI exits 2 is a documented code", () => {
    const codes = new Set(errorCodeGroups().flatMap((g) => g.codes.map((c) => c.code)));
    expect([...BAD_INPUT_CODES].filter((code) => !codes.has(code))).toEqual([]);
  });
});

/** The files below `dir` (absolute paths), node_modules skipped. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === "node_modules") return [];
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** A dotted error code (`config.invalid`, `setup.failed`). */
const CODE = "[a-z][a-z_]*\\.[a-z][a-z_]*";

/**
 * The error codes the programs print, read from their sources: the `npm run` scripts of every package.json
 * (`'<program>: <code>: ...'`), and the program entry files (`*.main.ts`, `main.ts`) and the operator CLI's
 * files (apps/api/src/entry/cli/): a string that starts with `<code>: `, `<program>: <code>: ` or
 * `<program>: warning: <code>: `, and the code a `CliFailure` or `OperatorClientError` is made with. Keyed by code, the files.
 */
function printedCodes(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const note = (code: string, file: string) => found.set(code, [...new Set([...(found.get(code) ?? []), relative(REPO_ROOT, file)])]);
  const packages = ["apps", "packages"].flatMap((d) => readdirSync(join(REPO_ROOT, d)).map((p) => join(REPO_ROOT, d, p)));
  const packageFiles = [REPO_ROOT, ...packages].map((p) => join(p, "package.json")).filter((f) => existsSync(f));
  for (const file of packageFiles) {
    const scripts = Object.values((JSON.parse(readFileSync(file, "utf8")) as { scripts?: Record<string, string> }).scripts ?? {});
    for (const script of scripts) for (const m of script.matchAll(new RegExp(`[a-z][a-z0-9-]*: (${CODE}): `, "g"))) note(m[1]!, file);
  }
  const sources = packages
    .filter((p) => existsSync(join(p, "src")))
    .flatMap((p) => filesUnder(join(p, "src")))
    .filter((f) => /\/src\/(.*\.main\.ts|main\.ts|entry\/cli\/[^/]+\.ts)$/.test(f));
  const printed = new RegExp(`["'\`](?:[a-z][a-z0-9:-]*: (?:warning: )?)?(${CODE}): `, "g");
  const thrown = new RegExp(`new (?:CliFailure|OperatorClientError)\\(\\s*"(${CODE})"`, "g");
  for (const file of sources) {
    const text = readFileSync(file, "utf8");
    for (const m of [...text.matchAll(printed), ...text.matchAll(thrown)]) note(m[1]!, file);
  }
  return found;
}

describe("history-only bench runs on docs/performance.md", () => {
  const run = (table: string): PublishedRun => ({
    startedAt: "2026-12-03T12-00-00-000Z",
    wallSeconds: 2400,
    quick: false,
    node: "v20",
    cpus: 2,
    store: "sqlite",
    table,
  });
  const header =
    "| scenario | reconciliation | measured | floor / bound | ratio | other | target | met |\n|---|---|---|---|---|---|---|---|";
  const historyRow =
    "| 4 history, store open @ 10000k | on | 4.1 ms | empty store 3.9 ms | 1.05× | file 17000 MB | < 1000 ms and ≤ 1.2× | yes |";

  it("are shown after the published run, each with its run line and table", () => {
    const page = renderPerformance(run(`${header}\n| 1 ledger | on |`), [run(`${header}\n${historyRow}`)]);
    const section = page.indexOf("## History rows at a larger size");
    expect(section).toBeGreaterThan(page.indexOf("| 1 ledger | on |"));
    expect(page.indexOf(historyRow)).toBeGreaterThan(section);
    expect(renderPerformance(run(header))).not.toContain("## History rows at a larger size");
  });

  it("only a run of the history rows is published; anything else is refused and writes nothing", () => {
    const dir = mkdtempSync(join(tmpdir(), "mosoo-docs-history-"));
    try {
      const history = join(dir, "history.json");
      const full = join(dir, "full.json");
      const target = join(dir, "published.json");
      writeFileSync(history, JSON.stringify(run(`${header}\n${historyRow}`)));
      writeFileSync(full, JSON.stringify(run(`${header}\n| 1 ledger, µs/lifecycle @ 0 effects | on |\n${historyRow}`)));
      expect(() => publishHistoryRuns([history, full], target)).toThrow(/docs\.not_history_run: .*full\.json: it has rows other/);
      const refusals: Array<[string, unknown, RegExp]> = [
        ["empty.json", run(header), /docs\.not_history_run: .*empty\.json: its table has no rows/],
        ["quick.json", { ...run(`${header}\n${historyRow}`), quick: true }, /docs\.not_history_run: .*quick\.json: a QUICK run/],
        ["all.json", { ...run(`${header}\n${historyRow}`), store: "all" }, /docs\.not_history_run: .*all\.json: one run per store/],
        ["shape.json", { table: 3 }, /docs\.not_bench_run: .*shape\.json: not a bench result \(startedAt: /],
        ["text.json", "garbage", /docs\.not_bench_run: .*text\.json: Unexpected token/],
      ];
      for (const [name, content, refusal] of refusals) {
        writeFileSync(join(dir, name), typeof content === "string" ? content : JSON.stringify(content));
        expect(() => publishHistoryRuns([join(dir, name)], target)).toThrow(refusal);
      }
      expect(() => publishHistoryRuns([history, history], target)).toThrow(/a second sqlite run/);
      expect(existsSync(target)).toBe(false);
      publishHistoryRuns([history], target);
      expect(JSON.parse(readFileSync(target, "utf8"))).toEqual([run(`${header}\n${historyRow}`)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("docs/errors.md names every code a program prints", () => {
  it("finds the codes of the npm scripts, the program entry files and the operator CLI", () => {
    const codes = printedCodes();
    for (const code of ["setup.failed", "config.invalid", "auth.missing_token", "store.not_found"])
      expect(codes.has(code), code).toBe(true);
  });

  it("every code found is in docs/errors.md", () => {
    const documented = new Set(errorCodeGroups().flatMap((g) => g.codes.map((c) => c.code)));
    const missing = [...printedCodes()].filter(([code]) => !documented.has(code)).map(([code, files]) => `${code} (${files.join(", ")})`);
    expect(missing).toEqual([]);
  });
});

describe("README.md and docs/", () => {
  it.each(DOCS.map((f) => [relative(REPO_ROOT, f), f] as const))("every relative link of %s resolves", (_name, file) => {
    const text = readFileSync(file, "utf8").replace(/^```[\s\S]*?^```$/gm, "");
    const broken: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target!)) continue; // http:, https:, mailto:
      const [path, anchor] = target!.split("#") as [string, string | undefined];
      const abs = path === "" ? file : resolve(dirname(file), path);
      if (!existsSync(abs)) {
        broken.push(`${target} (no file)`);
        continue;
      }
      if (anchor && abs.endsWith(".md") && !anchorsOf(readFileSync(abs, "utf8")).has(anchor)) broken.push(`${target} (no heading)`);
    }
    expect(broken).toEqual([]);
  });

  it.each(DOCS.map((f) => [relative(REPO_ROOT, f), f] as const))(
    "%s names no work item by number (history belongs in git)",
    (_name, file) => {
      expect(readFileSync(file, "utf8").match(/\bissues?[ -]\d+/gi) ?? []).toEqual([]); // ("issue #1" is the fixture tracker's own output)
    },
  );

  it("the README is a ten-minute read (at most 250 lines) and names the two commands", () => {
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    expect(readme.split("\n").length).toBeLessThanOrEqual(250);
    expect(readme).toContain("npm run demo");
    expect(readme).toContain("npm test");
  });
});
