// The kubelet against the embedded control plane (`@nodelet/controlplane`, issue 5) over HTTPS, through
// @kubernetes/client-node, on the fake runtime and real time. The control plane is loaded at run time
// (the kubelet does not depend on it); these tests are skipped when it is not built.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { createLogger, MemorySink, VirtualClock } from '@nodelet/kernel';
import { apiPod } from './test-harness.js';
import {
  ControlPlaneClass,
  Env,
  Node,
  adminClients,
  advanceUntil,
  cpKubectlTest,
  cpTest,
  makeKubelet,
  podBody,
  startControlPlane,
  staticPodFor,
  until,
} from './test-control-plane.js';

cpKubectlTest(
  'joins nodelet up: node Ready, lease renewed, a pod runs with its IP, kubectl sees it',
  async (t) => {
    const env = await startControlPlane();
    const node = makeKubelet(env, await env.cp.nodeKubeconfig('node1'));
    try {
      await node.kubelet.start();
      const ready = await until('node Ready', async () => {
        const n = await env.core.readNode({ name: 'node1' });
        return n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' && n;
      });
      t.is(ready.metadata?.labels?.['kubernetes.io/hostname'], 'node1');
      const lease = await until('lease', () =>
        env.coordination.readNamespacedLease({ namespace: 'kube-node-lease', name: 'node1' }),
      );
      t.is(lease.spec?.leaseDurationSeconds, 40);

      await env.core.createNamespacedPod({ namespace: 'default', body: podBody('web') });
      const created = Date.now();
      const running = await until('pod Running', async () => {
        const p = await env.core.readNamespacedPod({ namespace: 'default', name: 'web' });
        return p.status?.phase === 'Running' && p.status.podIP ? p : undefined;
      });
      t.log(
        `Running with IP ${running.status!.podIP} in the API ${Date.now() - created} ms after the create`,
      );
      t.is(running.spec?.nodeName, 'node1');
      t.is(running.status?.hostIP, '127.0.0.1');

      const get = await env.kubectl('get', 'pods', '-o', 'wide');
      t.is(get.code, 0, get.stderr);
      t.regex(get.stdout, /web\s+1\/1\s+Running\s+0\s+\S+\s+\d+\.\d+\.\d+\.\d+\s+node1/);
      const nodes = await env.kubectl('get', 'nodes');
      t.regex(nodes.stdout, /node1\s+Ready/);
      const leases = await env.kubectl('get', 'lease', '-n', 'kube-node-lease');
      t.regex(leases.stdout, /node1\s+node1/);
    } finally {
      await node.kubelet.stop();
      await env.cp.stop();
    }
  },
);

cpKubectlTest(
  'kubectl delete: the pod is terminated gracefully, then gone; a static pod shows as a mirror pod',
  async (t) => {
    const env = await startControlPlane();
    const node = makeKubelet(env, await env.cp.nodeKubeconfig('node1'));
    try {
      node.statics.set([staticPodFor('etcd', 'node1')]);
      await node.kubelet.start();
      await env.core.createNamespacedPod({
        namespace: 'default',
        body: podBody('slow', { terminationGracePeriodSeconds: 2 }) as k8s.V1Pod,
      });
      // The fake container ignores SIGTERM: it is killed when the grace period ends.
      node.runtime.script((c) => c.podName === 'slow', { ignoreStop: true });
      await until('slow Running', async () => {
        const p = await env.core.readNamespacedPod({ namespace: 'default', name: 'slow' });
        return p.status?.phase === 'Running';
      });
      const started = Date.now();
      const del = await env.kubectl('delete', 'pod', 'slow', '--timeout=30s');
      const took = Date.now() - started;
      t.is(del.code, 0, del.stderr);
      t.regex(del.stdout, /pod "slow" deleted/);
      t.log(`kubectl delete returned after ${took} ms (grace 2 s)`);
      t.true(took >= 1_800, 'waited for the grace period');
      const gone = await env.kubectl('get', 'pod', 'slow');
      t.regex(gone.stderr, /NotFound|not found/);
      t.is(node.runtime.counts().containers, 1, 'only the static pod is left');

      const mirror = await until('mirror pod', async () => {
        const p = await env.core.readNamespacedPod({ namespace: 'kube-system', name: 'etcd-node1' });
        return p.status?.phase === 'Running' ? p : undefined;
      });
      t.truthy(mirror.metadata?.annotations?.['kubernetes.io/config.mirror']);
      t.is(mirror.metadata?.ownerReferences?.[0]?.kind, 'Node');
      const list = await env.kubectl('get', 'pods', '-n', 'kube-system');
      t.regex(list.stdout, /etcd-node1\s+1\/1\s+Running/);
      // Deleting the mirror pod does not stop the static pod; the mirror comes back.
      const creates = node.creates();
      await env.kubectl('delete', 'pod', '-n', 'kube-system', 'etcd-node1', '--wait=false');
      await until('mirror re-created', async () => {
        const p = await env.core.readNamespacedPod({ namespace: 'kube-system', name: 'etcd-node1' });
        return p.metadata?.uid !== mirror.metadata?.uid && !p.metadata?.deletionTimestamp;
      });
      t.is(node.creates(), creates, 'the static pod kept running');
    } finally {
      await node.kubelet.stop();
      await env.cp.stop();
    }
  },
);

