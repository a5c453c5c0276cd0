import type { TokenRequest } from '@nodelet/api';
import { ApiError, rfc3339Seconds } from '../kube-api.js';

/**
 * The fake API server's answer to a TokenRequest: the lifetime asked for (default 3600 s; at least 600 s),
 * expiring `nowMs` + that; the token a JWT-shaped string of its claims, the same for the same request at
 * the same time.
 */
export function fakeTokenRequest(
  namespace: string,
  name: string,
  request: TokenRequest,
  nowMs: number,
): TokenRequest {
  const spec = request.spec ?? { audiences: [] };
  const seconds = spec.expirationSeconds ?? 3600;
  if (seconds < 600) {
    throw new ApiError(
      422,
      'Invalid',
      `spec.expirationSeconds: Invalid value: ${seconds}: may not specify a duration less than 10 minutes`,
    );
  }
  const iat = Math.floor(nowMs / 1000);
  const claims = {
    aud: spec.audiences?.length ? spec.audiences : ['https://kubernetes.default.svc'],
    exp: iat + seconds,
    iat,
    sub: `system:serviceaccount:${namespace}:${name}`,
    pod: spec.boundObjectRef?.uid,
  };
  const token = `fake.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;
  return {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    metadata: { name, namespace, creationTimestamp: rfc3339Seconds(iat * 1000) },
    spec: { ...structuredClone(spec), audiences: claims.aud, expirationSeconds: seconds },
    status: { token, expirationTimestamp: rfc3339Seconds((iat + seconds) * 1000) },
  };
}
