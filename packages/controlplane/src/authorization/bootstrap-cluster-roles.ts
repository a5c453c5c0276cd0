/**
 * The cluster roles and bindings every cluster starts with, as upstream's bootstrappolicy/policy.go:
 * the user-facing roles (cluster-admin, and admin/edit/view aggregated from their system:aggregate-to-*
 * parts), discovery for everyone, and the roles of the components (kubelets, kube-proxy, scheduler,
 * controller manager, DNS, CSR approval). Policy data: rules naming resources nodelet does not serve
 * are kept as upstream has them.
 */
import type { KubeObject } from '../object.js';
import { aggregateTo, bootstrapAggregateRoles } from './bootstrap-aggregate-roles.js';
import {
  clusterBinding,
  clusterRole,
  eventsRule,
  apiGroup,
  read,
  rule,
} from './bootstrap-policy-builders.js';

const { core, apps, extensions, policy, coordination, storage, certificates, authentication, authorization } =
  apiGroup;

/** A signer-approval role of the CSR API: `approve` on one signer name. */
const approver = (name: string, signer: string) =>
  clusterRole(`system:certificates.k8s.io:${name}`, [
    rule('approve').groups(certificates).resources('signers').names(signer),
  ]);

/** Leader election of a component through its Lease. */
const leaderElection = (component: string) => [
  rule('create').groups(coordination).resources('leases'),
  rule('get', 'update').groups(coordination).resources('leases').names(component),
];

function nodeRules() {
  return [
    rule('create').groups(authentication).resources('tokenreviews'),
    rule('create').groups(authorization).resources('subjectaccessreviews', 'localsubjectaccessreviews'),
    rule(...read)
      .groups(core)
      .resources('services'),
    rule('create', 'get', 'list', 'watch').groups(core).resources('nodes'),
    rule('update', 'patch').groups(core).resources('nodes/status'),
    rule('update', 'patch').groups(core).resources('nodes'),
    rule('create', 'update', 'patch').groups(core).resources('events'),
    rule(...read)
      .groups(core)
      .resources('pods'),
    rule('create', 'delete').groups(core).resources('pods'),
    rule('update', 'patch').groups(core).resources('pods/status'),
    rule('create').groups(core).resources('pods/eviction'),
    rule(...read)
      .groups(core)
      .resources('secrets', 'configmaps'),
    rule('get').groups(core).resources('persistentvolumeclaims', 'persistentvolumes'),
    rule('get').groups(core).resources('endpoints'),
    rule('create', 'get', 'list', 'watch').groups(certificates).resources('certificatesigningrequests'),
    rule('get', 'create', 'update', 'patch', 'delete').groups(coordination).resources('leases'),
    rule('get').groups(storage).resources('volumeattachments'),
    rule('create').groups(core).resources('serviceaccounts/token'),
    rule('get', 'update', 'patch').groups(core).resources('persistentvolumeclaims/status'),
    rule(...read)
      .groups(storage)
      .resources('csidrivers'),
    rule('get', 'create', 'update', 'patch', 'delete').groups(storage).resources('csinodes'),
    rule(...read)
      .groups('node.k8s.io')
      .resources('runtimeclasses'),
  ];
}

