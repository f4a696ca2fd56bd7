/** The API's HTTP app (hono) on a test world's runtime, with a silent logger; call it with `app.request(...)`. */
import pino from "pino";
import { createHttpApp, type HttpAppOptions } from "../../src/entry/http/app.js";
import type { Runtime } from "./world.js";

/** The hono app the API serves, on `runtime`, with `opts` (credentials, operator token, console). */
export function buildHttpApp(runtime: Runtime, opts: HttpAppOptions = {}): ReturnType<typeof createHttpApp> {
  return createHttpApp(runtime, pino({ level: "silent" }), opts);
}

/** The app type, for `let app: HttpApp` in tests. */
export type HttpApp = ReturnType<typeof createHttpApp>;
