import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { Clock } from '@nodelet/kernel';
import { resourceOf, toApiError } from './api-errors.js';
import type { ObjectList } from './kube-api.js';

/**
 * One GET of a JSON document with the TLS options and headers a kubeconfig gave (`applyToHTTPSOptions`):
 * the body is read as one buffer and parsed once. A status other than 200 rejects with `{ code, body }`
 * (what `toApiError` reads), a network failure or an abort with the error itself.
 */
export function getJson(url: URL, options: RequestOptions & { signal?: AbortSignal }): Promise<unknown> {
  const request = url.protocol === 'http:' ? httpRequest : httpsRequest;
  const headers = { ...(options.headers as Record<string, string>), accept: 'application/json' };
  return new Promise((resolve, reject) => {
    const req = request(url, { ...options, method: 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) return reject({ code: res.statusCode ?? 0, body });
        try {
          resolve(JSON.parse(body));
        } catch (err) {
          reject(err);
        }
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * One list: `getJson` under a deadline of `timeoutMs` on the clock, tracked as I/O; the items and the
 * list's resource version, or an `ApiError` naming the request (`list <resource>`).
 */
export async function getList<T>(
  clock: Clock,
  timeoutMs: number,
  server: string,
  url: URL,
  options: () => Promise<RequestOptions> | RequestOptions,
): Promise<ObjectList<T>> {
  const deadline = clock.deadline(timeoutMs);
  try {
    const response = getJson(url, { ...(await options()), signal: deadline.signal });
    await clock.track(response.then(noop, noop));
    const list = (await response) as { items?: T[] | null; metadata?: { resourceVersion?: string } };
    return { items: list.items ?? [], resourceVersion: list.metadata?.resourceVersion ?? '' };
  } catch (err) {
    throw toApiError(err, server, `list ${resourceOf(url.pathname)}`);
  } finally {
    deadline.cancel();
  }
}

const noop = () => undefined;
