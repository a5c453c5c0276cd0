export { FakeRuntime, RUNTIME_NAME, RUNTIME_VERSION } from './fake-runtime.js';
export { POD_UID_LABEL } from './runtime-store.js';
export type { FakeRuntimeOptions, ScriptTarget } from './fake-runtime.js';
export { runtimeFakePlugin } from './plugin.js';
export { BUSYBOX_IMAGE, DEFAULT_CONFIG, fakeRuntimeConfigSchema, PAUSE_IMAGE } from './config.js';
export type { FakeRuntimeConfig } from './config.js';
export { BUILTIN_IMAGES, type FakeImageConfig } from './image-config.js';
export type { ContainerView } from './exec.js';
export {
  ALL_CONTAINERS,
  BEHAVIOR_ANNOTATION_PREFIX,
  parseBehavior,
  parseDuration,
  PROBE_FIELDS,
  type ProbeScript,
  type ContainerBehavior,
} from './behavior.js';
export { defaultExec, type ExecContext, type ExecHandler, type ExecResult } from './exec.js';
export { isImageId, normalizeImageRef, parseImageRef, type ImageRef } from './image-ref.js';
export { IpAllocator } from './ip-allocator.js';
export { fakeProbeHandlers, probeVerdict, type ProbeAnswerer, type ProbeVerdict } from './probes.js';
export type { LogStream } from './cri-log.js';
export { runtimeFakePlugin as default } from './plugin.js';
export { SimulatedNode, type NodeUsage, type SimulatedNodeConfig } from './simulated-node.js';
