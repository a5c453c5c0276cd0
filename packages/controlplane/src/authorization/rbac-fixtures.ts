/**
 * Small builders of RBAC objects and request attributes for the authorization tests (and for anyone
 * wiring the authorizer who wants a quick object).
 */
import { VirtualClock } from '@nodelet/kernel';
import type { RequestUser } from '../apiserver/resource-type.js';
import { Registry } from '../apiserver/registry.js';
import type { AdmissionPlugin } from '../admission/admission.js';
import type { KubeObject } from '../object.js';
import { namespaces } from '../resources/namespaces.js';
import { clusterRoleBindings, clusterRoles, rbacGroup, roleBindings, roles } from '../resources/rbac.js';
import { RevisionStore } from '../storage/revision-store.js';
import type { RequestAttributes } from './attributes.js';
import type { PolicyRule, Subject } from './policy-rule.js';

const apiVersion = `${rbacGroup}/v1`;

export const userSubject = (name: string): Subject => ({ kind: 'User', apiGroup: rbacGroup, name });
export const groupSubject = (name: string): Subject => ({ kind: 'Group', apiGroup: rbacGroup, name });
export const saSubject = (name: string, namespace?: string): Subject => ({
  kind: 'ServiceAccount',
  name,
  ...(namespace !== undefined ? { namespace } : {}),
});

export function clusterRole(name: string, rules: PolicyRule[], extra: Partial<KubeObject> = {}): KubeObject {
  return { apiVersion, kind: 'ClusterRole', metadata: { name }, rules, ...extra };
}

export function role(namespace: string, name: string, rules: PolicyRule[]): KubeObject {
  return { apiVersion, kind: 'Role', metadata: { name, namespace }, rules };
}

export function clusterRoleBinding(name: string, roleName: string, subjects: Subject[]): KubeObject {
  return {
    apiVersion,
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: rbacGroup, kind: 'ClusterRole', name: roleName },
    subjects,
  };
}

export function roleBinding(
  namespace: string,
  name: string,
  roleRef: { kind: 'Role' | 'ClusterRole'; name: string },
  subjects: Subject[],
): KubeObject {
  return {
    apiVersion,
    kind: 'RoleBinding',
    metadata: { name, namespace },
    roleRef: { apiGroup: rbacGroup, ...roleRef },
    subjects,
  };
}

export function user(name: string, groups: string[] = []): RequestUser {
  return { name, groups };
}

/** A resource request; `path` is left '' (resource rules do not look at it). */
export function resourceRequest(
  u: RequestUser,
  verb: string,
  resource: string,
  options: Partial<Pick<RequestAttributes, 'apiGroup' | 'namespace' | 'name' | 'subresource'>> = {},
): RequestAttributes {
  return {
    user: u,
    verb,
    resourceRequest: true,
    path: '',
    apiGroup: options.apiGroup ?? '',
    apiVersion: 'v1',
    resource,
    subresource: options.subresource ?? '',
    namespace: options.namespace ?? '',
    name: options.name ?? '',
  };
}

export function nonResourceRequest(u: RequestUser, verb: string, path: string): RequestAttributes {
  return {
    user: u,
    verb,
    resourceRequest: false,
    path,
    apiGroup: '',
    apiVersion: '',
    resource: '',
    subresource: '',
    namespace: '',
    name: '',
  };
}

/** A registry on an in-memory store serving namespaces and the four RBAC kinds, with `namespaceNames`. */
export function rbacRegistry(admission: AdmissionPlugin[] = [], namespaceNames: string[] = []): Registry {
  const registry = new Registry({
    store: new RevisionStore(':memory:'),
    clock: new VirtualClock(),
    types: [namespaces, roles, clusterRoles, roleBindings, clusterRoleBindings],
    admission,
  });
  for (const name of namespaceNames)
    registry.create(namespaces, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  return registry;
}

/** The namespaces the bootstrap policy has roles in. */
export const systemNamespaces = ['kube-system', 'kube-public'];
