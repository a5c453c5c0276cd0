// The CRI semantics a client sees without a kernel: user checks, images with several tags and their
// configured user, what ExecSync answers about the container, log files by default, pull latency.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { isErrorCode, VirtualClock } from '@nodelet/kernel';
import { ContainerConfig, DNSConfig, type ImageSpec, PodSandboxConfig } from '@nodelet/cri';
import { FakeRuntime } from './fake-runtime.js';
import {
  createContainer,
  expectCode,
  runPod,
  sandboxConfig,
  setup,
  startContainer,
  track,
} from './fixtures.js';

const spec = (image: string): ImageSpec => ({
  image,
  annotations: {},
  userSpecifiedImage: image,
  runtimeHandler: '',
  imageRef: '',
});

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'runtime-fake-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** CreateContainer with a security context, the way the kubelet fills it in. */
async function createAs(
  runtime: FakeRuntime,
  pod: string,
  name: string,
  security: { runAsUser?: number; runAsGroup?: number; runAsUsername?: string },
  image = 'busybox',
) {
  const config = ContainerConfig.fromPartial({
    metadata: { name, attempt: 0 },
    image: spec(image),
    command: ['sleep', '3600'],
    linux: {
      securityContext: {
        runAsUser: security.runAsUser === undefined ? undefined : { value: BigInt(security.runAsUser) },
        runAsGroup: security.runAsGroup === undefined ? undefined : { value: BigInt(security.runAsGroup) },
        runAsUsername: security.runAsUsername ?? '',
        supplementalGroups: [4000n],
      },
    },
  });
  const { containerId } = await runtime.createContainer({
    podSandboxId: pod,
    config,
    sandboxConfig: runtime.sandboxConfig(pod),
  });
  return containerId;
}

const run = async (runtime: FakeRuntime, id: string, ...cmd: string[]) => {
  const r = await runtime.execSync({ containerId: id, cmd, timeout: 0n });
  return Buffer.from(r.stdout).toString();
};

test('CreateContainer refuses runAsGroup without runAsUser or runAsUsername, as containerd', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'p');
  const err = await t.throwsAsync(createAs(runtime, pod, 'group-only', { runAsGroup: 3000 }));
  expectCode(t, err, 'InvalidInput');
  t.regex(
    err!.message,
    /^failed to generate container "[0-9a-f]{64}" spec: failed to generate user string: user group "3000" is specified without user$/,
  );
  t.is(runtime.counts().containers, 0, 'nothing is left behind');
  await t.notThrowsAsync(createAs(runtime, pod, 'with-uid', { runAsUser: 1000, runAsGroup: 3000 }));
  await t.notThrowsAsync(createAs(runtime, pod, 'with-name', { runAsUsername: 'nobody', runAsGroup: 3000 }));
});

test('tags of one image share its id: one ListImages entry; RemoveImage by tag untags, by id removes', async (t) => {
  const { runtime } = setup({
    pullLatencyMs: 0,
    images: [{ refs: ['example.com/app:1.0', 'example.com/app:latest'], user: '1000:2000' }],
  });
  const first = await runtime.pullImage({ image: spec('example.com/app:1.0') });
  const second = await runtime.pullImage({ image: spec('example.com/app') });
  t.is(second.imageRef, first.imageRef, 'the second tag names the same image');
  const listed = (await runtime.listImages({})).images.filter((i) => i.id === first.imageRef);
  t.is(listed.length, 1);
  t.deepEqual(listed[0]!.repoTags, ['example.com/app:1.0', 'example.com/app:latest']);
  t.is(listed[0]!.repoDigests.length, 1);
  t.regex(listed[0]!.repoDigests[0]!, /^example\.com\/app@sha256:[0-9a-f]{64}$/);

  // A tag in another repository (as `ctr images tag`) adds that repository's digest.
  t.is(runtime.tagImage('example.com/app:1.0', 'mirror.example.com/app:1.0'), first.imageRef);
  const tagged = (await runtime.imageStatus({ image: spec('mirror.example.com/app:1.0'), verbose: false }))
    .image!;
  t.is(tagged.id, first.imageRef);
  t.is(tagged.repoTags.length, 3);
  t.is(tagged.repoDigests.length, 2);

  await runtime.removeImage({ image: spec('example.com/app:latest') });
  const left = (await runtime.imageStatus({ image: spec('example.com/app:1.0'), verbose: false })).image!;
  t.deepEqual(left.repoTags, ['example.com/app:1.0', 'mirror.example.com/app:1.0']);
  t.is(
    (await runtime.imageStatus({ image: spec('example.com/app:latest'), verbose: false })).image,
    undefined,
  );
  await runtime.removeImage({ image: spec(first.imageRef) });
  t.is((await runtime.imageStatus({ image: spec('example.com/app:1.0'), verbose: false })).image, undefined);
  t.is(
    (await runtime.imageStatus({ image: spec('mirror.example.com/app:1.0'), verbose: false })).image,
    undefined,
  );
  // Tags that share no table entry stay distinct images.
  const a = await runtime.pullImage({ image: spec('example.com/other:1') });
  const b = await runtime.pullImage({ image: spec('example.com/other:2') });
  t.not(a.imageRef, b.imageRef);
});