cpKubectlTest(
  'a pod the node cannot admit is Failed with OutOfcpu; the kubelet keeps running the others',
  async (t) => {
    const env = await startControlPlane();
    const node = makeKubelet(env, await env.cp.nodeKubeconfig('node1'));
    try {
      await node.kubelet.start();
      await until('node registered', () => env.core.readNode({ name: 'node1' }));
      const big = apiPod('big', {
        containers: [{ name: 'main', image: 'busybox:1.36', resources: { requests: { cpu: '100' } } }],
      });
      await env.core.createNamespacedPod({ namespace: 'default', body: big as k8s.V1Pod }); // bound: no scheduler
      const failed = await until('big Failed', async () => {
        const p = await env.core.readNamespacedPod({ namespace: 'default', name: 'big' });
        return p.status?.phase === 'Failed' ? p : undefined;
      });
      t.is(failed.status?.reason, 'OutOfcpu');
      t.is(
        failed.status?.message,
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 100000, used: 0, capacity: 8000",
      );
      const get = await env.kubectl('get', 'pod', 'big');
      t.regex(get.stdout, /big\s+0\/1\s+OutOfcpu/);
      await env.core.createNamespacedPod({ namespace: 'default', body: podBody('small') });
      await until('small Running', async () => {
        const p = await env.core.readNamespacedPod({ namespace: 'default', name: 'small' });
        return p.status?.phase === 'Running';
      });
      const events = await env.kubectl('get', 'events', '--field-selector', 'involvedObject.name=big');
      t.regex(events.stdout, /Warning\s+OutOfcpu\s+pod\/big/);
      t.is(node.runtime.counts().running, 1);
    } finally {
      await node.kubelet.stop();
      await env.cp.stop();
    }
  },
);

