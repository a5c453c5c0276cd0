import test from 'ava';
import { NodeletUp, requireKubectl } from './e2e-containerd/nodelet-up.js';
import { pollUntil } from './test-helpers.js';

/**
 * A Deployment as a new user drives one on `nodelet up --nodes 3` (fake runtime) with the real kubectl:
 * create (the pods spread over the three nodes), get, scale, a deleted pod replaced, rollout status, and
 * a new image rolled out.
 */
const kubectl = requireKubectl(test);

if (kubectl) {
  let up: NodeletUp;
  test.before(async () => {
    up = await NodeletUp.start(['--nodes', '3', '--hostname-override', 'deploy']);
    for (const node of ['deploy-1', 'deploy-2', 'deploy-3']) await up.waitNodeReady(node);
  });
  test.after.always(async () => {
    await up?.stop();
    up?.dispose();
  });

  /** The Deployment's pods that are not terminating. */
  async function livePods(): Promise<any[]> {
    const list = JSON.parse(await up.kubectlOk(['get', 'pods', '-l', 'app=web', '-o', 'json']));
    return list.items.filter((p: any) => !p.metadata.deletionTimestamp);
  }

  /** Pod name → phase of the Deployment's live pods. */
  async function webPods(): Promise<Map<string, string>> {
    return new Map((await livePods()).map((p) => [p.metadata.name, p.status?.phase ?? '']));
  }

  async function running(n: number, what: string): Promise<Map<string, string>> {
    return pollUntil(
      what,
      async () => {
        const pods = await webPods();
        return pods.size === n && [...pods.values()].every((p) => p === 'Running') ? pods : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, describe: () => up.stderr().slice(-2000) },
    );
  }

  const deployRow = async () => (await up.kubectlOk(['get', 'deploy', 'web', '--no-headers'])).trim();

  test.serial('kubectl create deployment --replicas=3: three pods Running, READY 3/3', async (t) => {
    t.regex(
      await up.kubectlOk(['create', 'deployment', 'web', '--image=nginx', '--replicas=3']),
      /deployment.apps\/web created/,
    );
    const pods = await running(3, 'three Running pods');
    for (const name of pods.keys())
      t.regex(name, /^web-[bcdfghjklmnpqrstvwxz2456789]+-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    const placed = await livePods();
    t.deepEqual(
      placed.map((p) => p.spec.nodeName).sort(),
      ['deploy-1', 'deploy-2', 'deploy-3'],
      'one pod on each node',
    );
    t.is(new Set(placed.map((p) => p.status.podIP)).size, 3, 'three distinct pod IPs');
    const row = await pollUntil(
      'READY 3/3',
      async () => {
        const r = await deployRow();
        return /^web\s+3\/3\s+3\s+3\s/.test(r) ? r : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    t.regex(row, /^web\s+3\/3\s+3\s+3\s/);
    const rollout = await up.kubectl(['rollout', 'status', 'deployment/web', '--timeout=60s']);
    t.is(rollout.code, 0, rollout.stderr);
    t.regex(rollout.stdout, /deployment "web" successfully rolled out/);
    const described = await up.kubectlOk(['describe', 'deployment', 'web']);
    t.regex(described, /Replicas:\s+3 desired \| 3 updated \| 3 total \| 3 available \| 0 unavailable/);
    t.regex(described, /StrategyType:\s+RollingUpdate/);
    t.regex(described, /RollingUpdateStrategy:\s+25% max unavailable, 25% max surge/);
    t.regex(described, /NewReplicaSet:\s+web-\w+ \(3\/3 replicas created\)/);
    t.regex(described, /Normal\s+ScalingReplicaSet\s+.*Scaled up replica set web-\w+ from 0 to 3/);
  });

  test.serial('kubectl scale deployment web --replicas=5: five pods', async (t) => {
    t.regex(
      await up.kubectlOk(['scale', 'deployment', 'web', '--replicas=5']),
      /deployment.apps\/web scaled/,
    );
    await running(5, 'five Running pods');
    const rollout = await up.kubectl(['rollout', 'status', 'deployment/web', '--timeout=60s']);
    t.is(rollout.code, 0, rollout.stderr);
    t.regex(await deployRow(), /^web\s+5\/5\s+5\s+5\s/);
  });

  test.serial('kubectl delete pod: the ReplicaSet makes a new one', async (t) => {
    const before = await webPods();
    const victim = [...before.keys()][0]!;
    await up.kubectlOk(['delete', 'pod', victim, '--wait=false']);
    const after = await pollUntil(
      'a replacement pod',
      async () => {
        const pods = await webPods();
        const fresh = [...pods.keys()].filter((n) => !before.has(n));
        return pods.size === 5 && !pods.has(victim) && fresh.length === 1 ? pods : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    t.false(after.has(victim));
    await running(5, 'five Running pods again');
  });

  test.serial('kubectl set image rolls to a new ReplicaSet; rollout status returns 0', async (t) => {
    await up.kubectlOk(['set', 'image', 'deployment/web', 'nginx=nginx:1.27']);
    const rollout = await up.kubectl(['rollout', 'status', 'deployment/web', '--timeout=90s']);
    t.is(rollout.code, 0, rollout.stderr);
    t.regex(rollout.stdout, /deployment "web" successfully rolled out/);
    const images = (await livePods()).map((p) => p.spec.containers[0].image as string);
    t.deepEqual([...new Set(images)], ['nginx:1.27']);
    const rs = await up.kubectlOk(['get', 'rs', '-l', 'app=web', '--no-headers']);
    t.regex(rs, /^web-\S+\s+5\s+5\s+5\s/m, 'the new ReplicaSet has all five');
    t.regex(rs, /^web-\S+\s+0\s+0\s+0\s/m, 'the old one is kept, at zero');
    const revision = await up.kubectlOk([
      'get',
      'deploy',
      'web',
      '-o',
      'jsonpath={.metadata.annotations.deployment\\.kubernetes\\.io/revision}',
    ]);
    t.is(revision, '2');
  });

  test.serial('kubectl rollout history and undo: back to the first template as revision 3', async (t) => {
    const history = await up.kubectlOk(['rollout', 'history', 'deployment/web']);
    t.regex(history, /REVISION\s+CHANGE-CAUSE\n1\s+<none>\n2\s+<none>/);
    await up.kubectlOk(['rollout', 'undo', 'deployment/web']);
    const rollout = await up.kubectl(['rollout', 'status', 'deployment/web', '--timeout=90s']);
    t.is(rollout.code, 0, rollout.stderr);
    const images = (await livePods()).map((p) => p.spec.containers[0].image as string);
    t.deepEqual([...new Set(images)], ['nginx']);
    const sets = JSON.parse(await up.kubectlOk(['get', 'rs', '-l', 'app=web', '-o', 'json'])).items;
    t.is(sets.length, 2, 'the first ReplicaSet is reused, not a third made');
    const revision = await up.kubectlOk([
      'get',
      'deploy',
      'web',
      '-o',
      'jsonpath={.metadata.annotations.deployment\\.kubernetes\\.io/revision}',
    ]);
    t.is(revision, '3');
  });

  test.serial('kubectl delete deployment web: its ReplicaSets and pods go too', async (t) => {
    await up.kubectlOk(['delete', 'deployment', 'web']);
    await pollUntil(
      'no ReplicaSets or pods of web',
      async () => {
        const rs = await up.kubectlOk(['get', 'rs', '-l', 'app=web', '-o', 'name']);
        const pods = await up.kubectlOk(['get', 'pods', '-l', 'app=web', '-o', 'name']);
        return rs.trim() === '' && pods.trim() === '' ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, describe: () => up.stderr().slice(-2000) },
    );
    t.pass();
  });

  test.serial('kubectl delete deployment --cascade=orphan keeps the ReplicaSet and its pods', async (t) => {
    await up.kubectlOk(['create', 'deployment', 'kept', '--image=nginx', '--replicas=2']);
    const rollout = await up.kubectl(['rollout', 'status', 'deployment/kept', '--timeout=60s']);
    t.is(rollout.code, 0, rollout.stderr);
    await up.kubectlOk(['delete', 'deployment', 'kept', '--cascade=orphan']);
    await pollUntil(
      'the Deployment gone',
      async () => {
        const r = await up.kubectl(['get', 'deployment', 'kept']);
        return r.code !== 0 ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const rs = JSON.parse(await up.kubectlOk(['get', 'rs', '-l', 'app=kept', '-o', 'json']));
    t.is(rs.items.length, 1);
    t.falsy(rs.items[0].metadata.ownerReferences);
    const pods = await up.kubectlOk(['get', 'pods', '-l', 'app=kept', '-o', 'name']);
    t.is(pods.trim().split('\n').length, 2);
  });
}
