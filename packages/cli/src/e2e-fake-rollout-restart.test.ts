import test from 'ava';
import { NodeletUp, requireKubectl } from './e2e-containerd/nodelet-up.js';
import { pollUntil } from './test-helpers.js';

/**
 * Controllers keep no work in memory only: a Deployment stopped mid-rollout — `nodelet up` killed while
 * the new ReplicaSet has some of its pods and the old one the rest — finishes its rollout after
 * `nodelet up` starts again on the same data directory (fake runtime, the real kubectl). minReadySeconds
 * makes the rollout slow enough to stop in the middle.
 */
const kubectl = requireKubectl(test);

const deployment = (image: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: slow}
spec:
  replicas: 3
  minReadySeconds: 2
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: slow}}
  template:
    metadata: {labels: {app: slow}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: web, image: ${image}}]
`;

if (kubectl) {
  test('a Deployment stopped mid-rollout by a nodelet up restart completes its rollout afterwards', async (t) => {
    t.timeout(180_000);
    const { dataDir } = NodeletUp.newDataDir();
    const args = ['--hostname-override', 'rollout'];
    let up = await NodeletUp.start(args, { dataDir });
    t.teardown(async () => {
      await up.stop();
      up.dispose(); // the data directory too
    });
    await up.waitNodeReady('rollout');
    await up.kubectlOk(['apply', '-f', '-'], deployment('nginx:1.26'));
    const first = await up.kubectl(['rollout', 'status', 'deployment/slow', '--timeout=90s']);
    t.is(first.code, 0, first.stderr);

    await up.kubectlOk(['apply', '-f', '-'], deployment('nginx:1.27'));
    // Mid-rollout: the new ReplicaSet has pods, the old one still has some.
    const replicaSets = async () =>
      JSON.parse(await up.kubectlOk(['get', 'rs', '-l', 'app=slow', '-o', 'json'])).items.map((rs: any) => ({
        image: rs.spec.template.spec.containers[0].image as string,
        replicas: rs.spec.replicas as number,
      }));
    const middle = await pollUntil(
      'the new ReplicaSet to have pods while the old one still has some',
      async () => {
        const sets = await replicaSets();
        const next = sets.find((s: any) => s.image === 'nginx:1.27');
        const old = sets.find((s: any) => s.image === 'nginx:1.26');
        return next?.replicas >= 1 && old?.replicas >= 1 ? sets : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    t.log(`stopped with ${JSON.stringify(middle)}`);
    t.is((await up.stop()).code, 0, up.stderr().slice(-2000));

    up = await NodeletUp.start(args, { dataDir });
    const after = await up.kubectl(['rollout', 'status', 'deployment/slow', '--timeout=120s']);
    t.is(after.code, 0, `${after.stderr}\n${up.stderr().slice(-3000)}`);
    t.regex(after.stdout, /deployment "slow" successfully rolled out/);
    const sets = await replicaSets();
    t.deepEqual(
      sets.map((s: any) => `${s.image}=${s.replicas}`).sort(),
      ['nginx:1.26=0', 'nginx:1.27=3'],
      'the old ReplicaSet scaled to 0, the new one to 3',
    );
    const pods = JSON.parse(await up.kubectlOk(['get', 'pods', '-l', 'app=slow', '-o', 'json'])).items;
    const live = pods.filter((p: any) => !p.metadata.deletionTimestamp);
    t.deepEqual(
      live.map((p: any) => p.spec.containers[0].image),
      Array(3).fill('nginx:1.27'),
      'three live pods, all of the new template',
    );
  });
}
