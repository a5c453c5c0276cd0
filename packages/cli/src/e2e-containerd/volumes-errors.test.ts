import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { requireContainerd } from '@nodelet/runtime-cri/testing';
import { pollUntil } from '../test-helpers.js';
import {
  BUSYBOX,
  containerStatus,
  isRunning,
  KubeletChild,
  manifest,
  mountsUnder,
  nodeName,
  sandboxesOf,
  sweepNode,
  Workspace,
} from './helpers.js';

/**
 * Volumes on real containers and what a user sees when a pod cannot start, through the CLI on
 * containerd: an emptyDir two containers share, a tmpfs for `medium: Memory`, hostPath with
 * DirectoryOrCreate, a hostPath type check that fails; an image no registry has; a command the image
 * does not have. One kubelet for the file; each test cleans up its own pod.
 */
const containerd = await requireContainerd(test);

if (containerd) {
  const node = nodeName('vol');
  const ws = new Workspace();
  const hostDir = join(ws.dir, 'host');
  let k: KubeletChild | undefined;

  test.before(async () => {
    k = await KubeletChild.start(ws, node);
  });
  test.after.always(async () => {
    await k?.stop();
    await sweepNode(containerd.endpoint, node);
    await ws.dispose();
  });

  /** Removes a manifest and waits until the kubelet and containerd hold nothing of the pod. */
  async function deletePod(file: string, pod: string): Promise<void> {
    ws.remove(file);
    await pollUntil(
      `${pod} to be removed`,
      async () => {
        const rows = await k!.rows();
        return !rows.some((r) => r.NAME === pod) &&
          (await sandboxesOf(containerd!.endpoint, node)).length === 0
          ? true
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, describe: () => k!.stderr().slice(-2000) },
    );
  }

  test.serial(
    'emptyDir shared by two containers, medium: Memory as a tmpfs, hostPath DirectoryOrCreate; gone with the pod',
    async (t) => {
      const pod = `vol-${node}`;
      const created = join(hostDir, 'made-by-kubelet');
      ws.write(
        'vol.yaml',
        manifest(
          'vol',
          `  containers:
  - name: writer
    image: ${BUSYBOX}
    command: ["sh", "-c", "echo shared-through-emptydir > /data/msg; grep ' /mem ' /proc/mounts | cut -d' ' -f3,4; echo from-the-pod > /host/file; exec sleep 3600"]
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: mem, mountPath: /mem}
    - {name: host, mountPath: /host}
  - name: reader
    image: ${BUSYBOX}
    command: ["sh", "-c", "until [ -f /data/msg ]; do sleep 0.1; done; cat /data/msg; exec sleep 3600"]
    volumeMounts:
    - {name: data, mountPath: /data, readOnly: true}
  volumes:
  - name: data
    emptyDir: {}
  - name: mem
    emptyDir: {medium: Memory, sizeLimit: 8Mi}
  - name: host
    hostPath: {path: ${created}, type: DirectoryOrCreate}
`,
        ),
      );
      const running = await k!.waitPod(
        pod,
        'both containers Running',
        (p) => isRunning(p, 'writer') && isRunning(p, 'reader'),
      );
      const uid = running.metadata!.uid!;
      const volumes = join(ws.root, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir');

      // The reader prints what the writer wrote into the shared emptyDir.
      const reader = await pollUntil(
        'the reader to print the message',
        async () => (await k!.logs(pod, '-c', 'reader')).stdout || undefined,
        { timeoutMs: 15_000, intervalMs: 200 },
      );
      t.is(reader, 'shared-through-emptydir\n');
      t.is(
        readFileSync(join(volumes, 'data', 'msg'), 'utf8'),
        'shared-through-emptydir\n',
        'on the host under the root dir',
      );

      // medium: Memory: a tmpfs on the host path, sized by sizeLimit; the container sees a tmpfs at /mem.
      const writer = await pollUntil(
        "the writer's output",
        async () => {
          const r = await k!.logs(pod, '-c', 'writer');
          return r.stdout ? r : undefined;
        },
        { timeoutMs: 15_000, intervalMs: 200 },
      );
      t.regex(writer.stdout, /^tmpfs rw,.*size=8192k/);
      t.deepEqual(mountsUnder(join(ws.root, 'pods', uid)), [{ point: join(volumes, 'mem'), type: 'tmpfs' }]);

      // hostPath DirectoryOrCreate: the kubelet made the directory; the container wrote into it.
      await pollUntil(
        'the file from the pod',
        async () => (existsSync(join(created, 'file')) ? true : undefined),
        {
          timeoutMs: 10_000,
        },
      );
      t.is(readFileSync(join(created, 'file'), 'utf8'), 'from-the-pod\n');

      // A pod with several containers and no -c: kubectl's default and its note.
      const defaulted = await k!.logs(pod);
      t.is(defaulted.stderr, 'Defaulted container "writer" out of: writer, reader\n');

      await deletePod('vol.yaml', pod);
      t.deepEqual(mountsUnder(join(ws.root, 'pods')), [], 'the tmpfs is unmounted');
      t.false(existsSync(join(ws.root, 'pods', uid)), 'the emptyDirs are gone with the pod');
      t.true(existsSync(join(created, 'file')), 'hostPath content stays');
    },
  );

  test.serial(
    'hostPath type File on a directory: the pod waits in ContainerCreating saying why',
    async (t) => {
      const pod = `hp-${node}`;
      const notAFile = join(hostDir, 'a-directory');
      mkdirSync(notAFile, { recursive: true });
      ws.write(
        'hp.yaml',
        manifest(
          'hp',
          `  containers:
  - name: app
    image: ${BUSYBOX}
    command: ["sleep", "3600"]
    volumeMounts: [{name: conf, mountPath: /etc/app.conf}]
  volumes:
  - name: conf
    hostPath: {path: ${notAFile}, type: File}
`,
        ),
      );
      const waiting = await k!.waitPod(
        pod,
        'a waiting message',
        (p) => !!containerStatus(p, 'app')?.state?.waiting?.message,
      );
      t.deepEqual(containerStatus(waiting, 'app')?.state?.waiting, {
        reason: 'ContainerCreating',
        message: `volume "conf": hostPath type check failed: ${notAFile} is not a file`,
      });
      t.like(
        (await k!.rows()).find((r) => r.NAME === pod),
        { STATUS: 'ContainerCreating', READY: '0/1' },
      );
      const logs = await k!.logs(pod);
      t.is(
        logs.stderr,
        `Error from server (BadRequest): container "app" in pod "${pod}" is waiting to start: ContainerCreating\n`,
      );
      await deletePod('hp.yaml', pod);
      rmSync(notAFile, { recursive: true, force: true });
    },
  );

  test.serial(
    "an image no registry has: ErrImagePull, then ImagePullBackOff with containerd's message",
    async (t) => {
      const pod = `noimage-${node}`;
      ws.write(
        'noimage.yaml',
        manifest('noimage', `  containers:\n  - name: app\n    image: nodelet.test/does-not-exist:1\n`),
      );
      const statuses = new Set<string>();
      const backoff = await k!.waitPod(pod, 'ImagePullBackOff', (p) => {
        const reason = containerStatus(p, 'app')?.state?.waiting?.reason;
        if (reason) statuses.add(reason);
        return reason === 'ImagePullBackOff';
      });
      const waiting = containerStatus(backoff, 'app')!.state!.waiting!;
      // containerd's own words: it tried to resolve the reference and could not.
      t.regex(
        waiting.message!,
        /^Back-off pulling image "nodelet\.test\/does-not-exist:1": ErrImagePull: Failed to pull image "nodelet\.test\/does-not-exist:1": failed to pull and unpack image "nodelet\.test\/does-not-exist:1": failed to resolve reference/,
      );
      t.like(
        (await k!.rows()).find((r) => r.NAME === pod),
        { STATUS: 'ImagePullBackOff', READY: '0/1' },
      );
      t.regex(
        k!.stderr(),
        /Failed to ensure image pod="default\/noimage-[^"]+" container="app" reason="ErrImagePull"/,
      );
      t.log(`waiting reasons seen: ${[...statuses].join(' → ')}`);
      const logs = await k!.logs(pod);
      t.is(
        logs.stderr,
        `Error from server (BadRequest): container "app" in pod "${pod}" is waiting to start: trying and failing to pull image\n`,
      );
      await deletePod('noimage.yaml', pod);
    },
  );

  test.serial(
    "a command the image does not have: RunContainerError, then CrashLoopBackOff, with containerd's message",
    async (t) => {
      const pod = `nope-${node}`;
      ws.write(
        'nope.yaml',
        manifest('nope', `  containers:\n  - name: app\n    image: ${BUSYBOX}\n    command: ["/nope"]\n`),
      );
      const statuses = new Set<string>();
      const failed = await k!.waitPod(pod, 'a start failure with its message', (p) => {
        const s = containerStatus(p, 'app');
        if (s?.state?.waiting?.reason) statuses.add(s.state.waiting.reason);
        return s?.lastState?.terminated?.reason === 'StartError';
      });
      const status = containerStatus(failed, 'app')!;
      const message = /exec: "\/nope": stat \/nope: no such file or directory/;
      t.regex(status.lastState!.terminated!.message!, message);
      t.is(status.lastState!.terminated!.exitCode, 128);
      t.true(
        ['RunContainerError', 'CrashLoopBackOff'].includes(status.state!.waiting!.reason!),
        status.state!.waiting!.reason,
      );
      // The kubelet logged StartContainer's failure with containerd's message (RunContainerError's cause).
      t.regex(
        k!.stderr(),
        /StartContainer failed pod="default\/nope-[^"]+" container="app" err="[^\n]*exec: \\"\/nope\\": stat \/nope: no such file or directory/,
      );
      t.log(`waiting reasons seen: ${[...statuses].join(' → ')}`);
      await deletePod('nope.yaml', pod);
    },
  );
}
