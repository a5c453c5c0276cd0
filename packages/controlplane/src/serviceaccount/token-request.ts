import { fieldInvalid, type FieldError } from '@nodelet/api';
import type { Clock } from '@nodelet/kernel';
import { isObject, rfc3339, type KubeObject } from '../object.js';
import { decodeObject, type FieldValidation, type KindIndex } from '../apiserver/decode.js';
import { ApiError, badRequest, conflict, forbidden, invalid, notFound } from '../apiserver/status.js';
import type { RequestUser } from '../apiserver/resource-type.js';
import { nodeTokenRefusal } from '../admission/node-restriction.js';
import { nodeIdentity } from '../authorization/node-authorizer.js';
import { authenticationGroup, tokenRequests } from '../resources/authentication.js';
import type { RevisionStore } from '../storage/revision-store.js';
import { warnOnlyBoundTokenExpirationSeconds } from '../admission/service-account.js';
import type { ServiceAccountTokens, TokenBinding } from './tokens.js';

/**
 * `POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token` (upstream's TokenREST,
 * pkg/registry/core/serviceaccount/storage/token.go): a TokenRequest in, the same TokenRequest out with
 * `status.token` and `status.expirationTimestamp`.
 *
 * - `spec.expirationSeconds` defaults to 3600 and must be at least 600 (and at most 2^32);
 * - `spec.audiences` defaults to the API server's;
 * - `spec.boundObjectRef` (kind Pod, Secret or Node of the core group) must exist, with `uid` if given;
 *   a pod must run as this ServiceAccount, and its node goes into the token too;
 * - a pod-bound request for exactly 3607 s with the API server's audiences (what the ServiceAccount
 *   admission step puts in every pod) gets a token valid for a year that says `warnafter` 3607 s;
 *   `status.expirationTimestamp` still says 3607 s, so the kubelet rotates it as if it were that.
 */
export interface TokenRequestContext {
  store: RevisionStore;
  clock: Clock;
  tokens: ServiceAccountTokens;
  kinds: KindIndex;
  /** Upstream's `--service-account-extend-token-expiration` (default true). */
  extendExpiration?: boolean;
}

const hourSeconds = 60 * 60;
const minSeconds = 10 * 60;
const maxSeconds = 2 ** 32;
const extendedExpirationSeconds = 24 * 365 * hourSeconds;

const qualifiedKind = { group: authenticationGroup, resource: 'TokenRequest' };

