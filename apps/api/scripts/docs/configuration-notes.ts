/** Hand-written parts of docs/configuration.md: the bindings fields' meanings and the startup rules after the variables' table. */

/** Meaning of each field of one binding in the bindings file (markdown). */
export const BINDING_NOTES: Readonly<Record<string, string>> = {
  adapterId:
    "a built-in adapter: `mcp-convention` (the zero-code adapter for providers that advertise the idempotency convention). Exactly one of `adapterId` or `package`.",
  package:
    'an adapter package `{"module": "<package name or path>", "export": "<factory export>"}`: an installed package resolved from the API\'s dependencies, an absolute path, or a path starting with `./` / `../` relative to the bindings file. Exactly one of `adapterId` or `package`.',
  options:
    'the adapter\'s own options (validated by the adapter at startup: `adapter.invalid_options`), e.g. `{"url": "http://127.0.0.1:4000/mcp"}`.',
  env: "the whole environment of this binding's adapter processes (they start with these variables and no other): at most 32 names, each upper-case letters, digits and `_` (not `MOSOO_*`, `NODE_*`, `LD_*`, `UV_*`), each value at most 8192 characters.",
  tools:
    "the tools the binding covers (each declared by the adapter, named once; default: every tool the adapter declares). A tool left out gets no lookup (`show` says why).",
};

/** The startup rules every variable shares (markdown, links relative to docs/). */
export const CONFIGURATION_FOOTER =
  "## Startup refusals\n\n`MOSOO_HOST` other than a loopback address (`127.0.0.0/8`, `::1`, `localhost`) without any API key\nrefuses to start: `config.invalid: MOSOO_HOST: 0.0.0.0 is not a loopback address; set MOSOO_API_KEYS or MOSOO_API_KEYS_FILE before binding to it`, exit 2.\n\nAn invalid value stops startup with one line naming the variable, e.g.\n`config.invalid: MOSOO_PORT: Too big: expected number to be <=65535 (got \"70000\")`, exit code 2\n(through `npm start`, pnpm reports it as exit 1 and adds its own failure lines; `node apps/api/dist/main.js` after `npm run build`, or `node --import tsx apps/api/src/main.ts`, gives the exact code).\nIntegers are strict decimal digits: `MOSOO_PORT=0x50`, `1e2`, `+80`, ` 80` or `080` are refused\n(`config.invalid: MOSOO_PORT: must be a decimal integer (digits only)`), never read as another number.\nThe variables, the store path and the bindings file are checked before the rest of the API is loaded,\nso an unusable one ends startup within a second or two, e.g.\n`config.invalid: MOSOO_DB_FILE: a store cannot live under /proc (/proc/self/mosoo.db)` or\n`config.invalid: MOSOO_RECONCILIATION_BINDINGS_FILE: is not a regular file (./bindings.fifo)`, exit code 2.\nA `MOSOO_*` name that no Mosoo program reads (the API's, the CLI's and the Driver's variables are\ndeclared together in `packages/contracts/src/env.contract.ts`) is reported on one warning line,\n`config.unknown_variables: no Mosoo program reads MOSOO_PORTT (a typo?)`, and startup goes on.";
