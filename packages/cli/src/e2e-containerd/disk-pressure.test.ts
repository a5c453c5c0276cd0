import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import type { V1Pod } from '@kubernetes/client-node';
import { createCriClient } from '@nodelet/cri';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { pollUntil } from '../test-helpers.js';
import { BUSYBOX, KubeletChild, mountsUnder, nodeName, Workspace } from './helpers.js';
import { PrivateContainerd } from './private-containerd.js';
import { TestControlPlane } from './test-control-plane.js';

/**
 * Disk pressure on a real host: a kubelet whose root dir is on a small file system (a tmpfs of 256 MiB
 * the test mounts) with `evictionHard: nodefs.available` a little below what is free once the node is
 * set up. A pod writes step by step into its emptyDir; the kubelet first removes the unused image, and
 * as that is not enough, evicts the pod that writes the most, while the other pod keeps running.
 *
 * Why a private containerd: image GC can only relieve the kubelet's file system when the images live
 * on it (upstream: without a dedicated imagefs, nodefs pressure reclaims images too). So a containerd of
 * the test's own (PrivateContainerd: the shared instance's settings, the shared CNI config) keeps its
 * root, state and socket on the same tmpfs, and the kubelet sees one device for both (it compares the
 * device ids, as cAdvisor). The images are copied from the shared containerd: the pause and busybox
 * images the pods use, and busybox-openssl — distinct content, no pod uses it — as the unused one.
 *
 * Skipped (one line) without containerd, failed under CI=true. Nothing stays mounted; the private
 * containerd is stopped by its PID after its pods are removed.
 */
const containerd = await requireContainerd(test);

const run = promisify(execFile);
const Mi = 2 ** 20;
const SANDBOX_IMAGE = process.env.NODELET_SANDBOX_IMAGE || 'registry.k8s.io/pause:3.9';
const UNUSED_IMAGE = 'nodelet.test/disk-pressure-unused:1';
/** What the pods and the kubelet's own files may take before the writer starts, kept below the threshold. */
const SETUP_MARGIN = 16 * Mi;

const writerPod = (name: string, node: string, script: string): V1Pod => ({
  metadata: { name, namespace: 'default' },
  spec: {
    nodeName: node,
    automountServiceAccountToken: false,
    terminationGracePeriodSeconds: 1,
    volumes: [{ name: 'scratch', emptyDir: {} }],
    containers: [
      {
        name: 'writer',
        image: BUSYBOX,
        imagePullPolicy: 'IfNotPresent',
        command: ['sh', '-c', script],
        volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
      },
    ],
  },
});

/** Writes `steps` files of `stepMiB` MiB, saying so on stdout (its log), then idles. */
const writeSteps = (steps: number, stepMiB: number) =>
  `i=0; while [ $i -lt ${steps} ]; do dd if=/dev/zero of=/scratch/f$i bs=1M count=${stepMiB} 2>/dev/null; ` +
  `i=$((i+1)); echo "wrote $((i*${stepMiB})) MiB"; sleep 0.2; done; exec sleep 3600`;

