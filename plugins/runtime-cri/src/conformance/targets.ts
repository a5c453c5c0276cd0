/**
 * The conformance suite's targets: the fake runtime in-process, the fake served over gRPC and
 * reached through this package's plugin, and a real containerd through this package's plugin.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kernel, RealClock, createLogger } from '@nodelet/kernel';
import { CriImage, CriRuntime, serveCri } from '@nodelet/cri';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { criRuntimePlugin } from '../plugin.js';
import { importTestImage, removeTestImage, type TestImage } from '../testing/test-image.js';
import type { ConformanceFactory, ConformanceTarget } from './kit.js';

/** In no registry: the fake is told so; containerd finds no registry at all. */
export const MISSING_IMAGE = 'nodelet.invalid/conformance-missing:1';
/** Present on every target (the fake preloads it; scripts/containerd/setup.sh imports it). */
export const BUSYBOX_IMAGE = 'docker.io/library/busybox:latest';

/** The fake on real time (the suite compares it with real runtimes), writing log files as they do. */
function newFake(): FakeRuntime {
  return new FakeRuntime({
    clock: new RealClock(),
    config: { writeLogs: true, missingImages: [MISSING_IMAGE] },
  });
}

function fakeHooks(fake: FakeRuntime) {
  return {
    busyboxImage: BUSYBOX_IMAGE,
    missingImage: MISSING_IMAGE,
    loadImage: async (ref: string) => void fake.loadImage(ref),
    writeOutput: (id: string, text: string) => fake.writeLog(id, text),
  };
}

const quiet = () => createLogger({ level: 'warn' });

/** (a) FakeRuntime called directly. */
export const fakeInProcess: ConformanceFactory = async () => {
  const fake = newFake();
  return {
    runtime: fake,
    image: fake,
    ...fakeHooks(fake),
    close: async () => fake.close(),
  } satisfies ConformanceTarget;
};

/** (b) FakeRuntime behind `serveCri` on a temporary unix socket, reached through the runtime-cri plugin. */
export const fakeOverGrpc: ConformanceFactory = async () => {
  const fake = newFake();
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-cri-'));
  const endpoint = `unix://${join(dir, 'cri.sock')}`;
  const server = await serveCri(fake, fake, endpoint);
  const kernel = new Kernel({ logger: quiet() }).use(criRuntimePlugin(), { runtimeEndpoint: endpoint });
  await kernel.start();
  return {
    runtime: kernel.get(CriRuntime),
    image: kernel.get(CriImage),
    ...fakeHooks(fake),
    close: async () => {
      await kernel.stop();
      await server.stop(1000);
      fake.close();
      await rm(dir, { recursive: true, force: true });
    },
  } satisfies ConformanceTarget;
};

/** (c) A real containerd at `endpoint`, through the runtime-cri plugin. */
export function containerdTarget(endpoint: string, socket: string): ConformanceFactory {
  return async () => {
    const kernel = new Kernel({ logger: quiet() }).use(criRuntimePlugin(), { runtimeEndpoint: endpoint });
    await kernel.start();
    const imported = new Map<string, TestImage>();
    return {
      runtime: kernel.get(CriRuntime),
      image: kernel.get(CriImage),
      busyboxImage: BUSYBOX_IMAGE,
      missingImage: MISSING_IMAGE,
      loadImage: async (ref) => void imported.set(ref, await importTestImage(ref, { socket })),
      dropImage: async (ref) => {
        const image = imported.get(ref);
        if (image) await removeTestImage(image, { socket });
      },
      close: () => kernel.stop(),
    } satisfies ConformanceTarget;
  };
}
