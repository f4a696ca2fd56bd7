// `node scripts/build.mjs [api] [driver]`: compiles the API's and the Driver's process entries to
// plain JavaScript with esbuild (docs/performance-notes.md "Compiled start": `npm start`, the Driver and the bench run
// compiled code, no TypeScript loader in the main thread). Run lazily by those scripts before they
// start (about half a second), so `dist/` never runs stale code; `dist/` is not committed.
//
// - The workspace packages (`@mosoo/*`) export TypeScript sources: they are bundled in.
// - A third-party package the app itself depends on (found in `apps/<app>/node_modules`) stays an
//   import (external): native better-sqlite3, esbuild, pino, drizzle... are loaded
//   from node_modules as before. One a workspace package alone depends on is bundled.
// - `import.meta.url` in a source file is rewritten to that source file's own URL (relative to the
//   output folder), so paths a module derives from its location (the migrations folder, the console
//   assets, the API's package.json) stay the same compiled as under tsx.
// - Every output file defines `MOSOO_DIST_URL` (its own folder's URL): code that must start a
//   compiled sibling (the bench's child processes) reads it through
//   `apps/api/src/platform/compiled-entry.ts`.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Entry points per app (paths relative to the app folder); every output lands flat in `<app>/dist/`. */
const APPS = {
  api: {
    dir: join(ROOT, "apps", "api"),
    entries: {
      main: "src/main.ts",
      "run-benchmarks.main": "bench/run-benchmarks.main.ts",
      "scenario.main": "bench/scenario.main.ts",
      "seed-unknown.main": "bench/seed-unknown.main.ts",
    },
  },
  driver: {
    dir: join(ROOT, "apps", "driver"),
    entries: { main: "src/main.ts" },
  },
};

/** The package name of a bare import specifier (`@scope/name/sub` → `@scope/name`), or null for a relative, absolute or `node:` one. */
function packageName(spec) {
  if (spec.startsWith(".") || spec.startsWith("/") || spec.startsWith("node:")) return null;
  const parts = spec.split("/");
  return spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/** The plugin described at the top: externals from the app's own node_modules, and source-relative `import.meta.url`. */
function appPlugin(appDir, outDir) {
  return {
    name: "mosoo-app",
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, (args) => {
        const name = packageName(args.path);
        if (!name || name.startsWith("@mosoo/")) return undefined;
        if (existsSync(join(appDir, "node_modules", name))) return { path: args.path, external: true };
        return undefined;
      });
      build.onLoad({ filter: /\.(ts|mts)$/ }, (args) => {
        if (args.path.includes(`${"/"}node_modules${"/"}`)) return undefined;
        const source = readFileSync(args.path, "utf8");
        if (!source.includes("import.meta.url")) return undefined;
        const rel = relative(outDir, args.path).split("\\").join("/");
        const contents = source.replaceAll("import.meta.url", `new URL(${JSON.stringify(rel)}, import.meta.url).href`);
        return { contents, loader: "ts" };
      });
    },
  };
}

/**
 * Builds one app's entries into `<app>/dist/`. Each output file is replaced atomically (written
 * beside it, then renamed) and only when its content changed, so a process already running from
 * `dist/` (or a build started at the same moment by another start script) never reads a half-written
 * file; chunks of older builds stay behind unused.
 */
async function buildApp(name) {
  const app = APPS[name];
  const outDir = join(app.dir, "dist");
  const result = await esbuild.build({
    ...commonOptions(app, outDir),
    entryPoints: Object.fromEntries(Object.entries(app.entries).map(([out, src]) => [out, join(app.dir, src)])),
    splitting: true,
    chunkNames: "chunk-[hash]",
  });
  writeOutputs(result.outputFiles);
}

/** The esbuild options every build of `app` shares (see the top of this file). */
function commonOptions(app, outDir) {
  return {
    write: false,
    absWorkingDir: app.dir,
    outdir: outDir,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    sourcemap: true,
    logLevel: "warning",
    banner: {
      js: [
        'import { createRequire as __mosooCreateRequire } from "node:module";',
        "const require = __mosooCreateRequire(import.meta.url);",
        'const MOSOO_DIST_URL = new URL(".", import.meta.url).href;',
      ].join("\n"),
    },
    plugins: [appPlugin(app.dir, outDir)],
  };
}

/** Writes each output file atomically, only when its content changed (see {@link buildApp}). */
function writeOutputs(outputFiles) {
  for (const file of outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    if (existsSync(file.path) && readFileSync(file.path).equals(file.contents)) continue;
    const tmp = `${file.path}.${process.pid}.tmp`;
    writeFileSync(tmp, file.contents);
    renameSync(tmp, file.path);
  }
}

const requested = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const unknown = requested.filter((a) => !(a in APPS));
if (unknown.length > 0) {
  process.stderr.write(`build.invalid: unknown app ${unknown.join(", ")}; one of ${Object.keys(APPS).join(", ")}\n`);
  process.exit(2);
}
try {
  for (const name of requested.length > 0 ? requested : Object.keys(APPS)) await buildApp(name);
} catch (err) {
  process.stderr.write(`build.failed: ${err instanceof Error ? err.message.split("\n")[0] : String(err)}\n`);
  process.exit(1);
}