test('ImageStatus reports the configured user: uid when numeric, username otherwise', async (t) => {
  const { runtime } = setup({
    pullLatencyMs: 0,
    images: [
      { refs: ['example.com/numeric:1'], user: '1000:2000' },
      { refs: ['example.com/named'], user: 'app' },
    ],
  });
  const status = async (ref: string) =>
    (await runtime.imageStatus({ image: spec(ref), verbose: false })).image!;
  await runtime.pullImage({ image: spec('example.com/numeric:1') });
  await runtime.pullImage({ image: spec('example.com/named:7') });
  t.like(await status('example.com/numeric:1'), { uid: { value: 1000n }, username: '' });
  t.like(await status('example.com/named:7'), { uid: undefined, username: 'app' });
  t.like(await status('registry.k8s.io/pause:3.9'), { uid: { value: 65535n }, username: '' });
  t.like(await status('busybox'), { uid: undefined, username: '' }, 'no User: root, reported as neither');
  t.throws(() => setup({ images: [{ refs: ['Bad'] }] }), {
    message: /^runtime-fake: images\[0\]\.refs\[0\]: /,
  });
});

test('ExecSync answers hostname, resolv.conf, hosts and id from what was requested', async (t) => {
  const { runtime } = setup({ images: [{ refs: ['example.com/app:1'], user: '1001:1002' }] });
  runtime.loadImage('example.com/app:1');
  const config = PodSandboxConfig.fromPartial({
    ...sandboxConfig('web'),
    hostname: 'web-0',
    dnsConfig: DNSConfig.fromPartial({
      servers: ['10.96.0.10'],
      searches: ['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local'],
      options: ['ndots:5'],
    }),
  });
  const { podSandboxId: pod } = await runtime.runPodSandbox({ config, runtimeHandler: '' });
  const ip = (await runtime.podSandboxStatus({ podSandboxId: pod, verbose: false })).status!.network!.ip;
  const id = await startContainer(runtime, pod, 'app');
  t.is(await run(runtime, id, 'hostname'), 'web-0\n');
  t.is(await run(runtime, id, 'cat', '/etc/hostname'), 'web-0\n');
  t.is(
    await run(runtime, id, 'cat', '/etc/resolv.conf'),
    'search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n',
  );
  t.true((await run(runtime, id, 'cat', '/etc/hosts')).endsWith(`\n${ip}\tweb-0\n`));
  t.is(await run(runtime, id, 'id', '-u'), '0\n', 'no user asked, none in the image: root');
  t.is(await run(runtime, id, 'sh', '-c', 'hostname; id -g'), 'web-0\n0\n');

  // The security context wins over the image's user; without one, the image's User is used.
  await runtime.startContainer({
    containerId: await createAs(runtime, pod, 'as', { runAsUser: 2000, runAsGroup: 3000 }),
  });
  const as = (await runtime.listContainers({})).containers.find((c) => c.metadata?.name === 'as')!.id;
  t.is(await run(runtime, as, 'id', '-u'), '2000\n');
  t.is(await run(runtime, as, 'id', '-g'), '3000\n');
  t.is(await run(runtime, as, 'id'), 'uid=2000 gid=3000 groups=3000,4000\n');
  const imageUser = await startContainer(runtime, pod, 'image-user', { image: 'example.com/app:1' });
  t.is(await run(runtime, imageUser, 'sh', '-c', 'id -u && id -g'), '1001\n1002\n');
  const status = (await runtime.containerStatus({ containerId: imageUser, verbose: false })).status!;
  t.like(status.user?.linux, { uid: 1001n, gid: 1002n });
});

