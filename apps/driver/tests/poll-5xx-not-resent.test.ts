/**
 * A long poll answered 5xx (503 `store.commit_unknown` from the PostgreSQL store, a gateway's 502/504
 * after the API marked a command delivered) may have lost a delivered command: the API never hands a
 * command out again on the connection it was delivered on, so the client must not resend the poll on
 * that connection (the loop reconnects instead, `poll.answer_may_be_lost`; docs/DESIGN.md §3 rule 11).
 */
import { describe, expect, it } from "vitest";
import { DriverApiClient } from "../src/api-client.js";
import { ApiRequestError, ApiUnavailableError } from "../src/api-errors.js";

const TOKEN = "mdt_01JDAAAAAAAAAAAAAAAAAAAAAA_" + "x".repeat(43);
const CONNECTION = "01JDAAAAAAAAAAAAAAAAAAAAAB";
const pollResendRule = (f: ApiUnavailableError | ApiRequestError): boolean => f instanceof ApiUnavailableError && f.delivery === "not_sent";

function fakeApi(firstStatus: number, firstCode: string): { sent: string[]; fetch: typeof fetch } {
  const sent: string[] = [];
  const fetchFn = (async (url: string) => {
    sent.push(String(url));
    if (sent.length === 1)
      return new Response(JSON.stringify({ error: { code: firstCode, message: "answer may be lost" } }), {
        status: firstStatus,
        headers: { "content-type": "application/json", "retry-after": "1" },
      });
    return new Response(JSON.stringify({ command: null }), { status: 200, headers: { "content-type": "application/json" } });
  }) as unknown as typeof fetch;
  return { sent, fetch: fetchFn };
}

describe("nextCommand after a 5xx", () => {
  for (const [status, code] of [
    [503, "store.commit_unknown"],
    [502, "http.502"],
    [504, "http.504"],
  ] as const) {
    it(`a poll answered ${status} ${code} is not resent on the same connection`, async () => {
      const api = fakeApi(status, code);
      const client = new DriverApiClient({
        apiUrls: ["http://api-a.invalid", "http://api-b.invalid"],
        driverToken: TOKEN,
        retry: { retries: 4, minTimeoutMs: 1, maxTimeoutMs: 2 },
        fetch: api.fetch,
      });
      const error = await client
        .call("nextCommand", { query: { connectionId: CONNECTION, waitMs: 0 } }, { resendAfter: pollResendRule })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(api.sent).toHaveLength(1);
      expect(error).toBeInstanceOf(ApiRequestError);
      expect((error as ApiRequestError).status).toBe(status);
    });
  }

  it("without resendAfter an idempotent route is still retried after a 5xx", async () => {
    const api = fakeApi(503, "store.commit_unknown");
    const client = new DriverApiClient({
      apiUrls: ["http://api-a.invalid"],
      driverToken: TOKEN,
      retry: { retries: 4, minTimeoutMs: 1, maxTimeoutMs: 2 },
      fetch: api.fetch,
    });
    await expect(client.call("nextCommand", { query: { connectionId: CONNECTION, waitMs: 0 } })).resolves.toEqual({ command: null });
    expect(api.sent).toHaveLength(2);
  });
});
