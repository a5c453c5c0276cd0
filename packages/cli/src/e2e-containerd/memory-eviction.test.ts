import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { pollUntil } from '../test-helpers.js';
import { BUSYBOX, nodeName, sweepNode } from './helpers.js';
import { NodeletUp, requireKubectl } from './nodelet-up.js';

/**
 * Node-pressure eviction on a real node: `nodelet up --runtime containerd` with `evictionHard:
 * memory.available<X`, X just below what the node has available when the test starts. A Burstable pod
 * takes memory step by step until the kubelet evicts it (Failed, reason Evicted, upstream's message); the
 * Node shows MemoryPressure and the memory-pressure taint (real kubectl) while it lasts, and loses both
 * after the (shortened) transition period; a BestEffort pod sent to the node meanwhile is refused; the
 * Guaranteed pod on the node runs on, never restarted.
 */
const containerd = await requireContainerd(test);
const kubectl = requireKubectl(test);

const MiB = 2 ** 20;
/**
 * How far below the node's available memory the threshold is. nodelet itself (the API server, the
 * kubelet, containerd's shims) takes some of it once started, and other processes on the machine move
 * it by tens to hundreds of MiB either way (more when other tests run beside this one): a margin well
 * above that noise keeps the pressure from starting before the pod allocates, and from lasting after
 * the evicted pod freed its memory (it would take the Guaranteed pod next); the pod's bound (margin +
 * 1.5 GiB) still crosses it when the machine frees that much meanwhile. Should the rest of the machine take the margin first, the same
 * Burstable pod is the one evicted (the only pod above its request), so the test still holds.
 */
const MARGIN_MIB = 1500;
const STEP_MIB = 100;
const MAX_STEPS = Math.ceil((MARGIN_MIB + 1536) / STEP_MIB);

/**
 * memory.available as upstream's kubelet computes it (its documented memory-available script, cAdvisor's
 * working set): MemTotal less the root cgroup's usage less its inactive file pages — v1's
 * memory.usage_in_bytes and total_inactive_file; on a v2 host the root's memory.stat anon + file.
 */
function nodeMemoryAvailable(): number {
  const memTotal = Number(/^MemTotal:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'))![1]) * 1024;
  const stat = (file: string) =>
    new Map(
      readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => l.split(' ') as [string, string])
        .map(([k, v]) => [k, Number(v)]),
    );
  let usage: number;
  let inactiveFile: number;
  if (existsSync('/sys/fs/cgroup/memory/memory.usage_in_bytes')) {
    usage = Number(readFileSync('/sys/fs/cgroup/memory/memory.usage_in_bytes', 'utf8'));
    inactiveFile = stat('/sys/fs/cgroup/memory/memory.stat').get('total_inactive_file')!;
  } else {
    const s = stat('/sys/fs/cgroup/memory.stat');
    usage = s.get('anon')! + s.get('file')!;
    inactiveFile = s.get('inactive_file')!;
  }
  return memTotal - Math.max(0, usage - inactiveFile);
}

/**
 * A pod of one busybox container `main`, bound to `node` by its spec: what is under test is the kubelet,
 * and the scheduler keeps pods off the node while it has the memory-pressure taint.
 */
