// The API base URLs one Driver may use and the current one: sticky until it fails, then the next in order.
import type { Logger } from "pino";
import type { ApiUnavailableError } from "./api-errors.js";

/**
 * The API base URLs one Driver process may use (every instance of one API deployment, sharing one
 * database: docs/DESIGN.md §11) and the one it uses now. Policy: **sticky until failure**. Every
 * request goes to the current URL; when an attempt there fails with `api.unreachable`, the current
 * URL moves to the next one in the configured order (wrapping around) and stays there until that
 * one fails in turn: no return to the first URL while the second answers, no load spreading. One
 * pool is shared by every client of the process (the `register` client and the token client), so a
 * switch made by the long-poll also moves the heartbeats, and the reverse.
 *
 * A switch is logged once, at `warn`, as `api.failover` with `fromUrl`, `toUrl`, the `route` whose
 * attempt failed, `delivery` and the error. Two requests that fail on the same URL at once move it
 * once (a compare-and-move on the URL that failed).
 */
export class ApiEndpointPool {
  /** The configured URLs, in order (at least one; already normalized by the config: no trailing `/`). */
  readonly urls: readonly string[];
  private index = 0;

  /**
   * @param urls the API base URLs, e.g. `["http://10.0.0.1:8787", "http://10.0.0.2:8787"]`; trailing
   *   slashes are dropped.
   * @param logger where `api.failover` is logged (none: silent).
   * @throws Error when `urls` is empty (the config refuses that before, with `config.invalid`).
   */
  constructor(
    urls: readonly string[],
    private readonly logger?: Logger | undefined,
  ) {
    if (urls.length === 0) throw new Error("ApiEndpointPool needs at least one API URL");
    this.urls = urls.map((url) => url.replace(/\/+$/, ""));
  }

  /** The URL requests go to now. */
  get current(): string {
    return this.urls[this.index] as string;
  }

  /**
   * Records that an attempt on `url` failed with `api.unreachable`: if `url` is still the current
   * URL and there is another one, the current URL becomes the next in order and `api.failover` is
   * logged; otherwise (one URL only, or another request already moved on) nothing changes.
   * @param url the base URL the failed attempt went to.
   * @param route the Driver-protocol route name of that attempt (for the log).
   * @param error its failure.
   */
  reportUnreachable(url: string, route: string, error: ApiUnavailableError): void {
    if (this.urls.length < 2 || this.current !== url) return;
    this.index = (this.index + 1) % this.urls.length;
    this.logger?.warn(
      { route, fromUrl: url, toUrl: this.current, errorCode: error.code, delivery: error.delivery, err: error.message },
      "api.failover",
    );
  }

  /**
   * The URL the next attempt of one fail-over round goes to: the current URL when the round has not
   * tried it yet, else the first untried URL after it in order; `undefined` when the round has tried
   * them all.
   * @param tried the URLs this round already tried.
   */
  nextUntried(tried: ReadonlySet<string>): string | undefined {
    for (let step = 0; step < this.urls.length; step++) {
      const url = this.urls[(this.index + step) % this.urls.length] as string;
      if (!tried.has(url)) return url;
    }
    return undefined;
  }
}