test('ExecSync reads /etc/hosts (and any file) from the kubelet mount that provides it', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'etc-hosts'), '# Kubernetes-managed hosts file.\n10.0.0.9\tdb\n');
  writeFileSync(join(dir, 'ready'), 'yes\n');
  const { runtime } = setup();
  const pod = await runPod(runtime, 'p');
  const id = await startContainer(runtime, pod, 'app', {
    mounts: [
      { containerPath: '/etc/hosts', hostPath: join(dir, 'etc-hosts') },
      { containerPath: '/data/', hostPath: dir },
    ],
  });
  t.is(await run(runtime, id, 'cat', '/etc/hosts'), '# Kubernetes-managed hosts file.\n10.0.0.9\tdb\n');
  t.is(await run(runtime, id, 'cat', '/data/ready'), 'yes\n');
  const missing = await runtime.execSync({ containerId: id, cmd: ['cat', '/tmp/healthy'], timeout: 0n });
  t.is(missing.exitCode, 0, 'a file the fake does not know still reads as empty (exec probes pass)');
});

test('log files are written by default at logDirectory/logPath with what the command writes', async (t) => {
  const dir = tempDir(t);
  const clock = new VirtualClock();
  const runtime = new FakeRuntime({ clock, config: { pullLatencyMs: 0 } });
  await runtime.pullImage({ image: spec('nginx:1.25') });
  const pod = await runPod(runtime, 'web', { logDirectory: join(dir, 'default_web_uid') });
  const file = (name: string) => readFileSync(join(dir, 'default_web_uid', name, '0.log'), 'utf8');
  await clock.advance(1500);
  await startContainer(runtime, pod, 'echo', {
    command: ['sh', '-c', 'echo hello; echo oops >&2; sleep 3600; echo never'],
  });
  t.is(file('echo'), '2026-01-01T00:00:01.5Z stdout F hello\n2026-01-01T00:00:01.5Z stderr F oops\n');
  await startContainer(runtime, pod, 'nginx', { image: 'nginx:1.25', command: [] });
  t.is(
    file('nginx'),
    '2026-01-01T00:00:01.5Z stdout F /docker-entrypoint.sh: Configuration complete; ready for start up\n',
  );
  await startContainer(runtime, pod, 'argv', { command: ['echo', 'one', 'two'] });
  t.is(file('argv'), '2026-01-01T00:00:01.5Z stdout F one two\n');
  const quiet = await startContainer(runtime, pod, 'quiet');
  t.is(file('quiet'), '', 'a silent container has an empty log file, as with containerd');
  runtime.writeLog(quiet, 'later\n');
  t.is(file('quiet'), '2026-01-01T00:00:01.5Z stdout F later\n');
  await startContainer(runtime, pod, 'scripted', {
    command: ['echo', 'ignored'],
    annotations: { 'runtime-fake.nodelet.dev/scripted': 'stdout=scripted' },
  });
  t.is(file('scripted'), '2026-01-01T00:00:01.5Z stdout F scripted\n', 'a scripted stdout replaces it');
});

test('a log file that cannot be created: a warning by default, a failed start with writeLogs: true', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'a-file'), '');
  const logDirectory = join(dir, 'a-file', 'pod'); // under a regular file: ENOTDIR
  const lenient = new FakeRuntime({ clock: new VirtualClock() });
  const pod = await runPod(lenient, 'p', { logDirectory });
  const id = await startContainer(lenient, pod, 'app', { command: ['echo', 'kept'] });
  t.deepEqual(
    lenient.logs(id).map((l) => l.split(' ').slice(1).join(' ')),
    ['stdout F kept'],
  );
  const strict = new FakeRuntime({ clock: new VirtualClock(), config: { writeLogs: true } });
  const pod2 = await runPod(strict, 'p', { logDirectory });
  const err = await t.throwsAsync(startContainer(strict, pod2, 'app'));
  t.regex(err!.message, /^failed to create container loggers: failed to create and open log file: ENOTDIR/);
});

test('pulls take 100 ms by default on the clock, so a 1 ms pull deadline expires first', async (t) => {
  const clock = new VirtualClock();
  const runtime = new FakeRuntime({ clock });
  const pull = track(runtime.pullImage({ image: spec('nginx:1.25') }));
  const deadline = clock.deadline(1);
  const expired = new Promise((resolve) =>
    deadline.signal.addEventListener('abort', resolve, { once: true }),
  );
  await clock.advance(1);
  await expired;
  t.false(pull.settled, 'the pull is still running when the 1 ms deadline passes');
  await clock.advance(98);
  t.false(pull.settled);
  await clock.advance(1);
  t.regex((await pull.promise).imageRef, /^sha256:/);
  t.true(isErrorCode(await t.throwsAsync(runtime.pullImage({ image: spec('Bad') })), 'InvalidInput'));
});

test('the container config the command table reads is the one CreateContainer got', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'p');
  const id = await createContainer(runtime, pod, 'app', { command: ['echo'], args: ['from', 'args'] });
  await runtime.startContainer({ containerId: id });
  t.deepEqual(
    runtime.logs(id).map((l) => l.replace(/^\S+ /, '')),
    ['stdout F from args'],
  );
});
