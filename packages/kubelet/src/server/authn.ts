import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { type Clock, errorMessage, type Logger } from '@nodelet/kernel';
import type { ReviewClient } from './review-client.js';
import type { RequestUser } from './routes.js';
import { TtlCache } from './ttl-cache.js';

/** KubeletConfiguration `authentication` (upstream KubeletAuthentication), with defaults applied. */
export interface AuthenticationConfig {
  /** Client certificates signed by this CA bundle (PEM) authenticate as CN (user) and O (groups). */
  x509: { clientCAFile?: string };
  /** Bearer tokens checked with a TokenReview, the answers cached for `cacheTTLMs` (2 min). */
  webhook: { enabled: boolean; cacheTTLMs: number };
  /** A request with no credentials is `system:anonymous` (default false in the file, true as a flag). */
  anonymous: { enabled: boolean };
}

export const defaultAuthentication = (): AuthenticationConfig => ({
  x509: {},
  webhook: { enabled: true, cacheTTLMs: 120_000 },
  anonymous: { enabled: false },
});

export type Authentication = { user: RequestUser } | { error: string };

const clientAuthUsage = '1.3.6.1.5.5.7.3.2';
const anyUsage = '2.5.29.37.0';

/**
 * Who a request to the kubelet is, as upstream's delegating authenticator decides: a client
 * certificate verified against `clientCAFile`, else a bearer token the API server vouches for
 * (TokenReview), else — with anonymous on and no credentials offered — `system:anonymous`. Credentials
 * that were offered and fail are an error even with anonymous on (upstream fails on error before the
 * anonymous authenticator). Authenticated users get `system:authenticated`.
 */
export class KubeletAuthenticator {
  private readonly tokens: TtlCache<Authentication>;

  constructor(
    private readonly config: AuthenticationConfig,
    private readonly deps: {
      clock: Clock;
      logger: Logger;
      /** The API server's reviews; without it a bearer token cannot authenticate. */
      reviews?: () => ReviewClient | undefined;
      /** Whether the TLS layer verified peers against the client CA (false: no CA configured). */
      clientCAConfigured: () => boolean;
    },
  ) {
    this.tokens = new TtlCache(deps.clock);
  }

  async authenticate(req: IncomingMessage): Promise<Authentication> {
    const cert = this.certificateUser(req);
    if (cert) return cert;
    // Without the webhook there is no token authenticator: the header is not a credential (upstream).
    const header = req.headers.authorization;
    const bearer = header !== undefined && /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
    if (bearer && this.config.webhook.enabled) return this.tokenUser(bearer);
    if (this.config.anonymous.enabled) {
      return { user: { name: 'system:anonymous', groups: ['system:unauthenticated'] } };
    }
    return { error: 'no credentials' };
  }

  private certificateUser(req: IncomingMessage): Authentication | undefined {
    const socket = req.socket as Partial<TLSSocket>;
    if (!this.deps.clientCAConfigured() || typeof socket.getPeerCertificate !== 'function') return undefined;
    const peer = socket.getPeerCertificate();
    // No certificate offered: the empty object.
    if (!peer || !peer.subject) return undefined;
    if (!socket.authorized) {
      return {
        error: `client certificate rejected: ${String(socket.authorizationError ?? 'not signed by the client CA')}`,
      };
    }
    const usages = (peer as { ext_key_usage?: string[] }).ext_key_usage;
    if (usages && !usages.includes(clientAuthUsage) && !usages.includes(anyUsage)) {
      return { error: 'client certificate is not for client authentication (extended key usage)' };
    }
    const subject = peer.subject as unknown as Record<string, string | string[] | undefined>;
    const cn = [subject.CN ?? []].flat()[0];
    if (!cn) return { error: 'client certificate has no common name' };
    const groups = [subject.O ?? []].flat();
    return { user: withAuthenticated({ name: cn, groups }) };
  }

  private async tokenUser(token: string): Promise<Authentication> {
    const key = createHash('sha256').update(token).digest('hex');
    const cached = this.tokens.get(key);
    if (cached) return cached;
    const client = this.deps.reviews?.();
    if (!client) return { error: 'bearer token: no API server to review it' };
    let answer: Authentication;
    try {
      const review = await client.createTokenReview({
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token },
      });
      const status = review.status ?? {};
      const user = status.user;
      answer =
        status.authenticated && user?.username
          ? {
              user: withAuthenticated({
                name: user.username,
                ...(user.uid ? { uid: user.uid } : {}),
                groups: user.groups ?? [],
                ...(user.extra ? { extra: user.extra } : {}),
              }),
            }
          : { error: `invalid bearer token${status.error ? `: ${status.error}` : ''}` };
    } catch (err) {
      // Not cached: the API server may answer next time.
      this.deps.logger.warn('TokenReview failed', { err: errorMessage(err) });
      return { error: `TokenReview failed: ${errorMessage(err)}` };
    }
    this.tokens.set(key, answer, this.config.webhook.cacheTTLMs);
    return answer;
  }
}

function withAuthenticated(user: RequestUser): RequestUser {
  return user.groups.includes('system:authenticated')
    ? user
    : { ...user, groups: [...user.groups, 'system:authenticated'] };
}
