/**
 * @nodelet/cri — the CRI v1 (`runtime.v1`) protocol and the `cri.runtime` / `cri.image`
 * capabilities: generated message types, the promise-based service interfaces, the gRPC client
 * and server adapters, and helpers shared by the kubelet and the runtimes.
 */
export * from './gen/runtime/v1/api.js';
export * from './capabilities.js';
export * from './grpc-status.js';
export * from './address.js';
export * from './server.js';
export * from './client.js';
export * from './helpers.js';
export * from './probe-handler.js';
export * from './image-ref.js';
export * from './stats-provider.js';
export * from './cri-stats-provider.js';
