import { type Clock, errorMessage, type Logger } from '@nodelet/kernel';
import type { ReviewClient } from './review-client.js';
import type { RequestUser } from './routes.js';
import { TtlCache } from './ttl-cache.js';

/** KubeletConfiguration `authorization` (upstream KubeletAuthorization), with defaults applied. */
export interface AuthorizationConfig {
  mode: 'Webhook' | 'AlwaysAllow';
  webhook: { cacheAuthorizedTTLMs: number; cacheUnauthorizedTTLMs: number };
}

export const defaultAuthorization = (): AuthorizationConfig => ({
  mode: 'Webhook',
  webhook: { cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 },
});

/** What a request asks to do (upstream authorizer.Attributes, for `nodes/<name>/<subresource>`). */
export interface NodeRequestAttributes {
  verb: string;
  subresource: string;
  name: string;
  path: string;
}

const verbs: Record<string, string> = {
  POST: 'create',
  GET: 'get',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};

/** upstream isSubpath: `path` itself or below it. */
function isSubpath(subpath: string, path: string): boolean {
  const base = path.endsWith('/') ? path.slice(0, -1) : path;
  return subpath === base || (subpath.startsWith(base) && subpath[base.length] === '/');
}

/**
 * upstream nodeAuthorizerAttributesGetter (pkg/kubelet/server/auth.go), with fine-grained authz on
 * (KubeletFineGrainedAuthz, on by default since 1.33): a request is allowed when any of its
 * attributes is. The verb comes from the method (any other method, HEAD too, is the empty verb, as
 * upstream); the subresource from the path:
 *
 *   /pods, /runningpods  → pods, proxy      /stats/*   → stats      /checkpoint/* → checkpoint
 *   /healthz/*           → healthz, proxy   /metrics/* → metrics    everything else → proxy
 *   /configz, /statusz   → configz|statusz, proxy     /logs/*    → log
 */
export function nodeRequestAttributes(
  nodeName: string,
  method: string,
  path: string,
): NodeRequestAttributes[] {
  const verb = verbs[method] ?? '';
  const subresources: string[] = [];
  if (isSubpath(path, '/pods')) subresources.push('pods');
  else if (isSubpath(path, '/healthz')) subresources.push('healthz');
  else if (isSubpath(path, '/configz')) subresources.push('configz');
  else if (isSubpath(path, '/statusz')) subresources.push('statusz');
  else if (isSubpath(path, '/runningpods/')) subresources.push('pods');
  if (isSubpath(path, '/stats')) subresources.push('stats');
  else if (isSubpath(path, '/metrics')) subresources.push('metrics');
  else if (isSubpath(path, '/logs/')) subresources.push('log');
  else if (isSubpath(path, '/checkpoint')) subresources.push('checkpoint');
  else subresources.push('proxy');
  return subresources.map((subresource) => ({ verb, subresource, name: nodeName, path }));
}

/** upstream's 403 body: `Forbidden (user=…, verb=…, resource=nodes, subresource(s)=[a b])` and a newline. */
export function forbiddenMessage(user: RequestUser, attrs: NodeRequestAttributes[]): string {
  const subresources = attrs.map((a) => a.subresource).join(' ');
  return `Forbidden (user=${user.name}, verb=${attrs[0]?.verb ?? ''}, resource=nodes, subresource(s)=[${subresources}])\n`;
}

export type Decision = { allowed: true } | { allowed: false; reason: string } | { error: string };

/**
 * Whether a user may do what a request asks: `AlwaysAllow`, or `Webhook` — a SubjectAccessReview to the
 * API server per attribute, answers cached (allowed 5 min, denied 30 s) on the kernel clock.
 */
export class KubeletAuthorizer {
  private readonly cache: TtlCache<boolean>;

  constructor(
    private readonly config: AuthorizationConfig,
    private readonly deps: { clock: Clock; logger: Logger; reviews?: () => ReviewClient | undefined },
  ) {
    this.cache = new TtlCache(deps.clock);
  }

  async authorize(user: RequestUser, attrs: NodeRequestAttributes[]): Promise<Decision> {
    if (this.config.mode === 'AlwaysAllow') return { allowed: true };
    for (const attr of attrs) {
      const decision = await this.review(user, attr);
      if ('error' in decision) return decision;
      if (decision.allowed) return decision;
    }
    return { allowed: false, reason: 'no attribute allowed' };
  }

  private async review(user: RequestUser, attr: NodeRequestAttributes): Promise<Decision> {
    const resourceAttributes = {
      verb: attr.verb,
      version: 'v1',
      resource: 'nodes',
      subresource: attr.subresource,
      name: attr.name,
    };
    const spec = {
      resourceAttributes,
      user: user.name,
      ...(user.uid ? { uid: user.uid } : {}),
      groups: user.groups,
      ...(user.extra ? { extra: user.extra } : {}),
    };
    const key = JSON.stringify(spec);
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached ? { allowed: true } : { allowed: false, reason: 'cached' };
    const client = this.deps.reviews?.();
    if (!client) return { error: 'no API server to review the request' };
    try {
      const answer = await client.createSubjectAccessReview({
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec,
      });
      const allowed = answer.status?.allowed === true && answer.status.denied !== true;
      const { cacheAuthorizedTTLMs, cacheUnauthorizedTTLMs } = this.config.webhook;
      this.cache.set(key, allowed, allowed ? cacheAuthorizedTTLMs : cacheUnauthorizedTTLMs);
      return allowed ? { allowed } : { allowed, reason: answer.status?.reason ?? '' };
    } catch (err) {
      this.deps.logger.warn('SubjectAccessReview failed', { err: errorMessage(err) });
      return { error: errorMessage(err) };
    }
  }
}
