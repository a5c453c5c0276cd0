export * from './kube-api.js';
// client-node-api.js (ClientNodeApi, loadKubeConfig) is loaded on demand: see kubeconfig.ts.
export * from './kubeconfig.js';
export * from './rate-limiter.js';
export * from './merge-patch.js';
export * from './node-status.js';
export * from './node-controller.js';
export * from './node-lease.js';
export * from './api-source.js';
export * from './status-sync.js';
export * from './mirror-pods.js';
export * from './event-recorder.js';
export * from './pod-event-source.js';
export { KubeletClientSigner, type BootstrapOptions } from './bootstrap.js';
export * from './node-agent.js';
