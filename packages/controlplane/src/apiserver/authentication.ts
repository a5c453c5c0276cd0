import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Clock } from '@nodelet/kernel';
import { certificateUser } from '../pki.js';
import { TokenRejected, type ServiceAccountTokens } from '../serviceaccount/tokens.js';
import type { RevisionStore } from '../storage/revision-store.js';
import type { RequestUser } from './resource-type.js';
import type { StaticTokens } from './token-file.js';
import { ApiError } from './status.js';

/**
 * Who a request is, as upstream's authenticator chain decides: a client certificate signed by the
 * cluster CA (CN is the user, O the groups); else the bearer token — a service-account token of this
 * cluster (a JWT signed with its service-account key: serviceaccount/tokens.ts), a token of the static
 * token file (token-file.ts) or a bootstrap token
 * (`<id>.<secret>`, upstream's bootstrap-token authenticator, backed by the `bootstrap-token-<id>`
 * Secrets of kube-system). Every authenticated user is in `system:authenticated`. Anything else is 401,
 * with a message that says why.
 */

export const bootstrapTokenSecretType = 'bootstrap.kubernetes.io/token';
export const bootstrappersGroup = 'system:bootstrappers';

const tokenPattern = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;

export interface AuthenticatorOptions {
  store: RevisionStore;
  clock: Clock;
  /** Service-account tokens; without them only certificates and bootstrap tokens authenticate. */
  serviceAccounts?: ServiceAccountTokens;
  /** Tokens of a `--token-auth-file`. */
  staticTokens?: StaticTokens;
  /**
   * Paths a request without credentials may ask for, as `system:anonymous` (upstream's anonymous
   * authenticator with path conditions); RBAC's `system:public-info-viewer` binding then lets it read
   * them. Default: /healthz, /livez, /readyz, /version and their subpaths; [] turns anonymous off.
   */
  anonymousPaths?: readonly string[];
}

export const anonymousUser: RequestUser = { name: 'system:anonymous', groups: ['system:unauthenticated'] };

const defaultAnonymousPaths = ['/healthz', '/livez', '/readyz', '/version'];

/** What a token authenticates as (a TokenReview's answer): the user, or why not. */
export interface TokenResult {
  user?: RequestUser;
  /** The audiences the token is good for among those asked for. */
  audiences: string[];
  error?: string;
}

export class Authenticator {
  constructor(private readonly o: AuthenticatorOptions) {}

  /** The API audiences (the service-account issuer's by default). */
  get apiAudiences(): readonly string[] {
    return this.o.serviceAccounts?.apiAudiences ?? [];
  }

  async authenticate(req: IncomingMessage): Promise<RequestUser> {
    const socket = req.socket as TLSSocket;
    // Node counts a resumed TLS 1.3 session without a client certificate as authorized: only a
    // certificate that is there names a user.
    if (socket.authorized && socket.getPeerCertificate()?.subject) {
      const user = certificateUser(subjectText(socket));
      return { ...user, groups: [...user.groups, 'system:authenticated'] };
    }
    const header = req.headers.authorization;
    const bearer = header && /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
    if (bearer) {
      const result = await this.authenticateToken(bearer);
      if (result.user) return result.user;
      throw new ApiError(401, 'Unauthorized', `Unauthorized: ${result.error}`);
    }
    if (this.anonymousAllowed(req.url ?? '/')) return anonymousUser;
    throw new ApiError(
      401,
      'Unauthorized',
      'Unauthorized: a client certificate signed by the cluster CA, a service-account token or a bootstrap token is required',
    );
  }

  private anonymousAllowed(target: string): boolean {
    const path = target.split('?')[0]!;
    return (this.o.anonymousPaths ?? defaultAnonymousPaths).some(
      (p) => path === p || path.startsWith(`${p}/`),
    );
  }

  /** A bearer token checked for `audiences` (default: the API server's). */
  async authenticateToken(token: string, audiences?: readonly string[]): Promise<TokenResult> {
    const api = this.apiAudiences;
    const wanted = audiences && audiences.length > 0 ? audiences : api;
    const listed = this.o.staticTokens?.authenticate(token);
    // A static token knows no audiences: good for the API server's, as a bootstrap token.
    if (listed) return { user: listed, audiences: wanted.filter((a) => api.includes(a)) };
    const sa = this.o.serviceAccounts;
    if (sa) {
      try {
        const found = await sa.authenticate(token, wanted);
        if (found) return { user: found.user, audiences: found.audiences };
      } catch (err) {
        if (err instanceof TokenRejected) return { audiences: [], error: err.message };
        throw err;
      }
    }
    const user = bootstrapTokenUser(token, this.o.store, this.o.clock.now());
    if (user) {
      // A bootstrap token knows no audiences: it is good for the API server's (upstream's
      // audience-agnostic wrapper), and for no other.
      const granted = wanted.filter((a) => api.includes(a));
      return api.length === 0 || granted.length > 0 ? { user, audiences: granted } : { audiences: [] };
    }
    const error = tokenPattern.test(token)
      ? 'the bootstrap token is not valid (unknown, expired or not for authentication)'
      : this.o.staticTokens
        ? 'the bearer token is neither a service-account token of this cluster, a token of the token file nor a bootstrap token'
        : 'the bearer token is neither a service-account token of this cluster nor a bootstrap token';
    return { audiences: [], error };
  }
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
