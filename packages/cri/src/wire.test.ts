/**
 * Wire compatibility with upstream runtime.v1: bytes built by hand from upstream's field numbers
 * and types (independently of the generated code) must decode to the right fields, and the
 * generated encoders must produce exactly those bytes.
 */
import test from 'ava';
import { CriImage, CriRuntime } from './capabilities.js';
import {
  ContainerState,
  ContainerStatus,
  ImageSpec,
  LinuxContainerResources,
  Mount,
  MountPropagation,
  PodSandboxConfig,
  RuntimeServiceService,
  ImageServiceService,
} from './gen/runtime/v1/api.js';

// A tiny protobuf writer: tag = field << 3 | wire type (0 varint, 2 length-delimited).
function varint(n: bigint): number[] {
  let v = BigInt.asUintN(64, n);
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return out;
}
const key = (field: number, wire: number) => varint(BigInt((field << 3) | wire));
const vint = (field: number, value: bigint | number) => [...key(field, 0), ...varint(BigInt(value))];
const bytes = (field: number, payload: number[]) => [
  ...key(field, 2),
  ...varint(BigInt(payload.length)),
  ...payload,
];
const str = (field: number, s: string) => bytes(field, [...Buffer.from(s, 'utf8')]);
const mapEntry = (field: number, k: string, v: string) => bytes(field, [...str(1, k), ...str(2, v)]);

test('ContainerStatus: upstream field numbers decode and encode byte for byte', (t) => {
  const created = 1_700_000_000_123_456_789n;
  const wire = Uint8Array.from([
    ...str(1, 'c1'), // id
    ...bytes(2, [...str(1, 'web'), ...vint(2, 3)]), // metadata { name, attempt }
    ...vint(3, 2), // state = CONTAINER_EXITED
    ...vint(4, created), // created_at
    ...vint(5, created + 1n), // started_at
    ...vint(6, created + 2n), // finished_at
    ...vint(7, -1), // exit_code (int32 -1: ten-byte varint)
    ...bytes(8, [...str(1, 'busybox'), ...str(18, 'busybox:latest')]), // image { image, user_specified_image }
    ...str(9, 'sha256:abc'), // image_ref
    ...str(10, 'OOMKilled'), // reason
    ...str(11, 'out of memory'), // message
    ...mapEntry(12, 'io.kubernetes.container.name', 'web'), // labels
    ...mapEntry(13, 'io.kubernetes.container.restartCount', '3'), // annotations
    ...bytes(14, [...str(1, '/data'), ...str(2, '/host'), ...vint(3, 1), ...vint(5, 2)]), // mounts
    ...str(15, 'web/3.log'), // log_path
    ...bytes(16, bytes(1, [...vint(4, 128n << 20n), ...vint(10, 256n << 20n)])), // resources.linux
    ...str(17, 'sha256:def'), // image_id
    ...bytes(18, bytes(1, [...vint(1, 1000), ...vint(2, 1000)])), // user.linux { uid, gid }
    ...vint(19, 23), // stop_signal = SIGTERM
  ]);

  const decoded = ContainerStatus.decode(wire);
  t.is(decoded.id, 'c1');
  t.deepEqual(decoded.metadata, { name: 'web', attempt: 3 });
  t.is(decoded.state, ContainerState.CONTAINER_EXITED);
  t.is(decoded.createdAt, created);
  t.is(decoded.startedAt, created + 1n);
  t.is(decoded.finishedAt, created + 2n);
  t.is(decoded.exitCode, -1);
  t.is(decoded.image?.image, 'busybox');
  t.is(decoded.image?.userSpecifiedImage, 'busybox:latest');
  t.is(decoded.imageRef, 'sha256:abc');
  t.is(decoded.reason, 'OOMKilled');
  t.is(decoded.message, 'out of memory');
  t.deepEqual(decoded.labels, { 'io.kubernetes.container.name': 'web' });
  t.deepEqual(decoded.annotations, { 'io.kubernetes.container.restartCount': '3' });
  t.is(decoded.mounts[0]?.containerPath, '/data');
  t.is(decoded.mounts[0]?.hostPath, '/host');
  t.true(decoded.mounts[0]?.readonly);
  t.is(decoded.mounts[0]?.propagation, MountPropagation.PROPAGATION_BIDIRECTIONAL);
  t.is(decoded.logPath, 'web/3.log');
  t.is(decoded.resources?.linux?.memoryLimitInBytes, 128n << 20n);
  t.is(decoded.resources?.linux?.memorySwapLimitInBytes, 256n << 20n);
  t.is(decoded.imageId, 'sha256:def');
  t.is(decoded.user?.linux?.uid, 1000n);
  t.is(decoded.stopSignal, 23);

  t.deepEqual(ContainerStatus.encode(decoded).finish(), wire);
});

