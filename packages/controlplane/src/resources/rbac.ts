/**
 * rbac.authorization.k8s.io/v1: Role, ClusterRole, RoleBinding, ClusterRoleBinding — stored like any
 * other kind; the RBAC authorizer (authorization/) reads them.
 */
import { ageColumn, nameColumn, type ResourceType } from '../apiserver/resource-type.js';
import { age } from './printers.js';
import { nameRules } from './meta-validation.js';
import { base, metaStrategy } from './resource-base.js';

export const rbacGroup = 'rbac.authorization.k8s.io';

const kind = (kind: string, plural: string, namespaced: boolean): ResourceType =>
  base({
    group: rbacGroup,
    version: 'v1',
    kind,
    plural,
    singular: kind.toLowerCase(),
    namespaced,
    model: `V1${kind}`,
    strategy: metaStrategy(nameRules.pathSegment, namespaced),
    columns: [nameColumn, ageColumn],
    row: (obj, now) => [obj.metadata.name, age(obj, now)],
  });

export const roles = kind('Role', 'roles', true);
export const clusterRoles = kind('ClusterRole', 'clusterroles', false);
export const roleBindings = kind('RoleBinding', 'rolebindings', true);
export const clusterRoleBindings = kind('ClusterRoleBinding', 'clusterrolebindings', false);
