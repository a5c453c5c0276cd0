import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { type ProbeContext, type ProbeHandler, type ProbeOutcome, runDeadline } from './probe-handler.js';
import { joinHostPort, MAX_PROBE_OUTPUT_BYTES, resolveContainerPort } from './probe-spec.js';
import { dialError } from './tcp-handler.js';

/**
 * `httpGet`, as upstream's HTTP prober:
 *
 *  - URL `<scheme>://<host>:<port><path>`: host defaults to the pod IP, scheme HTTP or HTTPS (the
 *    server's certificate is not verified), port a number or a named container port;
 *  - headers: `httpHeaders` (repeatable; a `Host` header sets the request's host), plus
 *    `User-Agent: kube-probe/<major.minor>` and `Accept: *\/*` unless given (an `Accept` given empty is
 *    dropped); no keep-alive, no compression;
 *  - the whole exchange — redirects and body included — within `timeoutSeconds`;
 *  - 200–399 is success; the body (read up to 10 KiB) is the output;
 *  - redirects are followed (at most 10) only to the same host name; a redirect elsewhere ends the probe
 *    with that 3xx response: a success with a warning (`Probe terminated redirects, …`);
 *  - any other status fails with `HTTP probe failed with statuscode: <code>`; a transport error fails
 *    with Go's wording (`Get "http://…": dial tcp …: connect: connection refused`).
 */
export const httpGetHandler: ProbeHandler = {
  type: 'httpGet',
  probe: (ctx) => ctx.clock.track(runHttpProbe(ctx), ctx.timeoutMs),
};

const MAX_REDIRECTS = 10;

interface Answer {
  status: number;
  location?: string;
  body: string;
}

async function runHttpProbe(ctx: ProbeContext): Promise<ProbeOutcome> {
  const action = ctx.probe.httpGet!;
  const scheme = (action.scheme || 'HTTP').toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') throw new Error(`unsupported scheme "${action.scheme}"`);
  const port = resolveContainerPort(action.port, ctx.container);
  const host = action.host || ctx.podIP || '127.0.0.1'; // no address at all: the local host, as Go dials it
  const first = probeUrl(scheme, host, port, action.path ?? '');
  const headers = requestHeaders(action.httpHeaders ?? [], ctx.userAgent);

  const deadline = runDeadline(ctx);
  let url = first;
  try {
    for (let redirects = 0; ; redirects++) {
      let answer: Answer;
      try {
        answer = await get(url, headers, deadline.signal);
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        const why = deadline.signal.aborted
          ? 'context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
          : e.syscall === 'connect' || e.code === 'ECONNREFUSED'
            ? `dial tcp ${joinHostPort(url.hostname.replace(/^\[|\]$/g, ''), Number(url.port) || port)}: ${dialError(e)}`
            : dialError(e);
        return { result: 'failure', output: `Get ${JSON.stringify(url.href)}: ${why}` };
      }
      const { status, location, body } = answer;
      if (isFollowedRedirect(status) && location !== undefined) {
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          return { result: 'failure', output: `Get ${JSON.stringify(url.href)}: bad Location header` };
        }
        if (next.hostname === first.hostname && (next.protocol === 'http:' || next.protocol === 'https:')) {
          if (redirects + 1 >= MAX_REDIRECTS) {
            return {
              result: 'failure',
              output: `Get ${JSON.stringify(next.href)}: stopped after ${MAX_REDIRECTS} redirects`,
            };
          }
          url = next;
          continue;
        }
        // Another host: not followed; the 3xx answer stands.
      }
      if (ctx.hook) return { result: 'success', output: body }; // any answer will do for a hook
      if (status >= 200 && status < 400) {
        if (status >= 300) {
          return { result: 'warning', output: `Probe terminated redirects, Response body: ${body}` };
        }
        return { result: 'success', output: body };
      }
      return { result: 'failure', output: `HTTP probe failed with statuscode: ${status}` };
    }
  } finally {
    deadline.cancel();
  }
}

const isFollowedRedirect = (status: number) => [301, 302, 303, 307, 308].includes(status);

/** The probe URL; a path that does not parse is passed along as it is (upstream formatURL). */
export function probeUrl(scheme: string, host: string, port: number, path: string): URL {
  const base = `${scheme}://${joinHostPort(host, port)}`;
  try {
    const u = new URL(path.startsWith('/') || path === '' ? `${base}${path}` : `${base}/${path}`);
    return u;
  } catch {
    return new URL(`${base}/`);
  }
}

/** `httpHeaders` with upstream's User-Agent and Accept defaults; header names compare case-insensitively. */
export function requestHeaders(
  given: readonly { name: string; value: string }[],
  userAgent: string,
): OutgoingHttpHeaders {
  const headers: Record<string, string | string[]> = {};
  const names = new Map<string, string>(); // lower-case → the spelling first given
  for (const { name, value } of given) {
    const key = names.get(name.toLowerCase()) ?? name;
    names.set(name.toLowerCase(), key);
    const before = headers[key];
    headers[key] = before === undefined ? value : [...(Array.isArray(before) ? before : [before]), value];
  }
  if (!names.has('user-agent')) headers['User-Agent'] = userAgent;
  if (!names.has('accept')) headers['Accept'] = '*/*';
  else {
    const key = names.get('accept')!;
    const value = headers[key];
    if (value === '' || (Array.isArray(value) && value.every((v) => v === ''))) delete headers[key];
  }
  return headers;
}

function get(url: URL, headers: OutgoingHttpHeaders, signal: AbortSignal): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const options = {
      method: 'GET',
      headers,
      agent: false as const,
      signal,
      ...(url.protocol === 'https:' ? { rejectUnauthorized: false } : {}),
    };
    const onResponse = (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let settled = false;
      const finish = () => {
        if (settled) return;
        settled = true;
        const location = res.headers.location;
        resolve({ status: res.statusCode ?? 0, location, body: Buffer.concat(chunks).toString('utf8') });
        res.destroy();
      };
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        const take = chunk.subarray(0, MAX_PROBE_OUTPUT_BYTES - size);
        chunks.push(take);
        size += take.length;
        if (size >= MAX_PROBE_OUTPUT_BYTES) finish(); // bounded: the rest is not read
      });
      res.once('end', finish);
      res.once('error', (err) => {
        if (!settled) {
          settled = true;
          reject(err);
        }
      });
      res.once('close', () => {
        if (!signal.aborted) finish();
        else if (!settled) {
          settled = true;
          reject(new Error('aborted'));
        }
      });
    };
    const req =
      url.protocol === 'https:'
        ? httpsRequest(url, options, onResponse)
        : httpRequest(url, options, onResponse);
    req.once('error', reject);
    req.end();
  });
}