cpTest(
  'kill and restart the kubelet with 20 pods: 0 containers recreated, statuses correct within 5 s',
  async (t) => {
    const env = await startControlPlane();
    const kubeconfig = await env.cp.nodeKubeconfig('node1');
    const first = makeKubelet(env, kubeconfig);
    let second: Node | undefined;
    try {
      await first.kubelet.start();
      for (let i = 0; i < 20; i++)
        await env.core.createNamespacedPod({ namespace: 'default', body: podBody(`p-${i}`) });
      await until(
        '20 Running',
        async () => {
          const list = await env.core.listNamespacedPod({ namespace: 'default' });
          return list.items.filter((p) => p.status?.phase === 'Running').length === 20;
        },
        30_000,
      );
      await first.kubelet.stop(); // "kill": the pods stay in the runtime
      second = makeKubelet(env, kubeconfig, { runtime: first.runtime });
      const restarted = Date.now();
      await second.kubelet.start();
      await until(
        'statuses current',
        async () => {
          const local = new Map(second!.kubelet.podList().items.map((p) => [p.metadata!.uid!, p.status]));
          if (local.size !== 20) return false;
          const list = await env.core.listNamespacedPod({ namespace: 'default' });
          return list.items.every((p) => {
            const ours = local.get(p.metadata!.uid!);
            return (
              p.status?.phase === 'Running' &&
              ours?.phase === 'Running' &&
              p.status.containerStatuses?.[0]?.containerID === ours.containerStatuses?.[0]?.containerID
            );
          });
        },
        5_000,
      );
      t.log(`statuses current ${Date.now() - restarted} ms after the restart`);
      await new Promise((r) => setTimeout(r, 3_000)); // a few PLEG relists and syncs
      t.is(second.creates(), 0, 'no container recreated');
      t.is(second.runtime.counts().running, 20);
    } finally {
      await second?.kubelet.stop();
      await env.cp.stop();
    }
  },
);

cpTest(
  'bad input: an unreachable server, a kubeconfig that does not parse — clear messages, static pods keep running',
  async (t) => {
    const env = await startControlPlane();
    try {
      const dir = mkdtempSync(join(tmpdir(), 'nodelet-badkc-'));
      const unreachable = join(dir, 'unreachable');
      writeFileSync(
        unreachable,
        [
          'apiVersion: v1',
          'kind: Config',
          'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]',
          'users: [{name: u, user: {token: abc}}]',
          'contexts: [{name: x, context: {cluster: c, user: u}}]',
          'current-context: x',
        ].join('\n'),
      );
      const a = makeKubelet(env, unreachable);
      a.statics.set([staticPodFor('etcd', 'node1')]);
      await a.kubelet.start();
      await until('static pod running', async () => a.runtime.counts().running === 1);
      await until('registration error logged', async () => a.logs.find('Unable to register node').length > 0);
      const line = a.logs.lines().find((l) => l.includes('Unable to register node'))!;
      t.regex(line, /the API server at https:\/\/127\.0\.0\.1:1 is unreachable: .*ECONNREFUSED/);
      t.is(a.runtime.counts().running, 1);
      await a.kubelet.stop();

      const garbled = join(dir, 'garbled');
      writeFileSync(garbled, 'clusters: [this is: not yaml\n');
      const b = makeKubelet(env, garbled);
      b.statics.set([staticPodFor('etcd', 'node1')]);
      await b.kubelet.start();
      await until('static pod running', async () => b.runtime.counts().running === 1);
      await until(
        'kubeconfig error logged',
        async () => b.logs.find('Cannot connect to the API server').length > 0,
      );
      t.regex(b.logs.lines('error').join('\n'), /kubeconfig .*garbled could not be loaded: /);
      await b.kubelet.stop();
    } finally {
      await env.cp.stop();
    }
  },
);

