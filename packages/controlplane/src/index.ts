export * from './object.js';
export * from './control-plane.js';
export * from './pki.js';
export { privateNodeDirs, securePrivateDataDir } from './data-dir.js';
export * from './storage/revision-store.js';
export * from './apiserver/status.js';
export * from './apiserver/resource-type.js';
export * from './apiserver/selectors.js';
export * from './apiserver/patch.js';
export * from './apiserver/patch-meta.js';
export * from './apiserver/registry.js';
export type { PodLogOptions, PodLogProvider, ServerVersion } from './apiserver/server.js';
export { EventRecorder } from './controllers/event-recorder.js';
export { WorkQueue } from './controllers/work-queue.js';
export * from './resources/index.js';
export * from './controllers/scheduler.js';
export * from './controllers/endpointslice-controller.js';
export { NamespaceController } from './controllers/namespace-controller.js';
export * from './controllers/node-lifecycle-controller.js';
export { TaintEvictionController, evictionTime } from './controllers/taint-eviction-controller.js';
export * from './admission/default-toleration-seconds.js';
export * from './plugin.js';
// The kube-api-access volume as ServiceAccount admission adds it (benchmarks build pods of that shape).
export {
  serviceAccountTokenMountPath,
  serviceAccountVolumePrefix,
  tokenVolumeSource,
} from './admission/service-account.js';
export * from './authorization/modes.js';
