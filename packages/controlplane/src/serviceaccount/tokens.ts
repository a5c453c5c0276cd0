import { randomUUID } from 'node:crypto';
import { compactVerify, decodeJwt, SignJWT } from 'jose';
import { goQuote } from '@nodelet/api';
import type { Clock } from '@nodelet/kernel';
import type { KubeObject } from '../object.js';
import type { RequestUser } from '../apiserver/resource-type.js';
import type { RevisionStore } from '../storage/revision-store.js';
import type { ServiceAccountKey } from './signing-key.js';

/**
 * Service-account tokens: signed JWTs with upstream's claims (pkg/serviceaccount/claims.go) — `iss`,
 * `sub` system:serviceaccount:<ns>:<name>, `aud`, `exp`, `iat`, `nbf`, `jti` and the private
 * `kubernetes.io` claim (namespace, the ServiceAccount's and the bound object's name and uid, the node
 * of a bound pod, `warnafter`) — and their validation, as upstream's JWT authenticator and claims
 * validator do it (one minute of leeway; the ServiceAccount and the bound object must still exist with
 * the uid in the token). Times come from the control plane's clock.
 */
export const defaultServiceAccountIssuer = 'https://kubernetes.default.svc.cluster.local';
const leewaySeconds = 60;

export interface ObjectRef {
  name: string;
  uid?: string;
}

/** What a token is bound to: a pod (with the node it runs on), a Secret, or a node. */
export interface TokenBinding {
  pod?: ObjectRef;
  secret?: ObjectRef;
  node?: ObjectRef;
}

export interface TokenSpec {
  serviceAccount: KubeObject;
  audiences: string[];
  expirationSeconds: number;
  /** Seconds after which use of the token is only reported (the extended 3607 s case). */
  warnAfterSeconds?: number;
  binding: TokenBinding;
}

/** A token this issuer signed that cannot be accepted: the message says why. */
export class TokenRejected extends Error {
  override name = 'TokenRejected';
}

export interface TokenUser {
  user: RequestUser;
  /** The audiences of the token that the request asked for. */
  audiences: string[];
}

export interface ServiceAccountTokensOptions {
  key: ServiceAccountKey;
  clock: Clock;
  store: RevisionStore;
  issuer?: string;
  /** The API server's audiences (default: the issuer). */
  apiAudiences?: string[];
}

interface PrivateClaims {
  namespace?: string;
  serviceaccount?: ObjectRef;
  pod?: ObjectRef;
  secret?: ObjectRef;
  node?: ObjectRef;
  warnafter?: number;
}

export class ServiceAccountTokens {
  readonly issuer: string;
  readonly apiAudiences: readonly string[];

  constructor(private readonly o: ServiceAccountTokensOptions) {
    this.issuer = o.issuer ?? defaultServiceAccountIssuer;
    this.apiAudiences = o.apiAudiences ?? [this.issuer];
  }

