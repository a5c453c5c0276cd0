/**
 * Slow clients (slowloris): a client that sends its headers or its body a byte at a time holds a
 * connection, and the memory of what it sent, until Node's HTTP server gives up on it — after
 * `headersMs` without complete headers, or `requestMs` without the complete request; it is then answered
 * 408 and closed (hardenHttpServer writes the message). Node checks every `checkIntervalMs`. Upstream's
 * secure serving gives headers 32 s (ReadHeaderTimeout); the whole request gets the request timeout.
 * Long-running answers are not bounded by these: they only time the request's arrival.
 */
export interface SlowClientTimeouts {
  headersMs: number;
  requestMs: number;
  checkIntervalMs: number;
}

export function slowClientTimeouts(
  given: Partial<SlowClientTimeouts> | undefined,
  requestTimeoutMs: number,
): SlowClientTimeouts {
  const headersMs = given?.headersMs ?? 32_000;
  // Node refuses a request timeout shorter than the headers' (0 turns it off).
  const requestMs = given?.requestMs ?? (requestTimeoutMs > 0 ? Math.max(requestTimeoutMs, headersMs) : 0);
  return { headersMs, requestMs, checkIntervalMs: given?.checkIntervalMs ?? 5_000 };
}