test('PodSandboxConfig, ImageSpec, Mount, LinuxContainerResources: field numbers match upstream', (t) => {
  const sandbox = Uint8Array.from([
    ...bytes(1, [...str(1, 'web'), ...str(2, 'uid-1'), ...str(3, 'default'), ...vint(4, 1)]), // metadata
    ...str(2, 'web-host'), // hostname
    ...str(3, '/var/log/pods/default_web_uid-1'), // log_directory
    ...bytes(4, [...str(1, '10.96.0.10'), ...str(2, 'svc.cluster.local'), ...str(3, 'ndots:5')]), // dns_config
    ...bytes(5, [...vint(1, 1), ...vint(2, 53), ...vint(3, 5353), ...str(4, '0.0.0.0')]), // port_mappings (UDP)
    ...mapEntry(6, 'app', 'web'), // labels
    ...mapEntry(7, 'a', 'b'), // annotations
    ...bytes(8, [
      ...str(1, '/kubepods/besteffort/poduid-1'), // linux.cgroup_parent
      ...bytes(2, [...bytes(1, [...vint(1, 2), ...vint(2, 1)]), ...vint(6, 1)]), // security_context { namespace_options{network=NODE,pid=CONTAINER}, privileged }
      ...mapEntry(3, 'net.ipv4.ip_forward', '1'), // sysctls
    ]),
  ]);
  const cfg = PodSandboxConfig.decode(sandbox);
  t.deepEqual(cfg.metadata, { name: 'web', uid: 'uid-1', namespace: 'default', attempt: 1 });
  t.is(cfg.hostname, 'web-host');
  t.is(cfg.logDirectory, '/var/log/pods/default_web_uid-1');
  t.deepEqual(cfg.dnsConfig, {
    servers: ['10.96.0.10'],
    searches: ['svc.cluster.local'],
    options: ['ndots:5'],
  });
  t.deepEqual(cfg.portMappings, [{ protocol: 1, containerPort: 53, hostPort: 5353, hostIp: '0.0.0.0' }]);
  t.deepEqual(cfg.labels, { app: 'web' });
  t.deepEqual(cfg.annotations, { a: 'b' });
  t.is(cfg.linux?.cgroupParent, '/kubepods/besteffort/poduid-1');
  t.is(cfg.linux?.securityContext?.namespaceOptions?.network, 2);
  t.is(cfg.linux?.securityContext?.namespaceOptions?.pid, 1);
  t.true(cfg.linux?.securityContext?.privileged);
  t.deepEqual(cfg.linux?.sysctls, { 'net.ipv4.ip_forward': '1' });
  t.deepEqual(PodSandboxConfig.encode(cfg).finish(), sandbox);

  const spec = Uint8Array.from([
    ...str(1, 'docker.io/library/busybox:1.36'),
    ...mapEntry(2, 'k', 'v'),
    ...str(18, 'busybox:1.36'),
    ...str(19, 'runc'),
    ...str(20, 'sha256:0123'),
  ]);
  t.deepEqual(ImageSpec.decode(spec), {
    image: 'docker.io/library/busybox:1.36',
    annotations: { k: 'v' },
    userSpecifiedImage: 'busybox:1.36',
    runtimeHandler: 'runc',
    imageRef: 'sha256:0123',
  });
  t.deepEqual(ImageSpec.encode(ImageSpec.decode(spec)).finish(), spec);

  const mount = Mount.decode(
    Uint8Array.from([
      ...str(1, '/c'),
      ...str(2, '/h'),
      ...vint(3, 1),
      ...vint(4, 1),
      ...vint(5, 1),
      ...vint(8, 1),
    ]),
  );
  t.like(mount, {
    containerPath: '/c',
    hostPath: '/h',
    readonly: true,
    selinuxRelabel: true,
    propagation: MountPropagation.PROPAGATION_HOST_TO_CONTAINER,
    recursiveReadOnly: true,
  });

  const resources = Uint8Array.from([
    ...vint(1, 100_000), // cpu_period
    ...vint(2, 50_000), // cpu_quota
    ...vint(3, 512), // cpu_shares
    ...vint(4, 1n << 40n), // memory_limit_in_bytes
    ...vint(5, -997), // oom_score_adj
    ...str(6, '0-1'), // cpuset_cpus
    ...bytes(8, [...str(1, '2MB'), ...vint(2, 1n << 30n)]), // hugepage_limits
    ...mapEntry(9, 'memory.high', '1000000'), // unified
    ...vint(10, 2n << 40n), // memory_swap_limit_in_bytes
  ]);
  const r = LinuxContainerResources.decode(resources);
  t.like(r, {
    cpuPeriod: 100_000n,
    cpuQuota: 50_000n,
    cpuShares: 512n,
    memoryLimitInBytes: 1n << 40n,
    oomScoreAdj: -997n,
    cpusetCpus: '0-1',
    memorySwapLimitInBytes: 2n << 40n,
  });
  t.deepEqual(r.hugepageLimits, [{ pageSize: '2MB', limit: 1n << 30n }]);
  t.deepEqual(r.unified, { 'memory.high': '1000000' });
  t.deepEqual(LinuxContainerResources.encode(r).finish(), resources);
});

test('service paths are the upstream runtime.v1 ones', (t) => {
  t.is(RuntimeServiceService.version.path, '/runtime.v1.RuntimeService/Version');
  t.is(RuntimeServiceService.getContainerEvents.path, '/runtime.v1.RuntimeService/GetContainerEvents');
  t.true(RuntimeServiceService.getContainerEvents.responseStream);
  t.is(RuntimeServiceService.listPodSandbox.path, '/runtime.v1.RuntimeService/ListPodSandbox');
  t.is(ImageServiceService.pullImage.path, '/runtime.v1.ImageService/PullImage');
  t.is(ImageServiceService.imageFsInfo.path, '/runtime.v1.ImageService/ImageFsInfo');
});

test('the capabilities are cri.runtime and cri.image', (t) => {
  t.is(CriRuntime.id, 'cri.runtime');
  t.is(CriImage.id, 'cri.image');
  t.is(CriRuntime.cardinality, 'one');
  t.is(CriRuntime.identifier, Symbol.for('nodelet.capability:cri.runtime'));
});
