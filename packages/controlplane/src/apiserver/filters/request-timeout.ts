/**
 * Upstream's timeout filter for requests that are not long-running (--request-timeout, default 60 s): when
 * the time is up and no answer was started, the client gets 504 "Timeout: request did not complete within
 * requested timeout - context deadline exceeded" and the connection is closed (a client still dribbling its
 * body loses it); an answer already under way is cut off. On the server's clock, so tests run it on
 * virtual time. Whatever the handler does later finds the response ended and writes nothing.
 */
import type { ServerResponse } from 'node:http';
import type { Clock } from '@nodelet/kernel';
import { send } from '../responses.js';
import { ApiError } from '../status.js';

export const defaultRequestTimeoutMs = 60_000;

export const requestTimedOut = () =>
  new ApiError(
    504,
    'Timeout',
    'Timeout: request did not complete within requested timeout - context deadline exceeded',
  );

/** Starts the timeout of one request; it ends by itself when the answer is finished or the client leaves. */
export function startRequestTimeout(clock: Clock, timeoutMs: number, res: ServerResponse): void {
  if (timeoutMs <= 0) return;
  const deadline = clock.deadline(timeoutMs);
  const done = () => deadline.cancel();
  res.once('finish', done);
  res.once('close', done);
  deadline.signal.addEventListener(
    'abort',
    () => {
      if (res.writableEnded || res.destroyed) return;
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.setHeader('connection', 'close');
      send(res, 504, requestTimedOut().toStatus());
    },
    { once: true },
  );
}
