// The CRI conformance suite through this plugin against a runtime behind a unix socket: the fake
// runtime served by serveCri. The wire and the client must change nothing.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kernel, RealClock, createLogger } from '@nodelet/kernel';
import { CriImage, CriRuntime, serveCri } from '@nodelet/cri';
import {
  BUSYBOX_IMAGE,
  MISSING_IMAGE,
  defineConformance,
  type ConformanceTarget,
} from '@nodelet/cri/testing';
import { FakeRuntime } from '@nodelet/runtime-fake';
import { criRuntimePlugin } from './plugin.js';

defineConformance('fake over gRPC', async () => {
  const fake = new FakeRuntime({
    clock: new RealClock(),
    config: { writeLogs: true, missingImages: [MISSING_IMAGE] },
  });
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-cri-'));
  const endpoint = `unix://${join(dir, 'cri.sock')}`;
  const server = await serveCri(fake, fake, endpoint);
  const kernel = new Kernel({ logger: createLogger({ level: 'warn' }) }).use(criRuntimePlugin(), {
    runtimeEndpoint: endpoint,
  });
  await kernel.start();
  return {
    runtime: kernel.get(CriRuntime),
    image: kernel.get(CriImage),
    busyboxImage: BUSYBOX_IMAGE,
    missingImage: MISSING_IMAGE,
    loadImage: async (ref: string) => void fake.loadImage(ref),
    writeOutput: (id: string, text: string) => fake.writeLog(id, text),
    close: async () => {
      await kernel.stop();
      await server.stop(1000);
      fake.close();
      await rm(dir, { recursive: true, force: true });
    },
  } satisfies ConformanceTarget;
});