  /** Signs a token; `issuedAt` is the time its `iat` says (ms, whole seconds). */
  async issue(spec: TokenSpec): Promise<{ token: string; issuedAt: number }> {
    const now = Math.floor(this.o.clock.now() / 1000);
    const sa = spec.serviceAccount.metadata;
    const claims: PrivateClaims = {
      namespace: sa.namespace,
      serviceaccount: { name: sa.name!, uid: sa.uid },
      ...spec.binding,
      ...(spec.warnAfterSeconds ? { warnafter: now + spec.warnAfterSeconds } : {}),
    };
    const token = await new SignJWT({ 'kubernetes.io': withoutEmpty(claims) })
      .setProtectedHeader({ alg: this.o.key.algorithm, kid: this.o.key.keyId })
      .setIssuer(this.issuer)
      .setSubject(serviceAccountUsername(sa.namespace ?? '', sa.name!))
      .setAudience(spec.audiences)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + spec.expirationSeconds)
      .setJti(randomUUID())
      .sign(this.o.key.privateKey);
    return { token, issuedAt: now * 1000 };
  }

  /**
   * The user of `token` when it is a valid token of this issuer for one of `audiences`; undefined when
   * it is not a token of this issuer at all (another authenticator may know it); TokenRejected when it
   * is one but cannot be accepted.
   */
  async authenticate(
    token: string,
    audiences: readonly string[] = this.apiAudiences,
  ): Promise<TokenUser | undefined> {
    let claims: Record<string, unknown>;
    try {
      claims = decodeJwt(token);
    } catch {
      return undefined;
    }
    if (claims.iss !== this.issuer) return undefined;
    try {
      await compactVerify(token, this.o.key.publicKey, { algorithms: [this.o.key.algorithm] });
    } catch {
      throw new TokenRejected('invalid signature: the token is not signed by this cluster');
    }
    const tokenAudiences = typeof claims.aud === 'string' ? [claims.aud] : ((claims.aud ?? []) as string[]);
    const granted = tokenAudiences.filter((a) => audiences.includes(a));
    if (granted.length === 0) {
      throw new TokenRejected(
        `token audiences ${goQuoted(tokenAudiences)} is invalid for the target audiences ${goQuoted(audiences)}`,
      );
    }
    this.checkTimes(claims);
    return { user: this.validateObjects(claims), audiences: granted };
  }

  private checkTimes(claims: Record<string, unknown>): void {
    const now = this.o.clock.now() / 1000;
    const seconds = (v: unknown) => (typeof v === 'number' ? v : undefined);
    const exp = seconds(claims.exp);
    const nbf = seconds(claims.nbf);
    const iat = seconds(claims.iat);
    if (exp !== undefined && now > exp + leewaySeconds)
      throw new TokenRejected('service account token has expired');
    if (nbf !== undefined && now < nbf - leewaySeconds)
      throw new TokenRejected('service account token is not valid yet');
    if (iat !== undefined && now < iat - leewaySeconds)
      throw new TokenRejected('service account token is issued in the future');
  }

  /** The ServiceAccount and the bound objects must still be there with the same uid (and not long deleted). */
  private validateObjects(claims: Record<string, unknown>): RequestUser {
    const k = (claims['kubernetes.io'] ?? {}) as PrivateClaims;
    const namespace = k.namespace ?? '';
    const saRef = k.serviceaccount ?? { name: '' };
    const store = this.o.store;
    const deletedBefore = this.o.clock.now() - leewaySeconds * 1000;
    const gone = (o: KubeObject) =>
      !!o.metadata.deletionTimestamp && Date.parse(o.metadata.deletionTimestamp) < deletedBefore;

    const sa = store.get('serviceaccounts', namespace, saRef.name)?.object;
    if (!sa) throw new TokenRejected(`serviceaccounts "${saRef.name}" not found`);
    if (sa.metadata.uid !== saRef.uid)
      throw new TokenRejected(`service account UID (${sa.metadata.uid}) does not match claim (${saRef.uid})`);
    if (gone(sa)) throw new TokenRejected(`service account ${namespace}/${saRef.name} has been deleted`);
    // The bound object: a Secret, a pod, or (for a token bound to a node alone) the node.
    const bound: [string, string, ObjectRef | undefined][] = [
      ['secret', 'secrets', k.secret],
      ['pod', 'pods', k.pod],
      ['node', 'nodes', k.pod ? undefined : k.node],
    ];
    for (const [kind, storage, ref] of bound) {
      if (!ref) continue;
      const obj = store.get(storage, storage === 'nodes' ? '' : namespace, ref.name)?.object;
      const invalidated = new TokenRejected('service account token has been invalidated');
      if (!obj) throw invalidated;
      if (obj.metadata.uid !== ref.uid)
        throw new TokenRejected(
          `${kind} UID (${obj.metadata.uid}) does not match service account ${kind} ref claim (${ref.uid})`,
        );
      if (gone(obj)) throw invalidated;
    }
    const extra: Record<string, string[]> = {};
    if (k.pod) {
      extra[extraKeys.podName] = [k.pod.name];
      extra[extraKeys.podUid] = [k.pod.uid ?? ''];
    }
    if (typeof claims.jti === 'string' && claims.jti) extra[extraKeys.credentialId] = [`JTI=${claims.jti}`];
    if (k.node?.name) {
      extra[extraKeys.nodeName] = [k.node.name];
      if (k.node.uid) extra[extraKeys.nodeUid] = [k.node.uid];
    }
    return {
      name: serviceAccountUsername(namespace, saRef.name),
      uid: saRef.uid ?? '',
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
      extra,
    };
  }
}

/** The keys of a service account user's `extra` (k8s.io/apiserver/pkg/authentication/serviceaccount). */
export const extraKeys = {
  podName: 'authentication.kubernetes.io/pod-name',
  podUid: 'authentication.kubernetes.io/pod-uid',
  nodeName: 'authentication.kubernetes.io/node-name',
  nodeUid: 'authentication.kubernetes.io/node-uid',
  credentialId: 'authentication.kubernetes.io/credential-id',
};

export function serviceAccountUsername(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** Go's `%q` of a string slice: `["a" "b"]`. */
function goQuoted(values: readonly string[]): string {
  return `[${values.map(goQuote).join(' ')}]`;
}

/** The claim without unset parts (upstream's `omitempty`). */
function withoutEmpty(claims: PrivateClaims): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(claims)) {
    if (value === undefined || value === '') continue;
    if (typeof value === 'object') {
      const ref = Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== ''));
      if (Object.keys(ref).length > 0) out[key] = ref;
    } else out[key] = value;
  }
  return out;
}