export async function requestToken(
  ctx: TokenRequestContext,
  namespace: string,
  name: string,
  body: unknown,
  fieldValidation: FieldValidation,
  user?: RequestUser,
): Promise<{ object: KubeObject; warnings: string[] }> {
  const { object: req, warnings } = decodeObject(body, tokenRequests, fieldValidation, ctx.kinds);
  const meta = req.metadata;
  if (meta.name && meta.name !== name) {
    throw invalid('TokenRequest', authenticationGroup, name, [
      fieldInvalid('metadata.name', meta.name, 'must match the service account name if specified'),
    ]);
  }
  if (meta.namespace && meta.namespace !== namespace) {
    throw invalid('TokenRequest', authenticationGroup, name, [
      fieldInvalid(
        'metadata.namespace',
        meta.namespace,
        'must match the service account namespace if specified',
      ),
    ]);
  }
  const sa = ctx.store.get('serviceaccounts', namespace, name)?.object;
  if (!sa) throw notFound({ group: '', resource: 'serviceaccounts' }, name);
  if (meta.uid && meta.uid !== sa.metadata.uid) {
    throw conflict(
      qualifiedKind,
      name,
      `the UID in the token request (${meta.uid}) does not match the UID of the service account (${sa.metadata.uid})`,
    );
  }
  const spec: Record<string, any> = isObject(req.spec) ? req.spec : {};
  req.spec = spec;
  const apiAudiences = [...ctx.tokens.apiAudiences];
  if (!Array.isArray(spec.audiences) || spec.audiences.length === 0) spec.audiences = apiAudiences;
  spec.expirationSeconds ??= hourSeconds;
  spec.boundObjectRef ??= null;
  meta.name = name;
  meta.namespace = namespace;
  meta.uid = sa.metadata.uid;
  const now = ctx.clock.now();
  meta.creationTimestamp = rfc3339(now);
  const errors: FieldError[] = [];
  if (spec.expirationSeconds < minSeconds)
    errors.push(
      fieldInvalid(
        'spec.expirationSeconds',
        spec.expirationSeconds,
        'may not specify a duration less than 10 minutes',
      ),
    );
  if (spec.expirationSeconds > maxSeconds)
    errors.push(
      fieldInvalid(
        'spec.expirationSeconds',
        spec.expirationSeconds,
        'may not specify a duration larger than 2^32 seconds',
      ),
    );
  if (errors.length > 0) throw invalid('TokenRequest', authenticationGroup, '', errors);

  const node = user && nodeIdentity(user);
  if (node) {
    // NodeRestriction: a kubelet asks tokens only for the pods it runs.
    const refusal = nodeTokenRefusal(node, spec.boundObjectRef ?? undefined, namespace, ctx.store);
    if (refusal?.status === 404) throw new ApiError(404, 'NotFound', refusal.message);
    if (refusal) throw forbidden({ group: '', resource: 'serviceaccounts' }, name, refusal.message);
  }
  const binding = spec.boundObjectRef ? bind(ctx, namespace, name, spec.boundObjectRef) : {};
  let expirationSeconds: number = spec.expirationSeconds;
  let warnAfterSeconds: number | undefined;
  const apiAudiencesOnly = (spec.audiences as string[]).every((a) => apiAudiences.includes(a));
  if (
    ctx.extendExpiration !== false &&
    binding.pod &&
    expirationSeconds === warnOnlyBoundTokenExpirationSeconds &&
    apiAudiencesOnly
  ) {
    warnAfterSeconds = expirationSeconds;
    expirationSeconds = extendedExpirationSeconds;
  }
  const { token } = await ctx.tokens.issue({
    serviceAccount: sa,
    audiences: spec.audiences,
    expirationSeconds,
    ...(warnAfterSeconds ? { warnAfterSeconds } : {}),
    binding,
  });
  req.status = { token, expirationTimestamp: rfc3339(now + spec.expirationSeconds * 1000) };
  return { object: req, warnings };
}

/** The object a token is bound to, looked up and checked. */
function bind(
  ctx: TokenRequestContext,
  namespace: string,
  name: string,
  ref: Record<string, any>,
): TokenBinding {
  const apiVersion = typeof ref.apiVersion === 'string' ? ref.apiVersion : '';
  const slash = apiVersion.lastIndexOf('/');
  const group = slash >= 0 ? apiVersion.slice(0, slash) : '';
  const version = slash >= 0 ? apiVersion.slice(slash + 1) : apiVersion;
  const kind = typeof ref.kind === 'string' ? ref.kind : '';
  const refName = typeof ref.name === 'string' ? ref.name : '';
  const store = ctx.store;
  let uid: string | undefined;
  let binding: TokenBinding;
  if (group === '' && kind === 'Pod') {
    const pod = store.get('pods', namespace, refName)?.object;
    if (!pod) throw notFound({ group: '', resource: 'pods' }, refName);
    if (pod.spec?.serviceAccountName !== name) {
      throw badRequest(
        `cannot bind token for serviceaccount "${name}" to pod running with different serviceaccount name.`,
      );
    }
    uid = pod.metadata.uid;
    binding = { pod: { name: refName, uid } };
    const nodeName: string | undefined = pod.spec?.nodeName;
    if (nodeName) {
      const node = store.get('nodes', '', nodeName)?.object;
      // A node that is gone still leaves its name in the token: clients see where the pod was assigned.
      binding.node = node ? { name: nodeName, uid: node.metadata.uid } : { name: nodeName };
    }
  } else if (group === '' && kind === 'Node') {
    const node = store.get('nodes', '', refName)?.object;
    if (!node) throw notFound({ group: '', resource: 'nodes' }, refName);
    uid = node.metadata.uid;
    binding = { node: { name: refName, uid } };
  } else if (group === '' && kind === 'Secret') {
    const secret = store.get('secrets', namespace, refName)?.object;
    if (!secret) throw notFound({ group: '', resource: 'secrets' }, refName);
    uid = secret.metadata.uid;
    binding = { secret: { name: refName, uid } };
  } else {
    throw badRequest(`cannot bind token to object of type ${group}/${version}, Kind=${kind}`);
  }
  if (ref.uid && ref.uid !== uid) {
    throw conflict(
      { group, resource: kind },
      refName,
      `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
    );
  }
  return binding;
}