export function bootstrapClusterRoles(): KubeObject[] {
  return [
    clusterRole('admin', [], { aggregateFrom: [aggregateTo('admin')] }),
    clusterRole('cluster-admin', [rule('*').groups('*').resources('*'), rule('*').urls('*')]),
    clusterRole('edit', [], { labels: aggregateTo('admin'), aggregateFrom: [aggregateTo('edit')] }),
    ...bootstrapAggregateRoles(),
    clusterRole('system:auth-delegator', [
      rule('create').groups(authentication).resources('tokenreviews'),
      rule('create').groups(authorization).resources('subjectaccessreviews'),
    ]),
    clusterRole('system:basic-user', [
      rule('create').groups(authorization).resources('selfsubjectaccessreviews', 'selfsubjectrulesreviews'),
      rule('create').groups(authentication).resources('selfsubjectreviews'),
    ]),
    clusterRole('system:certificates.k8s.io:certificatesigningrequests:nodeclient', [
      rule('create').groups(certificates).resources('certificatesigningrequests/nodeclient'),
    ]),
    clusterRole('system:certificates.k8s.io:certificatesigningrequests:selfnodeclient', [
      rule('create').groups(certificates).resources('certificatesigningrequests/selfnodeclient'),
    ]),
    approver('kube-apiserver-client-approver', 'kubernetes.io/kube-apiserver-client'),
    approver('kube-apiserver-client-kubelet-approver', 'kubernetes.io/kube-apiserver-client-kubelet'),
    approver('kubelet-serving-approver', 'kubernetes.io/kubelet-serving'),
    approver('legacy-unknown-approver', 'kubernetes.io/legacy-unknown'),
    clusterRole('system:discovery', [
      rule('get').urls(
        '/healthz',
        '/livez',
        '/readyz',
        '/version',
        '/version/',
        '/openapi',
        '/openapi/*',
        '/api',
        '/api/*',
        '/apis',
        '/apis/*',
      ),
    ]),
    clusterRole('system:heapster', [
      rule(...read)
        .groups(core)
        .resources('events', 'pods', 'nodes', 'namespaces'),
      rule(...read)
        .groups(extensions)
        .resources('deployments'),
    ]),
    clusterRole('system:kube-aggregator', [
      rule(...read)
        .groups(core)
        .resources('services', 'endpoints'),
    ]),
    clusterRole('system:kube-controller-manager', [
      eventsRule(),
      ...leaderElection('kube-controller-manager'),
      rule('create').groups(core).resources('secrets', 'serviceaccounts'),
      rule('delete').groups(core).resources('secrets'),
      rule('get').groups(core).resources('namespaces', 'secrets', 'serviceaccounts', 'configmaps'),
      rule('update').groups(core).resources('secrets', 'serviceaccounts'),
      rule('create').groups(authentication).resources('tokenreviews'),
      rule('create').groups(authorization).resources('subjectaccessreviews'),
      rule('list', 'watch').groups('*').resources('*'),
      rule('create').groups(core).resources('serviceaccounts/token'),
    ]),
    clusterRole('system:kube-dns', [rule('list', 'watch').groups(core).resources('endpoints', 'services')]),
    clusterRole('system:kube-scheduler', [
      eventsRule(),
      ...leaderElection('kube-scheduler'),
      rule(...read)
        .groups(core)
        .resources('nodes'),
      rule('get', 'list', 'watch', 'delete').groups(core).resources('pods'),
      rule('create').groups(core).resources('pods/binding', 'bindings'),
      rule('patch', 'update').groups(core).resources('pods/status'),
      rule(...read)
        .groups(core)
        .resources('replicationcontrollers', 'services'),
      rule(...read)
        .groups(apps, extensions)
        .resources('replicasets'),
      rule(...read)
        .groups(apps)
        .resources('statefulsets'),
      rule(...read)
        .groups(policy)
        .resources('poddisruptionbudgets'),
      rule(...read)
        .groups(core)
        .resources('persistentvolumeclaims', 'persistentvolumes'),
      rule('create').groups(authentication).resources('tokenreviews'),
      rule('create').groups(authorization).resources('subjectaccessreviews'),
      rule(...read)
        .groups(storage)
        .resources('csinodes'),
      rule(...read)
        .groups(core)
        .resources('namespaces'),
      rule(...read)
        .groups(storage)
        .resources('csidrivers'),
      rule(...read)
        .groups(storage)
        .resources('csistoragecapacities'),
    ]),
    clusterRole('system:kubelet-api-admin', [
      rule(...read)
        .groups(core)
        .resources('nodes'),
      rule('proxy').groups(core).resources('nodes'),
      rule('*').groups(core).resources('nodes/proxy', 'nodes/metrics', 'nodes/stats', 'nodes/log'),
    ]),
    clusterRole('system:monitoring', [
      rule('get').urls(
        '/metrics',
        '/metrics/slis',
        '/livez',
        '/readyz',
        '/healthz',
        '/livez/*',
        '/readyz/*',
        '/healthz/*',
      ),
    ]),
    clusterRole('system:node', nodeRules()),
    clusterRole('system:node-bootstrapper', [
      rule('create', 'get', 'list', 'watch').groups(certificates).resources('certificatesigningrequests'),
    ]),
    clusterRole('system:node-problem-detector', [
      rule('get').groups(core).resources('nodes'),
      rule('patch').groups(core).resources('nodes/status'),
      eventsRule(),
    ]),
    clusterRole('system:node-proxier', [
      rule('list', 'watch').groups(core).resources('services', 'endpoints'),
      rule(...read)
        .groups(core)
        .resources('nodes'),
      eventsRule(),
      rule('list', 'watch').groups('discovery.k8s.io').resources('endpointslices'),
    ]),
    clusterRole('system:persistent-volume-provisioner', [
      rule('get', 'list', 'watch', 'create', 'delete').groups(core).resources('persistentvolumes'),
      rule('get', 'list', 'watch', 'update').groups(core).resources('persistentvolumeclaims'),
      rule(...read)
        .groups(storage)
        .resources('storageclasses'),
      rule('watch').groups(core).resources('events'),
      eventsRule(),
    ]),
    clusterRole('system:public-info-viewer', [
      rule('get').urls('/healthz', '/livez', '/readyz', '/version', '/version/'),
    ]),
    clusterRole('system:service-account-issuer-discovery', [
      rule('get').urls('/.well-known/openid-configuration', '/openid/v1/jwks'),
    ]),
    clusterRole('system:volume-scheduler', [
      rule(...read, 'patch', 'update')
        .groups(core)
        .resources('persistentvolumes'),
      rule(...read)
        .groups(storage)
        .resources('storageclasses'),
      rule(...read, 'patch', 'update')
        .groups(core)
        .resources('persistentvolumeclaims'),
    ]),
    clusterRole('view', [], { labels: aggregateTo('edit'), aggregateFrom: [aggregateTo('view')] }),
  ];
}

export function bootstrapClusterRoleBindings(): KubeObject[] {
  return [
    clusterBinding('cluster-admin').groups('system:masters'),
    clusterBinding('system:monitoring').groups('system:monitoring'),
    clusterBinding('system:discovery').groups('system:authenticated'),
    clusterBinding('system:basic-user').groups('system:authenticated'),
    clusterBinding('system:public-info-viewer').groups('system:authenticated', 'system:unauthenticated'),
    clusterBinding('system:node-proxier').users('system:kube-proxy'),
    clusterBinding('system:kube-controller-manager').users('system:kube-controller-manager'),
    clusterBinding('system:kube-dns').serviceAccounts('kube-system', 'kube-dns'),
    clusterBinding('system:kube-scheduler').users('system:kube-scheduler'),
    clusterBinding('system:volume-scheduler').users('system:kube-scheduler'),
    // Kept without subjects: the Node authorizer grants kubelets what they need.
    clusterBinding('system:node'),
    clusterBinding('system:service-account-issuer-discovery').groups('system:serviceaccounts'),
  ].map((b) => b.build());
}
