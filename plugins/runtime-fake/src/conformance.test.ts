// The CRI conformance suite against the fake runtime, called in-process.
import { RealClock } from '@nodelet/kernel';
import {
  BUSYBOX_IMAGE,
  MISSING_IMAGE,
  defineConformance,
  type ConformanceTarget,
} from '@nodelet/cri/testing';
import { FakeRuntime } from './fake-runtime.js';

defineConformance('fake', async () => {
  // On real time (the suite compares it with real runtimes), writing log files as they do.
  const fake = new FakeRuntime({
    clock: new RealClock(),
    config: { writeLogs: true, missingImages: [MISSING_IMAGE] },
  });
  return {
    runtime: fake,
    image: fake,
    busyboxImage: BUSYBOX_IMAGE,
    missingImage: MISSING_IMAGE,
    loadImage: async (ref: string) => void fake.loadImage(ref),
    writeOutput: (id: string, text: string) => fake.writeLog(id, text),
    close: async () => fake.close(),
  } satisfies ConformanceTarget;
});
