/**
 * The namespaced bootstrap roles and bindings, as upstream's bootstrappolicy/namespace_policy.go:
 * leader election of the scheduler and controller manager and the extension-apiserver configuration
 * reader in kube-system, and the bootstrap-token controllers' access to kube-system secrets and the
 * kube-public `cluster-info` ConfigMap.
 */
import type { KubeObject } from '../object.js';
import {
  eventsRule,
  legacyGroup as core,
  namespacedBinding,
  namespacedRole,
  read,
  rule,
} from './bootstrap-policy-builders.js';

const kubeSystem = 'kube-system';
const kubePublic = 'kube-public';
const coordination = 'coordination.k8s.io';

const leaderLocking = (component: string) =>
  namespacedRole(kubeSystem, `system::leader-locking-${component}`, [
    rule('watch', 'get', 'list', 'create', 'update').groups(coordination).resources('leases'),
    rule('watch', 'get', 'list', 'create', 'update').groups(coordination).resources('leasecandidates'),
  ]);

export function bootstrapNamespaceRoles(): KubeObject[] {
  return [
    namespacedRole(kubePublic, 'system:controller:bootstrap-signer', [
      rule(...read)
        .groups(core)
        .resources('configmaps'),
      rule('update').groups(core).resources('configmaps').names('cluster-info'),
      eventsRule(),
    ]),
    namespacedRole(kubeSystem, 'extension-apiserver-authentication-reader', [
      rule(...read)
        .groups(core)
        .resources('configmaps')
        .names('extension-apiserver-authentication'),
    ]),
    leaderLocking('kube-controller-manager'),
    leaderLocking('kube-scheduler'),
    namespacedRole(kubeSystem, 'system:controller:bootstrap-signer', [
      rule(...read)
        .groups(core)
        .resources('secrets'),
    ]),
    namespacedRole(kubeSystem, 'system:controller:cloud-provider', [
      rule('create', 'get', 'list', 'watch').groups(core).resources('configmaps'),
    ]),
    namespacedRole(kubeSystem, 'system:controller:token-cleaner', [
      rule('delete', ...read)
        .groups(core)
        .resources('secrets'),
      eventsRule(),
    ]),
  ];
}

export function bootstrapNamespaceRoleBindings(): KubeObject[] {
  return [
    namespacedBinding(kubePublic, 'system:controller:bootstrap-signer').serviceAccounts(
      kubeSystem,
      'bootstrap-signer',
    ),
    namespacedBinding(
      kubeSystem,
      'extension-apiserver-authentication-reader',
      'system::extension-apiserver-authentication-reader',
    ).users('system:kube-controller-manager', 'system:kube-scheduler'),
    namespacedBinding(kubeSystem, 'system::leader-locking-kube-controller-manager')
      .users('system:kube-controller-manager')
      .serviceAccounts(kubeSystem, 'kube-controller-manager', 'leader-election-controller'),
    namespacedBinding(kubeSystem, 'system::leader-locking-kube-scheduler')
      .users('system:kube-scheduler')
      .serviceAccounts(kubeSystem, 'kube-scheduler'),
    namespacedBinding(kubeSystem, 'system:controller:bootstrap-signer').serviceAccounts(
      kubeSystem,
      'bootstrap-signer',
    ),
    namespacedBinding(kubeSystem, 'system:controller:cloud-provider').serviceAccounts(
      kubeSystem,
      'cloud-provider',
    ),
    namespacedBinding(kubeSystem, 'system:controller:token-cleaner').serviceAccounts(
      kubeSystem,
      'token-cleaner',
    ),
  ].map((b) => b.build());
}