cpTest(
  'control plane down for 2 min (virtual time) with 20 pods: no restarts, statuses correct within 10 s after',
  async (t) => {
    const clock = new VirtualClock(Date.now());
    const dataDir = mkdtempSync(join(tmpdir(), 'nodelet-cp-'));
    const logs = new MemorySink();
    const logger = createLogger({ sink: logs.sink, level: 'info' });
    let cp = new ControlPlaneClass!({ dataDir, clock, logger: logger.child('cp'), port: 0 });
    await cp.start();
    const port = Number(new URL(cp.url).port);
    const env = { ...(await adminClients(cp, dataDir)), clock, logger, logs } as unknown as Env;
    const node = makeKubelet(env, await cp.nodeKubeconfig('node1'));
    try {
      await node.kubelet.start();
      for (let i = 0; i < 15; i++)
        await env.core.createNamespacedPod({ namespace: 'default', body: podBody(`web-${i}`) });
      for (let i = 0; i < 5; i++) {
        await env.core.createNamespacedPod({
          namespace: 'default',
          body: podBody(`job-${i}`, { restartPolicy: 'Never' }) as k8s.V1Pod,
        });
      }
      node.runtime.script((c) => c.podName.startsWith('job-'), 'exitAfter=60s,exitCode=0');
      const phases = async () => {
        const list = await env.core.listNamespacedPod({ namespace: 'default' });
        return list.items.map((p) => p.status?.phase);
      };
      await advanceUntil(
        clock,
        async () => (await phases()).filter((p) => p === 'Running').length === 20,
        30_000,
      );
      const creates = node.creates();

      await cp.stop();
      await advanceUntil(clock, () => false, 120_000, 1_000).catch(() => undefined);
      t.is(node.creates(), creates, 'no container restarted while the API server was away');
      t.is(node.runtime.counts().running, 15, 'the web pods run; the jobs finished at 60 s');
      t.true(node.kubelet.nodeAgent!.syncer!.pending <= 20, 'bounded: one pending status per pod at most');

      cp = new ControlPlaneClass!({ dataDir, clock, logger: logger.child('cp'), port });
      await cp.start();
      Object.assign(env, await adminClients(cp, dataDir));
      const ms = await advanceUntil(
        clock,
        async () => {
          const p = await phases().catch(() => []);
          return (
            p.filter((x) => x === 'Succeeded').length === 5 && p.filter((x) => x === 'Running').length === 15
          );
        },
        10_000,
      );
      t.log(`statuses correct ${ms} ms (virtual) after the API server returned`);
      t.is(node.creates(), creates);
      const n = await env.core.readNode({ name: 'node1' });
      t.is(n.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    } finally {
      await node.kubelet.stop();
      await cp.stop();
    }
  },
);

cpTest(
  "the docs' ConfigMap pod on nodelet up: env from the ConfigMap; a missing key waits, fixed it starts",
  async (t) => {
    const env = await startControlPlane();
    const node = makeKubelet(env, await env.cp.nodeKubeconfig('node1'));
    try {
      await node.kubelet.start();
      await env.core.createNamespacedConfigMap({
        namespace: 'default',
        body: { metadata: { name: 'special-config' }, data: { 'special.how': 'very' } },
      });
      const container = {
        name: 'main',
        image: 'busybox:1.36',
        command: ['sh', '-c', 'echo $(SPECIAL_LEVEL_KEY) $(SPECIAL_TYPE_KEY)'],
        env: [
          {
            name: 'SPECIAL_LEVEL_KEY',
            valueFrom: { configMapKeyRef: { name: 'special-config', key: 'special.how' } },
          },
          {
            name: 'SPECIAL_TYPE_KEY',
            valueFrom: { configMapKeyRef: { name: 'special-config', key: 'special.type' } },
          },
        ],
      };
      await env.core.createNamespacedPod({
        namespace: 'default',
        body: podBody('dapi', { containers: [container] }),
      });
      const waiting = await until('CreateContainerConfigError', async () => {
        const p = await env.core.readNamespacedPod({ namespace: 'default', name: 'dapi' });
        const w = p.status?.containerStatuses?.[0]?.state?.waiting;
        return w?.reason === 'CreateContainerConfigError' && w;
      });
      t.is(waiting.message, "couldn't find key special.type in ConfigMap default/special-config");
      await env.core.patchNamespacedConfigMap(
        { namespace: 'default', name: 'special-config', body: { data: { 'special.type': 'charm' } } },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      await until(
        'Running',
        async () =>
          (await env.core.readNamespacedPod({ namespace: 'default', name: 'dapi' })).status?.phase ===
          'Running',
        20_000,
      );
      const { containers } = await node.runtime.listContainers({});
      const config = node.runtime.containerConfig(containers[0]!.id);
      t.deepEqual(config.command, ['sh', '-c', 'echo very charm']);
      t.like(Object.fromEntries(config.envs.map((e) => [e.key, e.value])), { SPECIAL_LEVEL_KEY: 'very' });
    } finally {
      await node.kubelet.stop();
      await env.cp.stop();
    }
  },
);
