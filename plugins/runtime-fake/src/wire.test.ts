import test from 'ava';
import {
  ContainerStatsResponse,
  ContainerStatusResponse,
  ExecSyncResponse,
  ImageFsInfoResponse,
  ImageStatusResponse,
  ListContainersResponse,
  ListImagesResponse,
  ListPodSandboxResponse,
  ListPodSandboxStatsResponse,
  PodSandboxStatusResponse,
  StatusResponse,
  VersionResponse,
} from '@nodelet/cri';
import { runPod, setup, startContainer } from './fixtures.js';

interface Codec<T> {
  encode(message: T): { finish(): Uint8Array };
  decode(input: Uint8Array): T;
}

/** Encoding then decoding gives the same message: the fake can be served over gRPC as it is. */
function roundTrips<T>(codec: Codec<T>, message: T): T {
  return codec.decode(codec.encode(message).finish());
}

test('every response is a complete message that survives the wire unchanged', async (t) => {
  const { runtime } = setup();
  const pod = await runPod(runtime, 'p', { annotations: { 'runtime-fake.nodelet.dev/app': 'stdout=hi' } });
  const id = await startContainer(runtime, pod, 'app', {
    mounts: [{ containerPath: '/d', hostPath: '/h', readonly: true }],
  });
  const check = <T>(codec: Codec<T>, message: T, what: string) =>
    t.deepEqual(roundTrips(codec, message), message, what);
  check(VersionResponse, await runtime.version({ version: '0.1.0' }), 'Version');
  check(StatusResponse, await runtime.status({ verbose: false }), 'Status');
  check(
    PodSandboxStatusResponse,
    await runtime.podSandboxStatus({ podSandboxId: pod, verbose: false }),
    'PodSandboxStatus',
  );
  check(ListPodSandboxResponse, await runtime.listPodSandbox({}), 'ListPodSandbox');
  check(
    ContainerStatusResponse,
    await runtime.containerStatus({ containerId: id, verbose: false }),
    'ContainerStatus',
  );
  check(ListContainersResponse, await runtime.listContainers({}), 'ListContainers');
  check(
    ExecSyncResponse,
    await runtime.execSync({ containerId: id, cmd: ['echo', 'x'], timeout: 1n }),
    'ExecSync',
  );
  check(ContainerStatsResponse, await runtime.containerStats({ containerId: id }), 'ContainerStats');
  check(ListPodSandboxStatsResponse, await runtime.listPodSandboxStats({}), 'ListPodSandboxStats');
  check(ListImagesResponse, await runtime.listImages({}), 'ListImages');
  const image = {
    image: 'busybox',
    annotations: {},
    userSpecifiedImage: '',
    runtimeHandler: '',
    imageRef: '',
  };
  check(ImageStatusResponse, await runtime.imageStatus({ image, verbose: false }), 'ImageStatus');
  check(ImageFsInfoResponse, await runtime.imageFsInfo({}), 'ImageFsInfo');
});
