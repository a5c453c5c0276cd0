import type { TokenRequest, TokenRequestStatus } from '@nodelet/api';
import type { KubeApi } from '@nodelet/client';
import { type Clock, errorMessage, type Logger } from '@nodelet/kernel';

/** A token lives at most this long in the cache before it is renewed (upstream maxTTL). */
const maxTTLMs = 24 * 60 * 60_000;
/** Up to this much earlier, at random, so the tokens of many pods are not renewed at once. */
const maxJitterMs = 10_000;

export interface TokenManagerOptions {
  /** The API connection, once there is one. */
  api: () => KubeApi | undefined;
  clock: Clock;
  logger: Logger;
  /** A number in [0, 1) for the renewal jitter (default Math.random; tests pass 0). */
  random?: () => number;
}

/**
 * Upstream's token manager (pkg/kubelet/token/token_manager.go): service-account tokens of the node's
 * pods from the TokenRequest API, cached by what was asked (namespace, service account, audiences,
 * lifetime, bound pod). A cached token is renewed once it is older than 80 % of its lifetime or than
 * 24 h (less a jitter of up to 10 s), or when it claims to be issued in the future; when renewing fails,
 * the cached token is used while it is still valid. The tokens of a deleted pod are dropped.
 *
 *   get ──► cached and fresh? ──yes──► cached
 *              │ no
 *              ▼
 *           TokenRequest ──ok──► cache, return
 *              │ failed
 *              ├── nothing cached ──► "failed to fetch token: …"
 *              ├── cached but expired ──► "token … expired and refresh failed: …"
 *              └── cached and valid ──► cached (logged)
 */
export class TokenManager {
  /** The answers by cache key, with the pod they are bound to (as asked). */
  private readonly cache = new Map<string, TokenRequest & { podUid?: string }>();
  private readonly random: () => number;

  constructor(private readonly options: TokenManagerOptions) {
    this.random = options.random ?? Math.random;
  }

  async getServiceAccountToken(
    namespace: string,
    name: string,
    request: TokenRequest,
  ): Promise<TokenRequestStatus> {
    const key = cacheKey(namespace, name, request);
    this.dropExpired(key);
    const cached = this.cache.get(key);
    if (cached && !this.requiresRefresh(cached)) return cached.status!;
    let fresh: TokenRequest;
    try {
      const api = this.options.api();
      if (!api) throw new Error('the kubelet is not connected to the API server yet');
      fresh = await api.createServiceAccountToken(namespace, name, request);
      if (!fresh.status?.token || !fresh.status.expirationTimestamp) {
        throw new Error('the API server answered the TokenRequest without a token or its expiry');
      }
    } catch (err) {
      if (!cached) throw new Error(`failed to fetch token: ${errorMessage(err)}`);
      if (this.expired(cached)) {
        this.cache.delete(key);
        throw new Error(`token ${key} expired and refresh failed: ${errorMessage(err)}`);
      }
      this.options.logger.error("Couldn't update token", { cacheKey: key, err: errorMessage(err) });
      return cached.status!;
    }
    this.cache.set(key, { ...fresh, podUid: request.spec?.boundObjectRef?.uid });
    return fresh.status!;
  }

  /** The pod is gone: its tokens are no longer kept. */
  deleteServiceAccountToken(podUid: string): void {
    for (const [key, tr] of this.cache) if (tr.podUid === podUid) this.cache.delete(key);
  }

  /** How many tokens are cached (tests). */
  get size(): number {
    return this.cache.size;
  }

  /** Drops expired tokens (upstream's cleanup), but the one being asked for: its expiry is reported. */
  private dropExpired(asked: string): void {
    for (const [key, tr] of this.cache) if (key !== asked && this.expired(tr)) this.cache.delete(key);
  }

  private expired(tr: TokenRequest): boolean {
    return this.options.clock.now() > expiresAt(tr);
  }

  private requiresRefresh(tr: TokenRequest): boolean {
    const ttlSeconds = tr.spec?.expirationSeconds;
    if (ttlSeconds == null) {
      this.options.logger.error('Expiration seconds was nil for token request', {});
      return false;
    }
    const now = this.options.clock.now();
    const exp = expiresAt(tr);
    const issuedAt = exp - ttlSeconds * 1000;
    // Whole seconds, as upstream's jitter.
    const jitter = Math.floor(this.random() * (maxJitterMs / 1000)) * 1000;
    if (now > issuedAt + maxTTLMs - jitter) return true;
    // Within the last 20 % of the lifetime (less the jitter).
    if (now > exp - Math.floor((ttlSeconds * 20) / 100) * 1000 - jitter) return true;
    // Issued "in the future": the clock leapt back.
    return now < issuedAt;
  }
}

function expiresAt(tr: TokenRequest): number {
  return Date.parse(String(tr.status?.expirationTimestamp ?? ''));
}

/** What was asked, so another lifetime, audience or pod gets its own token; nothing secret in it. */
function cacheKey(namespace: string, name: string, request: TokenRequest): string {
  const spec = request.spec;
  const ref = spec?.boundObjectRef;
  return JSON.stringify([
    name,
    namespace,
    spec?.audiences ?? [],
    spec?.expirationSeconds ?? 0,
    ref ? [ref.kind, ref.apiVersion, ref.name, ref.uid] : [],
  ]);
}
