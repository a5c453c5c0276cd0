// The API client (KubeApi, ApiError, TokenBucket, connectKubeconfig, …) lives in @nodelet/client; it
// is re-exported here, as the kubelet's API was before, for embedders that import it from the kubelet.
export * from '@nodelet/client';
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
