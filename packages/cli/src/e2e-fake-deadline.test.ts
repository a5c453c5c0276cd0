import test from 'ava';
import { NodeletUp, requireKubectl } from './e2e-containerd/nodelet-up.js';
import { pollUntil } from './test-helpers.js';

/**
 * spec.activeDeadlineSeconds as a kubectl user sees it on `nodelet up` (fake runtime): the pod runs, then
 * after its deadline is Failed with reason DeadlineExceeded, with the kubelet's event — as on a real cluster.
 */
const kubectl = requireKubectl(test);

const pod = `apiVersion: v1
kind: Pod
metadata: {name: bounded}
spec:
  activeDeadlineSeconds: 3
  terminationGracePeriodSeconds: 1
  containers: [{name: main, image: nodelet.test/busybox:1}]
`;

if (kubectl) {
  let up: NodeletUp;
  test.before(async () => {
    up = await NodeletUp.start(['--hostname-override', 'deadline']);
    await up.waitNodeReady('deadline');
  });
  test.after.always(async () => {
    await up?.stop();
    up?.dispose();
  });

  test("a pod past activeDeadlineSeconds: Failed with reason DeadlineExceeded and the kubelet's event", async (t) => {
    await up.kubectlOk(['apply', '-f', '-'], pod);
    const reason = await pollUntil(
      'the pod to be failed for its deadline',
      async () => {
        const r = await up.kubectl([
          'get',
          'pod',
          'bounded',
          '-o',
          'jsonpath={.status.phase}/{.status.reason}',
        ]);
        return r.stdout === 'Failed/DeadlineExceeded' ? r.stdout : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, describe: () => up.stderr().slice(-2000) },
    );
    t.is(reason, 'Failed/DeadlineExceeded');
    const row = await up.kubectlOk(['get', 'pod', 'bounded', '--no-headers']);
    // As upstream's printer: the stopped container's reason (Error, exit 143) wins over the pod's.
    t.regex(row, /^bounded\s+0\/1\s+Error\s+0\s/);
    const events = await pollUntil(
      'the DeadlineExceeded event',
      async () => {
        const r = await up.kubectl([
          'get',
          'events',
          '--field-selector',
          'involvedObject.name=bounded',
          '--no-headers',
        ]);
        return /DeadlineExceeded/.test(r.stdout) ? r.stdout : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    t.regex(
      events,
      /Normal\s+DeadlineExceeded\s+pod\/bounded\s+Pod was active on the node longer than the specified deadline/,
    );
  });
}
