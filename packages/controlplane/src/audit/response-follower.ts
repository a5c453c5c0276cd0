import type { ServerResponse } from 'node:http';
import { parseJson } from './event.js';
import type { RequestAudit } from './request-audit.js';

/** A response body larger than this is not copied into a RequestResponse event. */
const maxLoggedResponseBytes = 4 * 1024 * 1024;

/**
 * Follows a response for its audit: the headers going out start a long-running response
 * (ResponseStarted); its end (or the client going away) completes it (ResponseComplete). The body is
 * kept, bounded, when the event will carry it (RequestResponse) or an error's Status will be read.
 */
export function followResponse(audit: RequestAudit, res: ServerResponse, longRunning: boolean): void {
  const chunks: Buffer[] = [];
  let bytes = 0;
  let capturing = false;
  const capture = (chunk: unknown) => {
    if (!capturing || bytes > maxLoggedResponseBytes) return;
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.isBuffer(chunk) ? chunk : undefined;
    if (!buf) return;
    bytes += buf.length;
    chunks.push(buf);
  };
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
  res.writeHead = ((...args: unknown[]) => {
    const result = writeHead(...args);
    capturing = !longRunning && (audit.config.level === 'RequestResponse' || res.statusCode >= 300);
    if (longRunning) audit.started(res.statusCode);
    return result;
  }) as typeof res.writeHead;
  if (!longRunning) {
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      capture(chunk);
      return write(chunk, ...rest);
    }) as typeof res.write;
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      if (typeof chunk !== 'function') capture(chunk);
      return end(chunk, ...rest);
    }) as typeof res.end;
  }
  // Also logged when the client goes away first: the request did complete, as far as the server goes.
  res.once('close', () => {
    const json =
      chunks.length > 0 &&
      bytes <= maxLoggedResponseBytes &&
      String(res.getHeader('content-type') ?? '').includes('json');
    audit.finish(res.statusCode, json ? parseJson(Buffer.concat(chunks)) : undefined);
  });
}
