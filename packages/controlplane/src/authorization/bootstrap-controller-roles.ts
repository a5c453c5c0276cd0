/**
 * The roles of kube-controller-manager's controllers when each runs under its own service account
 * (`--use-service-account-credentials`), as upstream's bootstrappolicy/controller_policy.go: a
 * ClusterRole `system:controller:<name>` per controller, bound to the ServiceAccount `<name>` in
 * kube-system.
 */
import type { KubeObject } from '../object.js';
import {
  clusterBinding,
  clusterRole,
  eventsRule,
  apiGroup,
  read,
  rule,
  type RuleBuilder,
} from './bootstrap-policy-builders.js';

const { core, apps, extensions, batch, storage, resource, networking, certificates } = apiGroup;

export const controllerRolePrefix = 'system:controller:';
const controllerNamespace = 'kube-system';

const controllers: Record<string, () => RuleBuilder[]> = {
  'attachdetach-controller': () => [
    rule('list', 'watch').groups(core).resources('persistentvolumes', 'persistentvolumeclaims'),
    rule(...read)
      .groups(core)
      .resources('nodes'),
    rule('patch', 'update').groups(core).resources('nodes/status'),
    rule('list', 'watch').groups(core).resources('pods'),
    eventsRule(),
    rule('get', 'create', 'delete', 'list', 'watch').groups(storage).resources('volumeattachments'),
    rule(...read)
      .groups(storage)
      .resources('csidrivers'),
    rule(...read)
      .groups(storage)
      .resources('csinodes'),
  ],
  'certificate-controller': () => [
    rule('get', 'list', 'watch', 'delete').groups(certificates).resources('certificatesigningrequests'),
    rule('update')
      .groups(certificates)
      .resources('certificatesigningrequests/status', 'certificatesigningrequests/approval'),
    rule('approve')
      .groups(certificates)
      .resources('signers')
      .names('kubernetes.io/kube-apiserver-client-kubelet'),
    rule('sign')
      .groups(certificates)
      .resources('signers')
      .names(
        'kubernetes.io/kube-apiserver-client',
        'kubernetes.io/kube-apiserver-client-kubelet',
        'kubernetes.io/kubelet-serving',
        'kubernetes.io/legacy-unknown',
      ),
    rule('create').groups('authorization.k8s.io').resources('subjectaccessreviews'),
    eventsRule(),
  ],
  'clusterrole-aggregation-controller': () => [
    // Aggregating may add any rule to a role: it must be allowed to escalate.
    rule('escalate', 'get', 'list', 'watch', 'update', 'patch')
      .groups('rbac.authorization.k8s.io')
      .resources('clusterroles'),
  ],
  'cronjob-controller': () => [
    rule('get', 'list', 'watch', 'update').groups(batch).resources('cronjobs'),
    rule('get', 'list', 'watch', 'create', 'update', 'delete', 'patch').groups(batch).resources('jobs'),
    rule('update').groups(batch).resources('cronjobs/status'),
    rule('update').groups(batch).resources('cronjobs/finalizers'),
    rule('list', 'watch', 'delete').groups(core).resources('pods'),
    eventsRule(),
  ],
  'daemon-set-controller': () => [
    rule(...read)
      .groups(apps, extensions)
      .resources('daemonsets'),
    rule('update').groups(apps, extensions).resources('daemonsets/status'),
    rule('update').groups(apps, extensions).resources('daemonsets/finalizers'),
    rule('list', 'watch').groups(core).resources('nodes'),
    rule('list', 'watch', 'create', 'delete', 'patch').groups(core).resources('pods'),
    rule('create').groups(core).resources('pods/binding'),
    rule('get', 'list', 'watch', 'create', 'delete', 'update', 'patch')
      .groups(apps)
      .resources('controllerrevisions'),
    eventsRule(),
  ],
  'deployment-controller': () => [
    rule('get', 'list', 'watch', 'update').groups(apps, extensions).resources('deployments'),
    rule('update').groups(apps, extensions).resources('deployments/status'),
    rule('update').groups(apps, extensions).resources('deployments/finalizers'),
    rule('get', 'list', 'watch', 'create', 'update', 'patch', 'delete')
      .groups(apps, extensions)
      .resources('replicasets'),
    // Pods are listed to check that none of an old ReplicaSet still runs (Recreate); update for adoption.
    rule('get', 'list', 'watch', 'update').groups(core).resources('pods'),
    eventsRule(),
  ],
  'device-taint-eviction-controller': () => [
    rule('get', 'list', 'watch', 'delete').groups(core).resources('pods'),
    rule('update', 'patch').groups(core).resources('pods/status'),
    rule(...read)
      .groups(resource)
      .resources('resourceclaims'),
    rule(...read)
      .groups(resource)
      .resources('resourceslices'),
    rule(...read)
      .groups(resource)
      .resources('deviceclasses'),
    eventsRule(),
  ],
  'disruption-controller': () => [
    rule(...read)
      .groups(apps, extensions)
      .resources('deployments'),
    rule(...read)
      .groups(apps, extensions)
      .resources('replicasets'),
    rule(...read)
      .groups(core)
      .resources('replicationcontrollers'),
    rule(...read)
      .groups('policy')
      .resources('poddisruptionbudgets'),
    rule(...read)
      .groups(apps)
      .resources('statefulsets'),
    rule('update').groups('policy').resources('poddisruptionbudgets/status'),
    rule('patch', 'update').groups(core).resources('pods/status'),
    rule('get').groups('*').resources('*/scale'),
    eventsRule(),
  ],
  'endpoint-controller': () => [
    rule(...read)
      .groups(core)
      .resources('services', 'pods'),
    rule('get', 'list', 'watch', 'create', 'update', 'delete').groups(core).resources('endpoints'),
    rule('create').groups(core).resources('endpoints/restricted'),
    eventsRule(),
  ],
  'endpointslice-controller': () => [
    rule(...read)
      .groups(core)
      .resources('services', 'pods', 'nodes'),
    // The OwnerReferencesPermissionEnforcement admission wants update of the owner's finalizers.
    rule('update').groups(core).resources('services/finalizers'),
    rule('get', 'list', 'watch', 'create', 'update', 'delete')
      .groups('discovery.k8s.io')
      .resources('endpointslices'),
    eventsRule(),
  ],
  'endpointslicemirroring-controller': () => [
    rule(...read)
      .groups(core)
      .resources('services', 'endpoints'),
    rule('update').groups(core).resources('services/finalizers'),
    rule('update').groups(core).resources('endpoints/finalizers'),
    rule('get', 'list', 'watch', 'create', 'update', 'delete')
      .groups('discovery.k8s.io')
      .resources('endpointslices'),
    eventsRule(),
  ],
  'ephemeral-volume-controller': () => [
    rule(...read)
      .groups(core)
      .resources('pods'),
    rule('update').groups(core).resources('pods/finalizers'),
    rule('get', 'list', 'watch', 'create').groups(core).resources('persistentvolumeclaims'),
    eventsRule(),
  ],
  'expand-controller': () => [
    rule('get', 'list', 'watch', 'update', 'patch').groups(core).resources('persistentvolumes'),
    rule('update', 'patch').groups(core).resources('persistentvolumeclaims/status'),
    rule(...read)
      .groups(core)
      .resources('persistentvolumeclaims'),
    eventsRule(),
  ],
  'generic-garbage-collector': () => [
    // It deletes dependents of any kind and removes their owner references.
    rule('get', 'list', 'watch', 'patch', 'update', 'delete').groups('*').resources('*'),
    eventsRule(),
  ],
  'horizontal-pod-autoscaler': () => [
    rule(...read)
      .groups('autoscaling')
      .resources('horizontalpodautoscalers'),
    rule('update').groups('autoscaling').resources('horizontalpodautoscalers/status'),
    rule('get', 'update').groups('*').resources('*/scale'),
    rule('list', 'watch').groups(core).resources('pods'),
    rule('list', 'watch').groups('metrics.k8s.io').resources('pods'),
    rule(...read)
      .groups('custom.metrics.k8s.io')
      .resources('*'),
    rule(...read)
      .groups('external.metrics.k8s.io')
      .resources('*'),
    eventsRule(),
  ],
  'job-controller': () => [
    rule('get', 'list', 'watch', 'update', 'patch').groups(batch).resources('jobs'),
    rule('update').groups(batch).resources('jobs/status'),
    rule('update').groups(batch).resources('jobs/finalizers'),
    rule('list', 'watch', 'create', 'delete', 'patch').groups(core).resources('pods'),
    eventsRule(),
  ],
  'legacy-service-account-token-cleaner': () => [
    rule('get')
      .groups(core)
      .resources('configmaps')
      .names('kube-apiserver-legacy-service-account-token-tracking'),
    rule('patch', 'delete').groups(core).resources('secrets'),
  ],
  'namespace-controller': () => [
    rule('get', 'list', 'watch', 'delete').groups(core).resources('namespaces'),
    rule('update').groups(core).resources('namespaces/finalize', 'namespaces/status'),
    rule('get', 'list', 'watch', 'delete', 'deletecollection').groups('*').resources('*'),
  ],
  'node-controller': () => [
    rule('get', 'list', 'watch', 'update', 'delete', 'patch').groups(core).resources('nodes'),
    rule('patch', 'update').groups(core).resources('nodes/status'),
    rule('patch', 'update').groups(core).resources('pods/status'),
    rule('list', 'delete', 'get', 'watch').groups(core).resources('pods'),
    eventsRule(),
  ],
  'persistent-volume-binder': () => [
    rule('get', 'list', 'watch', 'update', 'create', 'delete').groups(core).resources('persistentvolumes'),
    rule('update').groups(core).resources('persistentvolumes/status'),
    rule('get', 'list', 'watch', 'update').groups(core).resources('persistentvolumeclaims'),
    rule('update').groups(core).resources('persistentvolumeclaims/status'),
    rule('get', 'list', 'watch', 'create', 'delete').groups(core).resources('pods'),
    rule(...read)
      .groups(storage)
      .resources('storageclasses'),
    rule('list', 'watch').groups(core).resources('nodes'),
    eventsRule(),
    rule('watch').groups(core).resources('events'),
  ],
  'pod-garbage-collector': () => [
    rule('list', 'watch', 'delete').groups(core).resources('pods'),
    rule(...read)
      .groups(core)
      .resources('nodes'),
    rule('patch').groups(core).resources('pods/status'),
  ],
  'pv-protection-controller': () => [
    rule('get', 'list', 'watch', 'update').groups(core).resources('persistentvolumes'),
    eventsRule(),
  ],
  'pvc-protection-controller': () => [
    rule('get', 'list', 'watch', 'update').groups(core).resources('persistentvolumeclaims'),
    rule('update').groups(core).resources('persistentvolumeclaims/status'),
    rule(...read)
      .groups(core)
      .resources('pods'),
    eventsRule(),
  ],
  'replicaset-controller': () => [
    rule('get', 'list', 'watch', 'update').groups(apps, extensions).resources('replicasets'),
    rule('update').groups(apps, extensions).resources('replicasets/status'),
    rule('update').groups(apps, extensions).resources('replicasets/finalizers'),
    rule('list', 'watch', 'patch', 'create', 'delete').groups(core).resources('pods'),
    eventsRule(),
  ],
  'replication-controller': () => [
    rule('get', 'list', 'watch', 'update').groups(core).resources('replicationcontrollers'),
    rule('update').groups(core).resources('replicationcontrollers/status'),
    rule('update').groups(core).resources('replicationcontrollers/finalizers'),
    rule('list', 'watch', 'patch', 'create', 'delete').groups(core).resources('pods'),
    eventsRule(),
  ],
  'resource-claim-controller': () => [
    rule(...read)
      .groups(core)
      .resources('pods'),
    rule('update').groups(core).resources('pods/finalizers'),
    rule('get', 'list', 'watch', 'create', 'delete').groups(resource).resources('resourceclaims'),
    rule('update', 'patch').groups(resource).resources('resourceclaims', 'resourceclaims/status'),
    rule('update', 'patch').groups(core).resources('pods/status'),
    eventsRule(),
    rule('update', 'patch').groups(resource).resources('resourceclaims/binding'),
  ],
  'resourcequota-controller': () => [
    // Quota counts objects of every kind.
    rule('list', 'watch').groups('*').resources('*'),
    rule('update').groups(core).resources('resourcequotas/status'),
    eventsRule(),
  ],
  'root-ca-cert-publisher': () => [
    rule('create', 'update').groups(core).resources('configmaps'),
    eventsRule(),
  ],
  'route-controller': () => [
    rule('list', 'watch').groups(core).resources('nodes'),
    rule('patch').groups(core).resources('nodes/status'),
    eventsRule(),
  ],
  'selinux-warning-controller': () => [
    eventsRule(),
    rule(...read)
      .groups(core)
      .resources('persistentvolumes'),
    rule(...read)
      .groups(core)
      .resources('persistentvolumeclaims'),
    rule(...read)
      .groups(core)
      .resources('pods'),
    rule(...read)
      .groups(storage)
      .resources('csidrivers'),
  ],
  'service-account-controller': () => [
    rule('create').groups(core).resources('serviceaccounts'),
    eventsRule(),
  ],
  'service-cidrs-controller': () => [
    rule('get', 'list', 'watch', 'patch', 'update').groups(networking).resources('servicecidrs'),
    rule('patch', 'update').groups(networking).resources('servicecidrs/finalizers'),
    rule('patch', 'update').groups(networking).resources('servicecidrs/status'),
    rule(...read)
      .groups(networking)
      .resources('ipaddresses'),
    eventsRule(),
  ],
  'service-controller': () => [
    rule(...read)
      .groups(core)
      .resources('services'),
    rule('patch', 'update').groups(core).resources('services/status'),
    rule('list', 'watch').groups(core).resources('nodes'),
    eventsRule(),
  ],
  'statefulset-controller': () => [
    rule('list', 'watch').groups(core).resources('pods'),
    rule(...read)
      .groups(apps)
      .resources('statefulsets'),
    rule('update').groups(apps).resources('statefulsets/status'),
    rule('update').groups(apps).resources('statefulsets/finalizers'),
    rule('get', 'create', 'delete', 'update', 'patch').groups(core).resources('pods'),
    rule('get', 'list', 'watch', 'create', 'delete', 'update', 'patch')
      .groups(apps)
      .resources('controllerrevisions'),
    rule('get', 'create', 'list', 'watch').groups(core).resources('persistentvolumeclaims'),
    rule('update', 'delete').groups(core).resources('persistentvolumeclaims'),
    rule('update').groups(core).resources('pods/finalizers'),
    eventsRule(),
  ],
  'ttl-after-finished-controller': () => [
    rule('get', 'list', 'watch', 'delete').groups(batch).resources('jobs'),
    eventsRule(),
  ],
  'ttl-controller': () => [
    rule('update', 'patch', 'list', 'watch').groups(core).resources('nodes'),
    eventsRule(),
  ],
  'validatingadmissionpolicy-status-controller': () => [
    rule(...read)
      .groups('admissionregistration.k8s.io')
      .resources('validatingadmissionpolicies'),
    rule('get', 'patch', 'update')
      .groups('admissionregistration.k8s.io')
      .resources('validatingadmissionpolicies/status'),
    eventsRule(),
  ],
  'volumeattributesclass-protection-controller': () => [
    rule(...read)
      .groups(core)
      .resources('persistentvolumeclaims'),
    rule(...read)
      .groups(core)
      .resources('persistentvolumes'),
    rule('get', 'list', 'watch', 'update').groups(storage).resources('volumeattributesclasses'),
    eventsRule(),
  ],
};

export function bootstrapControllerRoles(): KubeObject[] {
  return Object.entries(controllers).map(([name, rules]) =>
    clusterRole(`${controllerRolePrefix}${name}`, rules()),
  );
}

/** Each controller's role bound to its service account in kube-system (upstream's addControllerRole). */
export function bootstrapControllerRoleBindings(): KubeObject[] {
  return Object.keys(controllers).map((name) =>
    clusterBinding(`${controllerRolePrefix}${name}`).serviceAccounts(controllerNamespace, name).build(),
  );
}
