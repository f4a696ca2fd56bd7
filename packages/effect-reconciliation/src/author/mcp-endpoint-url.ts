// The schema of a provider's MCP endpoint URL in adapter options, refusing ports `fetch` will not connect to.
import { z } from "zod";

/**
 * The ports `fetch` refuses to connect to: the "bad port" list of the WHATWG Fetch standard (§2.9 Port
 * blocking, https://fetch.spec.whatwg.org/#port-blocking), as Node's built-in fetch (undici) applies it,
 * plus port 0, which the standard added since. A request to one fails with an opaque `fetch failed`
 * (cause `bad port`) only when it is sent, so endpoint URLs are checked against this list when they are
 * validated ({@link McpEndpointUrlSchema}).
 */
export const FETCH_BAD_PORTS: ReadonlySet<number> = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117,
  119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636,
  989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/**
 * A provider's MCP endpoint (Streamable HTTP) as an adapter's options name it: an `http:` or `https:`
 * URL whose port `fetch` may connect to. A port on the Fetch bad-port list ({@link FETCH_BAD_PORTS},
 * e.g. 6000, 6665–6669) is refused here, with an issue whose message starts with the stable code
 * `url.fetch_forbidden_port` (the registry reports it as `adapter.invalid_options`), instead of every
 * lookup failing later with `fetch failed`.
 */
export const McpEndpointUrlSchema = z
  .url({ protocol: /^https?$/, error: "url must be an http(s) MCP endpoint" })
  .superRefine((url, ctx) => {
    const port = new URL(url).port;
    if (port !== "" && FETCH_BAD_PORTS.has(Number(port))) {
      ctx.addIssue({
        code: "custom",
        message: `url.fetch_forbidden_port: port ${port} is on the fetch standard's bad-port list, so fetch would refuse every request to it; serve the MCP endpoint on another port`,
      });
    }
  });
