import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { certificateUser } from '../pki.js';
import type { RevisionStore } from '../storage/revision-store.js';
import type { RequestUser } from './resource-type.js';
import { ApiError } from './status.js';

/**
 * Who a request is: a client certificate signed by the cluster CA (CN is the user, O the groups), or a
 * bootstrap token (`Authorization: Bearer <id>.<secret>`) — upstream's bootstrap-token authenticator,
 * backed by the `bootstrap-token-<id>` Secrets of kube-system. Anything else is 401.
 */

export const bootstrapTokenSecretType = 'bootstrap.kubernetes.io/token';
export const bootstrappersGroup = 'system:bootstrappers';

const tokenPattern = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;

export function authenticate(req: IncomingMessage, store: RevisionStore, now: number): RequestUser {
  const socket = req.socket as TLSSocket;
  if (socket.authorized) {
    const user = certificateUser(subjectText(socket));
    return { ...user, groups: [...user.groups, 'system:authenticated'] };
  }
  const header = req.headers.authorization;
  const bearer = header && /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
  if (bearer) {
    const user = bootstrapTokenUser(bearer, store, now);
    if (user) return user;
    throw new ApiError(401, 'Unauthorized', 'Unauthorized: the bearer token is not a valid bootstrap token');
  }
  throw new ApiError(
    401,
    'Unauthorized',
    'Unauthorized: a client certificate signed by the cluster CA or a bootstrap token is required',
  );
}

/** The peer certificate's subject as `CN=…, O=…` text. */
function subjectText(socket: TLSSocket): string {
  const subject = socket.getPeerCertificate().subject as unknown as Record<string, string | string[]>;
  const parts: string[] = [];
  for (const [k, v] of Object.entries(subject)) {
    for (const value of Array.isArray(v) ? v : [v]) parts.push(`${k}=${value}`);
  }
  return parts.join(', ');
}

const decode = (data: Record<string, unknown>, key: string): string | undefined =>
  typeof data[key] === 'string' ? Buffer.from(data[key], 'base64').toString('utf8') : undefined;

/** The user of a bootstrap token, or undefined when no usable token Secret matches it. */
export function bootstrapTokenUser(
  token: string,
  store: RevisionStore,
  now: number,
): RequestUser | undefined {
  const m = tokenPattern.exec(token);
  if (!m) return undefined;
  const [, id, secret] = m as unknown as [string, string, string];
  const obj = store.get('secrets', 'kube-system', `bootstrap-token-${id}`)?.object;
  if (!obj || obj.type !== bootstrapTokenSecretType || obj.metadata.deletionTimestamp) return undefined;
  const data = (obj.data ?? {}) as Record<string, unknown>;
  const stored = decode(data, 'token-secret') ?? '';
  if (decode(data, 'token-id') !== id || stored.length !== secret.length) return undefined;
  if (!timingSafeEqual(Buffer.from(stored), Buffer.from(secret))) return undefined;
  if (decode(data, 'usage-bootstrap-authentication') !== 'true') return undefined;
  const expiration = decode(data, 'expiration');
  if (expiration && !(Date.parse(expiration) > now)) return undefined;
  const extra = (decode(data, 'auth-extra-groups') ?? '')
    .split(',')
    .map((g) => g.trim())
    .filter((g) => g.startsWith(`${bootstrappersGroup}:`));
  return {
    name: `system:bootstrap:${id}`,
    groups: [bootstrappersGroup, ...extra, 'system:authenticated'],
  };
}

/**
 * What a bootstrap identity may do, as upstream's `system:node-bootstrapper` role plus discovery allows:
 * read discovery and OpenAPI, create, get, list and watch CertificateSigningRequests. nodelet has no RBAC
 * yet; every other authenticated user may do everything.
 */
export function authorize(user: RequestUser, method: string, path: string): void {
  if (!user.groups.includes(bootstrappersGroup)) return;
  const read = method === 'GET' || method === 'HEAD';
  if (read && /^\/(version|healthz|livez|readyz|api|api\/v1|apis|openapi\/.*)?$/.test(path)) return;
  if (read && /^\/apis\/certificates\.k8s\.io(\/v1)?$/.test(path)) return;
  const csr = /^\/apis\/certificates\.k8s\.io\/v1\/(watch\/)?certificatesigningrequests(\/[^/]+)?$/.exec(
    path,
  );
  if (csr && (read || (method === 'POST' && !csr[1] && !csr[2]))) return;
  const verb = method === 'POST' ? 'create' : read ? 'get' : method.toLowerCase();
  throw new ApiError(
    403,
    'Forbidden',
    `forbidden: User "${user.name}" cannot ${verb} path "${path}": a bootstrap token may only create, get, list and watch certificatesigningrequests`,
  );
}
