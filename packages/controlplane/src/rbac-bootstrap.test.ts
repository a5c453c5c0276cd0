import test from 'ava';
import { startCluster, waitFor } from './test-helpers.js';

// The control plane starts with upstream's bootstrap RBAC policy, fills the aggregated roles, and a
// restart changes none of it.

test('a new control plane serves the bootstrap roles; admin aggregates; a restart rewrites nothing', async (t) => {
  const first = await startCluster();
  const dataDir = first.dataDir;
  try {
    const proxier = await first.api(
      'GET',
      '/apis/rbac.authorization.k8s.io/v1/clusterroles/system:node-proxier',
    );
    t.is(proxier.status, 200);
    t.is(proxier.json.metadata.labels['kubernetes.io/bootstrapping'], 'rbac-defaults');
    const lock = await first.api(
      'GET',
      '/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings/system::leader-locking-kube-scheduler',
    );
    t.is(lock.status, 200);
    const admin = await waitFor(async () => {
      const r = (await first.api('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/admin')).json;
      // pods/log comes from view through edit: once admin has it, the chain has converged.
      const resources = (r.rules ?? []).flatMap((x: { resources?: string[] }) => x.resources ?? []);
      return resources.includes('pods/log') ? r : undefined;
    }, 'admin aggregated from edit, view and its own part');
    t.true(admin.rules.some((r: { resources?: string[] }) => r.resources?.includes('rolebindings')));
    await first.stop();

    const second = await startCluster({ dataDir });
    try {
      const again = (await second.api('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/admin')).json;
      t.is(again.metadata.resourceVersion, admin.metadata.resourceVersion);
      t.deepEqual(second.logs.find('bootstrap RBAC policy reconciled'), []);
    } finally {
      await second.destroy();
    }
  } catch (err) {
    await first.destroy();
    throw err;
  }
});
