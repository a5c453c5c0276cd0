/**
 * The request target (`/api/v1/namespaces/x/pods?labelSelector=…`) checked before anything reads it: not
 * longer than the server takes (414), and every percent-escape in the path and the query well formed (400
 * naming the segment or the parameter) — URLSearchParams would silently turn `labelSelector=%ff` into a
 * replacement character and list everything, and a raw `%ff` reaching a decoder deeper in would throw.
 */
import { ApiError, badRequest } from '../status.js';

/** Longest request target served (upstream has none short of Go's 1 MiB header limit). */
export const defaultMaxUrlBytes = 64 * 1024;

/** Largest request line and headers together, enforced by Node's HTTP parser (answered 431). */
export const maxHeaderBytes = 128 * 1024;

export function parseRequestTarget(target: string | undefined, maxUrlBytes = defaultMaxUrlBytes): URL {
  const raw = target ?? '/';
  if (raw.length > maxUrlBytes) {
    throw new ApiError(
      414,
      'RequestURITooLong',
      `the request URL is ${raw.length} bytes long; the limit is ${maxUrlBytes}`,
    );
  }
  // Prefixed, not resolved against a base: a target of `//x` would be read as the host `x`.
  const url = new URL(`https://localhost${raw.startsWith('/') ? '' : '/'}${raw}`);
  for (const segment of url.pathname.split('/')) {
    if (!segment.includes('%')) continue;
    if (!decodes(segment))
      throw badRequest(`the request path has a malformed percent-encoding in "${segment}"`);
  }
  for (const pair of url.search.slice(1).split('&')) {
    if (!pair.includes('%')) continue;
    const eq = pair.indexOf('=');
    const key = eq < 0 ? pair : pair.slice(0, eq);
    if (!decodes(key))
      throw badRequest(`the query has a parameter name with a malformed percent-encoding: "${key}"`);
    const value = eq < 0 ? '' : pair.slice(eq + 1);
    if (!decodes(value)) {
      throw badRequest(
        `${decodeURIComponent(key.replace(/\+/g, ' '))}: Invalid value: "${value}": malformed percent-encoding`,
      );
    }
  }
  return url;
}

function decodes(text: string): boolean {
  try {
    decodeURIComponent(text.replace(/\+/g, ' '));
    return true;
  } catch {
    return false;
  }
}
