// The design's dependency rules as a check (docs/ARCHITECTURE.md "Dependency rules"; docs/DESIGN.md).
// `node scripts/test.mjs` (npm test) runs `depcruise apps packages --config .dependency-cruiser.cjs` and
// counts it as one test: any violation fails the run. Every rule is an error; none is a warning.
//
// The modules of apps/api/src/modules, lowest first:
//   ledger                      the effect ledger (effects and attempts); the owned-table ports through which
//                               its transactions write runs' and drivers' rows (implemented by those modules)
//   drivers, runs               Driver instances, the command queue, finalization, the sweep; the run API,
//                               sessions, runs and run events
//   reconciliation              lookups of unknown effects (implements the ledger's EffectReconciliationPort
//                               and the drivers' ReconciliationSweepPort; wired by the composition root)
//   operator                    operator actions, compensation, their audit
//   console                     the operator console's sessions and change feed
// A module imports only modules below it. Below every module: apps/api/src/kernel/ (the user-facing
// error type, the RuntimeContext) and apps/api/src/platform/ (store, clock, logger, wake-ups).
// apps/api/src/composition-root.ts, the HTTP/CLI entry points (apps/api/src/entry/), config and the
// process entry files sit on top.

/** `^apps/api/src/modules/<name>/` for each name given. */
const modules = (...names) => `^apps/api/src/modules/(${names.join("|")})/`;

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment:
        "No import cycle in production code, type-only imports included (a cycle makes the layers meaningless and the load order fragile).",
      from: { path: "^(apps|packages)/[^/]+/src/" },
      to: { circular: true },
    },
    {
      name: "no-circular-outside-src",
      severity: "error",
      comment: "No runtime import cycle in tests, benches and scripts either (a test helper may name a type of the helper that uses it).",
      from: { pathNot: "^(apps|packages)/[^/]+/src/" },
      to: { circular: true, viaOnly: { dependencyTypesNot: ["type-only"] } },
    },
    {
      name: "domain-imports-no-layer",
      severity: "error",
      comment:
        "A module's domain/ is pure: it imports no application/ or infrastructure/ code, no platform, no entry point, no config, and of the kernel only the error type.",
      from: { path: "^apps/api/src/modules/[^/]+/domain/" },
      to: {
        path: [
          "^apps/api/src/modules/[^/]+/(application|infrastructure)/",
          "^apps/api/src/(platform|entry|config)/",
          "^apps/api/src/kernel/(?!user-facing-error[.]ts$)",
          "^apps/api/src/[^/]+\\.ts$",
        ],
      },
    },
    {
      name: "ledger-is-lowest",
      severity: "error",
      comment:
        "The ledger is the lowest module: it imports no other module (it reaches reconciliation only through its EffectReconciliationPort).",
      from: { path: modules("ledger") },
      to: { path: modules("drivers", "runs", "reconciliation", "operator", "console") },
    },
    {
      name: "drivers-above-ledger-only",
      severity: "error",
      comment: "drivers imports only the ledger (reconciliation reaches it through ports wired by the composition root).",
      from: { path: modules("drivers") },
      to: { path: modules("runs", "reconciliation", "operator", "console") },
    },
    {
      name: "runs-above-ledger-only",
      severity: "error",
      comment: "runs imports only the ledger.",
      from: { path: modules("runs") },
      to: { path: modules("drivers", "reconciliation", "operator", "console") },
    },
    {
      name: "reconciliation-above-ledger-only",
      severity: "error",
      comment:
        "reconciliation imports only the ledger; it never imports the Driver side (it implements the ports the ledger and drivers own).",
      from: { path: modules("reconciliation") },
      to: { path: modules("drivers", "runs", "operator", "console") },
    },
    {
      name: "operator-above-reconciliation",
      severity: "error",
      comment: "operator imports reconciliation and the ledger, nothing above or beside them.",
      from: { path: modules("operator") },
      to: { path: modules("drivers", "runs", "console") },
    },
    {
      name: "console-module-standalone",
      severity: "error",
      comment: "The console module (sessions, change feed) imports no other module; the HTTP adapter wires it.",
      from: { path: modules("console") },
      to: { path: modules("ledger", "drivers", "runs", "reconciliation", "operator") },
    },
    {
      name: "modules-import-no-top",
      severity: "error",
      comment:
        "Modules never import what sits on top of them: the composition root, the HTTP/CLI entry points, config, the process entry files.",
      from: { path: "^apps/api/src/modules/" },
      to: { path: ["^apps/api/src/(entry|config)/", "^apps/api/src/[^/]+\\.ts$"] },
    },
    {
      name: "kernel-below-modules",
      severity: "error",
      comment:
        "The kernel (the user-facing error type, the RuntimeContext every service takes) sits below every module: it imports no module, entry point, config or process entry file.",
      from: { path: "^apps/api/src/kernel/" },
      to: { path: ["^apps/api/src/(modules|entry|config)/", "^apps/api/src/[^/]+\\.ts$"] },
    },
    {
      name: "infrastructure-stays-in-its-module",
      severity: "error",
      comment:
        "A module's infrastructure/ (repositories, workers, metrics) is its own: another module reaches its tables only through its application services or a port (the rows the ledger's transactions write but runs and drivers own cross the ledger's owned-table ports, modules/ledger/application/owned-tables.port.ts; the ledger's own effects cross effect-rows.service.ts).",
      from: { path: "^apps/api/src/modules/([^/]+)/" },
      to: { path: "^apps/api/src/modules/[^/]+/infrastructure/", pathNot: "^apps/api/src/modules/$1/" },
    },
    {
      name: "infrastructure-wired-only-at-the-top",
      severity: "error",
      comment:
        "Outside the modules, only the wiring reaches a module's infrastructure/: composition-root.ts (binds the owned-table ports, builds the metrics), server.ts and entry/cli/operator-client.ts (start the isolated adapter host), config/reconciliation-bindings.ts (the built-in adapters).",
      from: {
        path: "^apps/api/src/",
        pathNot: [
          "^apps/api/src/modules/",
          "^apps/api/src/(composition-root|server)[.]ts$",
          "^apps/api/src/entry/cli/operator-client[.]ts$",
          "^apps/api/src/config/reconciliation-bindings[.]ts$",
        ],
      },
      to: { path: "^apps/api/src/modules/[^/]+/infrastructure/" },
    },
    {
      name: "http-goes-through-services",
      severity: "error",
      comment:
        "The HTTP entry points reach the store only through a module's services (application/), never a repository (infrastructure/).",
      from: { path: "^apps/api/src/entry/http/" },
      to: { path: "^apps/api/src/modules/[^/]+/infrastructure/" },
    },
    {
      name: "platform-imports-no-module",
      severity: "error",
      comment:
        "The platform (store, clock, logger) is below the kernel and every module: the schemas take their status lists from @mosoo/contracts.",
      from: { path: "^apps/api/src/platform/" },
      to: { path: ["^apps/api/src/(kernel|modules|entry|config)/", "^apps/api/src/[^/]+\\.ts$"] },
    },
    {
      name: "packages-never-import-apps",
      severity: "error",
      comment: "Packages are below the apps.",
      from: { path: "^packages/" },
      to: { path: "^apps/" },
    },
    {
      name: "contracts-import-nothing-of-ours",
      severity: "error",
      comment: "packages/contracts is the bottom of the workspace: it imports no other package or app of ours.",
      from: { path: "^packages/contracts/src/" },
      to: { path: "^(apps/|packages/(?!contracts/))" },
    },
    {
      name: "effect-reconciliation-has-no-store-no-http-server",
      severity: "error",
      comment: "packages/effect-reconciliation knows no database and serves no HTTP: the API adapts its store to the package.",
      from: { path: "^packages/effect-reconciliation/src/" },
      to: { path: "node_modules/(better-sqlite3|drizzle-orm|hono|@hono)/" },
    },
    {
      name: "effect-reconciliation-author-below-host",
      severity: "error",
      comment:
        "packages/effect-reconciliation: the author's surface (src/author/, the package root) imports nothing of the host's machinery (src/host/) or the kit (src/testing/); the host imports nothing of the kit.",
      from: { path: "^packages/effect-reconciliation/src/(author/|index\\.ts$)" },
      to: { path: "^packages/effect-reconciliation/src/(host|testing)/" },
    },
    {
      name: "effect-reconciliation-host-not-testing",
      severity: "error",
      comment: "packages/effect-reconciliation: the host's machinery (src/host/) imports nothing of the kit (src/testing/).",
      from: { path: "^packages/effect-reconciliation/src/host/" },
      to: { path: "^packages/effect-reconciliation/src/testing/" },
    },
    {
      name: "adapter-packages-use-the-author-surface",
      severity: "error",
      comment:
        "An adapter package's code imports only the root of @mosoo/effect-reconciliation (the author's surface), never its ./host machinery or its ./testing kit (tests may use the kit).",
      from: { path: "^packages/[^/]+-adapter/src/" },
      to: { path: "^packages/effect-reconciliation/src/(host|testing)/" },
    },
    {
      name: "sqlite-driver-only-in-sqlite-store",
      severity: "error",
      comment:
        "Only the SQLite store implementation (apps/api/src/platform/db/sqlite/) knows its driver: services and repositories use the async store port (platform/db/store.port.ts; docs/DESIGN.md §11).",
      from: { path: "^apps/api/src/", pathNot: "^apps/api/src/platform/db/sqlite/" },
      to: { path: "node_modules/(better-sqlite3|@types/better-sqlite3|drizzle-orm/better-sqlite3)/" },
    },
    {
      name: "postgres-driver-only-in-postgres-store",
      severity: "error",
      comment:
        "Only the PostgreSQL store implementation (apps/api/src/platform/db/postgres/) knows its drivers (pg, drizzle-orm/node-postgres, PGlite): services and repositories use the async store port.",
      from: { path: "^apps/api/src/", pathNot: "^apps/api/src/platform/db/postgres/" },
      to: { path: "node_modules/(pg|@types/pg|drizzle-orm/node-postgres|drizzle-orm/pglite|@electric-sql/pglite)/" },
    },
    {
      name: "apps-are-separate",
      severity: "error",
      comment: "An app never imports another app (the API and the Driver share only packages/contracts).",
      from: { path: "^apps/([^/]+)/" },
      to: { path: "^apps/", pathNot: "^apps/$1/" },
    },
    {
      name: "no-test-package-in-production",
      severity: "error",
      comment:
        "Production code never imports a test package (the fixture provider, the e2e harness, the throwaway PostgreSQL server) nor a tests/ folder.",
      from: { path: "^(apps/[^/]+/src|packages/[^/]+/src)/", pathNot: "^packages/(fixture-provider|e2e|test-postgres)/" },
      to: { path: ["^packages/(fixture-provider|e2e|test-postgres)/", "^(apps|packages)/[^/]+/tests/"] },
    },
    {
      name: "no-unresolvable",
      severity: "error",
      comment: "Every relative import resolves (a typo would otherwise hide an edge from every rule above).",
      from: {},
      to: { couldNotResolve: true, pathNot: "^(node:|virtual:)" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // node_modules stay in the graph as leaves (doNotFollow), so rules on third-party imports (the store drivers) can see them
    exclude: { path: ["/dist/", "^(apps|packages)/.*\\.d\\.ts$", "/var/"] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["types", "import", "node", "default"],
      extensions: [".ts", ".tsx", ".mts", ".js", ".mjs", ".cjs", ".json"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
