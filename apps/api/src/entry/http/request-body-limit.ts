/** The request body limit that delivers its 413: an oversized body is read and discarded (up to a bound) before the answer. */
import type { Context, Env, MiddlewareHandler } from "hono";

/** Most bytes of an oversized body read and thrown away so the client sees its 413 (64 MiB); past it the connection is cut. */
const MAX_DISCARD_BYTES = 64 * 1024 * 1024;

/** Longest time (ms) spent discarding an oversized body (10 s); past it the 413 is sent and the connection is cut. */
const DISCARD_TIMEOUT_MS = 10_000;

/**
 * Reads the rest of `reader` and drops it, until the body ends, `budget` bytes were dropped, or
 * `timeoutMs` passed (then the reader is cancelled, which ends the request's stream).
 * @returns true when the body was read to its end.
 */
async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>, budget: number, timeoutMs: number): Promise<boolean> {
  let left = budget;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
  });
  try {
    for (;;) {
      const step = await Promise.race([reader.read(), timedOut]);
      if (step === "timeout") break;
      if (step.done) return true;
      left -= step.value.byteLength;
      if (left < 0) break;
    }
    await reader.cancel().catch(() => undefined);
    return false;
  } catch {
    return false; // the client went away mid-body: nothing left to deliver to
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Hono middleware limiting a request body to `maxBytes` (docs/DESIGN.md §10). A body declared by
 * `Content-Length` within the limit passes untouched; a chunked one is read into memory while it is
 * counted and handed on as the request's body. A larger one (declared by
 * `Content-Length`, or counted while a chunked body streams in) is answered 413
 * `request.too_large` with `Connection: close`, but only after the rest of the body was read and
 * discarded (at most {@link MAX_DISCARD_BYTES}, at most {@link DISCARD_TIMEOUT_MS}): closing a
 * socket with unread bytes makes the kernel send a reset, and the client then sees `EPIPE` /
 * `ECONNRESET` instead of the answer. A client that sends more than that bound, or too slowly, gets
 * the 413 on a connection that is then cut (it may see the reset).
 */
export function requestBodyLimit<E extends Env>(maxBytes: number): MiddlewareHandler<E> {
  const tooLarge = (c: Context<E>) =>
    c.json({ error: { code: "request.too_large", message: `the body exceeds ${maxBytes} bytes` } }, 413, { connection: "close" });
  return async (c, next) => {
    const body = c.req.raw.body;
    if (!body) return next();
    const length = c.req.header("content-length");
    if (length !== undefined && !c.req.raw.headers.has("transfer-encoding")) {
      // The HTTP parser holds a body to its declared length: within the limit it streams on untouched.
      if (!(Number.parseInt(length, 10) > maxBytes)) return next();
      await discardRest(body.getReader(), MAX_DISCARD_BYTES, DISCARD_TIMEOUT_MS);
      return tooLarge(c);
    }
    const reader = body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await discardRest(reader, MAX_DISCARD_BYTES - size, DISCARD_TIMEOUT_MS);
        return tooLarge(c);
      }
      chunks.push(value);
    }
    c.req.raw = new Request(c.req.raw, { body: Buffer.concat(chunks, size) });
    return next();
  };
}