if (containerd) {
  test('disk pressure on a small nodefs: image GC first, then the pod writing to its emptyDir the most is evicted', async (t) => {
    t.timeout(180_000);
    const started = Date.now();
    const disk = mkdtempSync(join(tmpdir(), 'nodelet-disk-'));
    // Teardowns run in reverse: the kubelet, the control plane and workspace, the private containerd (its
    // pods removed first), then the file system, mounts under it first.
    t.teardown(async () => {
      for (const { point } of mountsUnder(disk).sort((a, b) => b.point.length - a.point.length)) {
        await run('umount', [point]).catch(() => run('umount', ['-l', point]));
      }
      rmSync(disk, { recursive: true, force: true });
    });
    await run('mount', ['-t', 'tmpfs', '-o', 'size=256m', 'tmpfs', disk]);
    const ctrd = await PrivateContainerd.create({
      parent: disk,
      copyImages: [SANDBOX_IMAGE, BUSYBOX, { ref: 'nodelet.test/busybox-openssl:1', as: UNUSED_IMAGE }],
    });
    t.teardown(() => ctrd.dispose());
    const rootDir = join(disk, 'kubelet');
    mkdirSync(rootDir);
    const free = () => {
      const s = statfsSync(disk);
      return s.bavail * s.bsize;
    };
    const threshold = Math.floor((free() - SETUP_MARGIN) / Mi) * Mi;

    const node = nodeName('disk-pressure');
    const ws = new Workspace('  kubeletConfig: ./kubelet-config.yaml\n  evictionMonitoringPeriod: 1s\n');
    writeFileSync(
      join(ws.dir, 'kubelet-config.yaml'),
      `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
evictionHard: {nodefs.available: "${threshold / Mi}Mi"}
evictionPressureTransitionPeriod: 5s
`,
    );
    t.teardown(() => ws.dispose());
    const cp = await TestControlPlane.start();
    t.teardown(() => cp.stop());
    const { core } = cp;
    // The root dir on the small file system (the later --root-dir wins over the workspace's).
    const kubelet = await KubeletChild.start(ws, node, [
      '--container-runtime-endpoint',
      ctrd.endpoint,
      '--kubeconfig',
      await cp.nodeKubeconfig(node),
      '--root-dir',
      rootDir,
    ]);
    t.teardown(() => kubelet.stop().then(() => undefined));
    const log = () => kubelet.stderr().slice(-4000);
    const podOf = (name: string) =>
      core.readNamespacedPod({ name, namespace: 'default' }).catch(() => undefined);
    const nodeOf = () => core.readNode({ name: node }).catch(() => undefined);
    const diskPressure = async () =>
      (await nodeOf())?.status?.conditions?.find((c) => c.type === 'DiskPressure');

    await pollUntil('the Node to be registered', nodeOf, {
      timeoutMs: 20_000,
      intervalMs: 200,
      describe: log,
    });
    // One writes a little; the other writes 4 MiB at a time, well past the threshold and the unused image.
    await core.createNamespacedPod({
      namespace: 'default',
      body: writerPod('small', node, writeSteps(1, 1)),
    });
    await core.createNamespacedPod({ namespace: 'default', body: writerPod('big', node, writeSteps(12, 4)) });
    // DiskPressure (and its taint) may last only one synchronize (1 s here) past the eviction, since the
    // transition period (5 s) is shorter: watched from now on, not after the eviction was seen.
    const pressureSeen = pollUntil(
      'DiskPressure=True',
      async () => {
        const c = await diskPressure();
        return c?.status === 'True' ? c : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 250, describe: log },
    );
    const taintSeen = pollUntil(
      'the disk-pressure taint',
      async () => (await nodeOf())?.spec?.taints?.find((x) => x.key === 'node.kubernetes.io/disk-pressure'),
      { timeoutMs: 120_000, intervalMs: 250 },
    );
    // Awaited below; a failure before then must not be an unhandled rejection.
    pressureSeen.catch(() => undefined);
    taintSeen.catch(() => undefined);
    const small = await pollUntil(
      'the small writer to run',
      async () => {
        const p = await podOf('small');
        return p?.status?.phase === 'Running' ? p : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, describe: log },
    );

    const evicted = await pollUntil(
      'the big writer to be evicted',
      async () => {
        const p = await podOf('big');
        return p?.status?.phase === 'Failed' ? p : undefined;
      },
      {
        timeoutMs: 60_000,
        intervalMs: 250,
        describe: () => `free ${free()} of threshold ${threshold}\n${log()}`,
      },
    );
    const pressure = await pressureSeen;
    t.is(pressure.reason, 'KubeletHasDiskPressure');
    t.is((await taintSeen).effect, 'NoSchedule');
    t.is(evicted.status?.reason, 'Evicted');
    t.regex(
      evicted.status?.message ?? '',
      new RegExp(
        `^The node was low on resource: ephemeral-storage\\. Threshold quantity: ${threshold / Mi}Mi, available: \\d+Ki\\. ` +
          'Container writer was using \\S+, request is 0, has larger consumption of ephemeral-storage\\. $',
      ),
    );
    // Image GC came first: the unused image is gone (the pods' and the sandbox image stay), removed
    // before the eviction.
    const stderr = kubelet.stderr();
    const removedAt = stderr.search(/Removing image to free bytes.*disk-pressure-unused/);
    const evictingAt = stderr.search(/Evicting pod.*pod="default\/big"/);
    t.true(removedAt >= 0 && evictingAt > removedAt, 'the image removed, then the pod evicted');
    t.is(stderr.match(/Removing image/g)?.length, 1, 'only the unused image');
    t.regex(stderr, /Eviction manager: the image file system dedicated=false/, 'one device for both');
    const cri = createCriClient(ctrd.endpoint, { timeoutMs: 10_000 });
    t.teardown(() => cri.close());
    const tags = (await cri.image.listImages({})).images.flatMap((i) => i.repoTags);
    t.false(tags.includes(UNUSED_IMAGE));
    t.true(tags.includes(BUSYBOX) && tags.includes(SANDBOX_IMAGE), tags.join(' '));

    const stillSmall = await podOf('small');
    t.is(stillSmall?.status?.phase, 'Running', 'the other pod keeps running');
    t.is(stillSmall?.metadata?.uid, small.metadata?.uid);
    const events = await core.listNamespacedEvent({ namespace: 'default' });
    t.true(
      events.items.some((e) => e.reason === 'Evicted' && e.involvedObject.name === 'big'),
      'an Evicted event on the pod',
    );
    t.true(
      events.items.some(
        (e) =>
          e.reason === 'EvictionThresholdMet' &&
          e.involvedObject.kind === 'Node' &&
          e.message === 'Attempting to reclaim ephemeral-storage',
      ),
      'a Warning EvictionThresholdMet on the Node',
    );
    t.false(
      events.items.some((e) => e.reason === 'FreeDiskSpaceFailed'),
      'no FreeDiskSpaceFailed: the reclaim removed what it could',
    );

    // Its emptyDir goes once its container stopped, while the pod stays Failed in the API; the pressure
    // goes with it once the transition period passed, and nothing else is evicted.
    const scratch = join(rootDir, 'pods', evicted.metadata!.uid!, 'volumes');
    await pollUntil(
      "the evicted pod's volumes to be removed",
      async () => (existsSync(scratch) ? undefined : true),
      {
        timeoutMs: 20_000,
        intervalMs: 250,
        describe: log,
      },
    );
    const relieved = await pollUntil(
      'DiskPressure=False',
      async () => {
        const c = await diskPressure();
        return c?.status === 'False' ? c : undefined;
      },
      {
        timeoutMs: 60_000,
        intervalMs: 250,
        describe: () => `free ${free()} of threshold ${threshold}\n${log()}`,
      },
    );
    t.is(relieved.reason, 'KubeletHasNoDiskPressure');
    t.true(free() > threshold);
    t.is((await podOf('big'))?.status?.reason, 'Evicted', 'the evicted pod stays, Failed');
    t.is((await podOf('small'))?.status?.phase, 'Running', 'the other pod was never evicted');
    t.is(kubelet.stderr().match(/Evicting pod/g)?.length, 1);
    t.log(`threshold ${threshold / Mi} MiB free; ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });
}
