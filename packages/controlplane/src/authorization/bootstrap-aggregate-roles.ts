/**
 * The parts the user-facing roles admin, edit and view are aggregated from (upstream's
 * system:aggregate-to-* roles in bootstrappolicy/policy.go): view reads most namespaced objects but
 * secrets; edit adds writes, secrets, exec and impersonating service accounts; admin adds roles and
 * bindings in the namespace.
 */
import type { KubeObject } from '../object.js';
import { clusterRole, apiGroup, read, readWrite, rule, write } from './bootstrap-policy-builders.js';

const { core, apps, extensions, autoscaling, batch, policy, networking, coordination, authorization, rbac } =
  apiGroup;

/** The label by which a ClusterRole's rules are aggregated into admin, edit or view. */
export const aggregateTo = (role: 'admin' | 'edit' | 'view') => ({
  [`rbac.authorization.k8s.io/aggregate-to-${role}`]: 'true',
});

export function bootstrapAggregateRoles(): KubeObject[] {
  return [
    clusterRole(
      'system:aggregate-to-admin',
      [
        rule('create').groups(authorization).resources('localsubjectaccessreviews'),
        rule(...readWrite)
          .groups(rbac)
          .resources('roles', 'rolebindings'),
      ],
      { labels: aggregateTo('admin') },
    ),
    clusterRole(
      'system:aggregate-to-edit',
      [
        rule(...read)
          .groups(core)
          .resources(
            'pods/attach',
            'pods/proxy',
            'pods/exec',
            'pods/portforward',
            'secrets',
            'services/proxy',
          ),
        rule('impersonate').groups(core).resources('serviceaccounts'),
        rule(...write)
          .groups(core)
          .resources('pods', 'pods/attach', 'pods/proxy', 'pods/exec', 'pods/portforward'),
        rule('create').groups(core).resources('pods/eviction'),
        rule(...write)
          .groups(core)
          .resources(
            'replicationcontrollers',
            'replicationcontrollers/scale',
            'serviceaccounts',
            'services',
            'services/proxy',
            'persistentvolumeclaims',
            'configmaps',
            'secrets',
            'events',
          ),
        rule('create').groups(core).resources('serviceaccounts/token'),
        rule(...write)
          .groups(apps)
          .resources(
            'statefulsets',
            'statefulsets/scale',
            'daemonsets',
            'deployments',
            'deployments/scale',
            'deployments/rollback',
            'replicasets',
            'replicasets/scale',
          ),
        rule(...write)
          .groups(autoscaling)
          .resources('horizontalpodautoscalers'),
        rule(...write)
          .groups(batch)
          .resources('jobs', 'cronjobs'),
        rule(...write)
          .groups(extensions)
          .resources(
            'daemonsets',
            'deployments',
            'deployments/scale',
            'deployments/rollback',
            'ingresses',
            'replicasets',
            'replicasets/scale',
            'replicationcontrollers/scale',
            'networkpolicies',
          ),
        rule(...write)
          .groups(policy)
          .resources('poddisruptionbudgets'),
        rule(...write)
          .groups(networking)
          .resources('ingresses', 'networkpolicies'),
        rule(...readWrite)
          .groups(coordination)
          .resources('leases'),
      ],
      { labels: aggregateTo('edit') },
    ),
    clusterRole(
      'system:aggregate-to-view',
      [
        rule(...read)
          .groups(core)
          .resources(
            'pods',
            'replicationcontrollers',
            'replicationcontrollers/scale',
            'serviceaccounts',
            'services',
            'services/status',
            'endpoints',
            'persistentvolumeclaims',
            'persistentvolumeclaims/status',
            'configmaps',
          ),
        rule(...read)
          .groups(core)
          .resources(
            'limitranges',
            'resourcequotas',
            'bindings',
            'events',
            'pods/status',
            'resourcequotas/status',
            'namespaces/status',
            'replicationcontrollers/status',
            'pods/log',
          ),
        rule(...read)
          .groups(core)
          .resources('namespaces'),
        rule(...read)
          .groups('discovery.k8s.io')
          .resources('endpointslices'),
        rule(...read)
          .groups(apps)
          .resources(
            'controllerrevisions',
            'statefulsets',
            'statefulsets/status',
            'statefulsets/scale',
            'daemonsets',
            'daemonsets/status',
            'deployments',
            'deployments/status',
            'deployments/scale',
            'replicasets',
            'replicasets/status',
            'replicasets/scale',
          ),
        rule(...read)
          .groups(autoscaling)
          .resources('horizontalpodautoscalers', 'horizontalpodautoscalers/status'),
        rule(...read)
          .groups(batch)
          .resources('jobs', 'cronjobs', 'cronjobs/status', 'jobs/status'),
        rule(...read)
          .groups(extensions)
          .resources(
            'daemonsets',
            'daemonsets/status',
            'deployments',
            'deployments/scale',
            'deployments/status',
            'ingresses',
            'ingresses/status',
            'replicasets',
            'replicasets/scale',
            'replicasets/status',
            'replicationcontrollers/scale',
            'networkpolicies',
          ),
        rule(...read)
          .groups(policy)
          .resources('poddisruptionbudgets', 'poddisruptionbudgets/status'),
        rule(...read)
          .groups(networking)
          .resources('ingresses', 'ingresses/status', 'networkpolicies'),
      ],
      { labels: aggregateTo('view') },
    ),
  ];
}
