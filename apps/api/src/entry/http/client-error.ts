// The answer to a request Node's HTTP parser refused before the app saw it: the API's JSON error body, not a bare status line.
import type { Duplex } from "node:stream";

/** An error Node's HTTP server reports on `clientError` (`code` is the parser's, e.g. `HPE_HEADER_OVERFLOW`). */
type ParserError = Error & { code?: string };

/**
 * Status and stable code per parser refusal: headers over Node's `--max-http-header-size` (16 KiB by
 * default) are 431 `request.headers_too_large` (RFC 6585 §5), a request not read in time 408
 * `request.timeout`, anything else unparseable 400 `request.invalid`.
 */
function answerFor(code: string | undefined): { status: number; reason: string; code: string; message: string } {
  if (code === "HPE_HEADER_OVERFLOW")
    return {
      status: 431,
      reason: "Request Header Fields Too Large",
      code: "request.headers_too_large",
      message: "the request's headers are larger than the API accepts (16 KiB in all)",
    };
  if (code === "ERR_HTTP_REQUEST_TIMEOUT")
    return { status: 408, reason: "Request Timeout", code: "request.timeout", message: "the request was not received in time" };
  return { status: 400, reason: "Bad Request", code: "request.invalid", message: "the request is not valid HTTP/1.1" };
}

/**
 * Node's `clientError` handler of the API's server: writes `{error: {code, message}}` (the API's error
 * body, `ApiErrorBodySchema`) with the status of the parser's refusal ({@link answerFor}) and closes
 * the connection, as Node's default handler does with an empty body. A socket already reset, no longer
 * writable, or in the middle of sending a response (its headers sent) is only destroyed. Never throws.
 */
export function answerClientError(error: ParserError, socket: Duplex): void {
  // A response already under way on this connection (a console event stream) must not get an answer
  // written into its middle: then the connection is only cut, as Node's own handler does.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (error.code === "ECONNRESET" || !socket.writable || inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  const answer = answerFor(error.code);
  const body = JSON.stringify({ error: { code: answer.code, message: answer.message } });
  socket.end(
    `HTTP/1.1 ${answer.status} ${answer.reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
