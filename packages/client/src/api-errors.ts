import { errorMessage } from '@nodelet/kernel';
import { ApiError } from './kube-api.js';

/** `services` of `/api/v1/services`, for messages. */
export const resourceOf = (path: string) => path.slice(path.lastIndexOf('/') + 1);

/**
 * A failed request as an ApiError naming it: an HTTP status with the server's Status body (`{ code, body }`,
 * or client-node's ApiException), a network failure, or a timeout.
 */
export function toApiError(err: unknown, server: string, what: string): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { code?: unknown; statusCode?: unknown; body?: unknown; name?: string; type?: string };
  const code = typeof e.code === 'number' ? e.code : typeof e.statusCode === 'number' ? e.statusCode : 0;
  if (code > 0) {
    let status: { reason?: string; message?: string } = {};
    try {
      status = typeof e.body === 'string' ? JSON.parse(e.body) : ((e.body as object) ?? {});
    } catch {
      status = { message: typeof e.body === 'string' ? e.body.slice(0, 200) : undefined };
    }
    const reason = status.reason ?? reasonForCode(code);
    return new ApiError(code, reason, `${what}: ${status.message || reason} (HTTP ${code})`, status.message);
  }
  const timedOut = e.name === 'TimeoutError' || e.name === 'AbortError' || e.type === 'aborted';
  return new ApiError(
    0,
    timedOut ? 'Timeout' : 'Unavailable',
    timedOut
      ? `${what}: the API server at ${server} did not answer in time`
      : `${what}: the API server at ${server} is unreachable: ${errorMessage(err)}`,
  );
}

function reasonForCode(code: number): string {
  switch (code) {
    case 400:
      return 'BadRequest';
    case 401:
      return 'Unauthorized';
    case 403:
      return 'Forbidden';
    case 404:
      return 'NotFound';
    case 409:
      return 'Conflict';
    case 410:
      return 'Gone';
    case 422:
      return 'Invalid';
    case 429:
      return 'TooManyRequests';
    default:
      return code >= 500 ? 'InternalError' : 'Unknown';
  }
}
