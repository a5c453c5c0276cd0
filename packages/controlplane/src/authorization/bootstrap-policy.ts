/** Everything the bootstrap policy holds, by kind (what the start-up reconcile makes sure exists). */
import type { KubeObject } from '../object.js';
import { bootstrapClusterRoleBindings, bootstrapClusterRoles } from './bootstrap-cluster-roles.js';
import { bootstrapControllerRoleBindings, bootstrapControllerRoles } from './bootstrap-controller-roles.js';
import { bootstrapNamespaceRoleBindings, bootstrapNamespaceRoles } from './bootstrap-namespace-policy.js';

export interface BootstrapPolicy {
  clusterRoles: KubeObject[];
  clusterRoleBindings: KubeObject[];
  roles: KubeObject[];
  roleBindings: KubeObject[];
}

export function bootstrapPolicy(): BootstrapPolicy {
  return {
    clusterRoles: [...bootstrapClusterRoles(), ...bootstrapControllerRoles()],
    clusterRoleBindings: [...bootstrapClusterRoleBindings(), ...bootstrapControllerRoleBindings()],
    roles: bootstrapNamespaceRoles(),
    roleBindings: bootstrapNamespaceRoleBindings(),
  };
}