const onNode = (name: string, node: string, container: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  nodeName: ${node}
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${BUSYBOX}
${container}`;

const steady = (node: string) =>
  onNode(
    'steady',
    node,
    `    command: [sleep, '3600']
    resources:
      requests: {cpu: 50m, memory: 64Mi}
      limits: {cpu: 50m, memory: 64Mi}
`,
  );

// Each step is a process that holds 100 MiB of its own memory: dd reads a 100 MiB block of zeros into
// its buffer (the kernel fills it in one read, no CPU to speak of) and blocks writing it to a pipe that
// sleep never reads. Killing the pod frees it all.
const hog = (node: string) =>
  onNode(
    'hog',
    node,
    `    resources:
      requests: {memory: 16Mi}
    command:
    - sh
    - -c
    - |
      i=0
      while [ $i -lt ${MAX_STEPS} ]; do
        dd if=/dev/zero bs=${STEP_MIB * MiB} count=1 2>/dev/null | sleep 3600 &
        i=$((i+1))
        echo "holding $((i*${STEP_MIB})) MiB"
        sleep 0.2
      done
      exec sleep 3600
`,
  );

const bestEffort = (node: string) => onNode('besteffort', node, `    command: [sleep, '3600']\n`);

interface NodeView {
  pressure?: { status: string; reason?: string; lastTransitionTime: string };
  taints: string[];
}

if (containerd && kubectl) {
  test('memory pressure on containerd: the Burstable pod is evicted, the node shows MemoryPressure and recovers; the Guaranteed pod runs on', async (t) => {
    const node = nodeName('memevict');
    const available = nodeMemoryAvailable();
    const threshold = `${Math.floor(available / MiB) - MARGIN_MIB}Mi`;
    t.log(
      `available ${Math.floor(available / MiB)}Mi at the start: evictionHard memory.available<${threshold}`,
    );
    const { dataDir, configPath } = NodeletUp.newDataDir(`apiVersion: nodelet.dev/v1alpha1
kind: NodeletConfiguration
kubelet: {kubeletConfig: ./kubelet-config.yaml, evictionMonitoringPeriod: 500ms}
`);
    writeFileSync(
      join(dataDir, 'kubelet-config.yaml'),
      `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
evictionHard: {memory.available: ${threshold}}
evictionPressureTransitionPeriod: 5s
`,
    );
    const up = await NodeletUp.start(
      ['--runtime', 'containerd', '--hostname-override', node, '--config', configPath!],
      {
        dataDir,
      },
    );
    t.teardown(async () => {
      await up.stop();
      await sweepNode(containerd.endpoint, node); // the pods' memory goes with their sandboxes
      up.dispose();
    });
    // What the eviction manager said, then the rest of the log's end.
    const describe = () =>
      up
        .stderr()
        .split('\n')
        .filter((l) => l.includes('.eviction]'))
        .slice(-20)
        .join('\n') + `\n…\n${up.stderr().slice(-2000)}`;
    const nodeView = async (): Promise<NodeView> => {
      const n = JSON.parse(await up.kubectlOk(['get', 'node', node, '-o', 'json'])) as {
        spec?: { taints?: { key: string; effect: string }[] };
        status?: {
          conditions?: { type: string; status: string; reason?: string; lastTransitionTime: string }[];
        };
      };
      return {
        pressure: n.status?.conditions?.find((c) => c.type === 'MemoryPressure'),
        taints: (n.spec?.taints ?? []).map((x) => `${x.key}:${x.effect}`),
      };
    };
    const podStatus = async (name: string) =>
      JSON.parse(await up.kubectlOk(['get', 'pod', name, '-o', 'json'])).status as {
        phase?: string;
        reason?: string;
        message?: string;
        containerStatuses?: { restartCount: number; state?: { running?: unknown } }[];
      };
    await up.waitNodeReady(node);
    t.is((await nodeView()).pressure?.status, 'False');

    await up.kubectlOk(['apply', '-f', '-'], steady(node));
    await pollUntil(
      'the Guaranteed pod to run',
      async () => ((await podStatus('steady')).phase === 'Running' ? true : undefined),
      {
        timeoutMs: 30_000,
        intervalMs: 200,
        describe,
      },
    );
    await up.kubectlOk(['apply', '-f', '-'], hog(node));

    // Under pressure: the condition and its taint on the Node; a BestEffort pod sent to the node now is
    // refused by the kubelet's admission.
    let availableNow = available;
    const underPressure = await pollUntil(
      'MemoryPressure=True with its taint',
      async () => {
        availableNow = nodeMemoryAvailable();
        const v = await nodeView();
        return v.pressure?.status === 'True' && v.taints.length > 0 ? v : undefined;
      },
      {
        // containerd on a loaded machine may take seconds per stats call.
        timeoutMs: 60_000,
        intervalMs: 100,
        describe: () => `available ${Math.floor(availableNow / MiB)}Mi\n${describe()}`,
      },
    );
    await up.kubectlOk(['apply', '-f', '-'], bestEffort(node));
    t.is(underPressure.pressure?.reason, 'KubeletHasInsufficientMemory');
    t.deepEqual(underPressure.taints, ['node.kubernetes.io/memory-pressure:NoSchedule']);

    const evicted = await pollUntil(
      'the Burstable pod to be evicted',
      async () => {
        const s = await podStatus('hog');
        return s.phase === 'Failed' ? s : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 200, describe },
    );
    t.is(evicted.reason, 'Evicted');
    t.regex(
      evicted.message ?? '',
      new RegExp(
        `^The node was low on resource: memory\\. Threshold quantity: ${threshold}, available: \\d+(?:Ki|Mi|Gi)?\\. Container main was using \\d+(?:Ki|Mi|Gi)?, request is 16Mi, has larger consumption of memory\\. $`,
      ),
    );
    const refused = await pollUntil(
      'the BestEffort pod to be refused',
      async () => {
        const s = await podStatus('besteffort');
        return s.phase === 'Failed' || s.phase === 'Running' ? s : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 200, describe },
    );
    // The kubelet's rejectPod puts "Pod was rejected: " before the admission's message, as upstream's.
    t.like(refused, {
      phase: 'Failed',
      reason: 'Evicted',
      message: 'Pod was rejected: The node had condition: [MemoryPressure]. ',
    });

    // The pod's memory is gone with it; the condition stays for the transition period, then clears.
    const recovered = await pollUntil(
      'MemoryPressure=False and no taint',
      async () => {
        const v = await nodeView();
        return v.pressure?.status === 'False' && v.taints.length === 0 ? v : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200, describe },
    );
    t.is(recovered.pressure?.reason, 'KubeletHasSufficientMemory');
    const heldMs =
      Date.parse(recovered.pressure!.lastTransitionTime) -
      Date.parse(underPressure.pressure!.lastTransitionTime);
    t.true(
      heldMs >= 4_000,
      `MemoryPressure held ${heldMs} ms: at least the 5 s transition period (whole seconds)`,
    );

    const s = await podStatus('steady');
    t.is(s.phase, 'Running');
    t.is(s.containerStatuses?.[0]?.restartCount, 0);
    t.truthy(s.containerStatuses?.[0]?.state?.running);
  });
}
