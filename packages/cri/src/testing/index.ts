/**
 * `@nodelet/cri/testing`: the CRI conformance suite. A runtime's own test file hands it a factory of
 * the runtime under test (RuntimeService, ImageService and a few hooks) and gets one ava test per case:
 *
 *     defineConformance('my-runtime', async () => ({ runtime, image, busyboxImage, … }));
 */
export { defineConformance } from './suite.js';
export {
  BUSYBOX_IMAGE,
  MISSING_IMAGE,
  RUN_LABEL,
  removePod,
  waitFor,
  type ConformanceFactory,
  type ConformanceOptions,
  type ConformanceTarget,
} from './kit.js';
