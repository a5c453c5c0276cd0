// The CRI conformance suite against a real containerd (scripts/containerd/setup.sh), through this
// plugin. Without containerd: skipped with one line, or failed when CI=true.
import test from 'ava';
import { Kernel, createLogger } from '@nodelet/kernel';
import { CriImage, CriRuntime } from '@nodelet/cri';
import {
  BUSYBOX_IMAGE,
  MISSING_IMAGE,
  defineConformance,
  type ConformanceTarget,
} from '@nodelet/cri/testing';
import {
  importTestImage,
  removeTestImage,
  requireContainerd,
  type TestImage,
} from '@nodelet/runtime-cri/testing';
import { runtimeContainerdPlugin } from './index.js';

const containerd = await requireContainerd(test);
if (containerd) {
  const { endpoint, socket } = containerd;
  defineConformance(
    'containerd',
    async () => {
      const kernel = new Kernel({ logger: createLogger({ level: 'warn' }) }).use(runtimeContainerdPlugin, {
        runtimeEndpoint: endpoint,
      });
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
    },
    {
      skipPullPresent:
        'containerd resolves every PullImage against the registry, even for a present image, and no registry is reachable here',
    },
  );
}
