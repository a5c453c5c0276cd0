/**
 * `@nodelet/runtime-cri/testing`: helpers for tests that need a real containerd (the availability
 * rule: run, fail in CI, or skip with one line) and throw-away images imported without a registry.
 */
export {
  DEFAULT_CONTAINERD_SOCKET,
  containerdSocket,
  probeContainerd,
  requireContainerd,
  type ContainerdProbe,
} from './containerd.js';
export { importTestImage, removeTestImage, type TestImage } from './test-image.js';
