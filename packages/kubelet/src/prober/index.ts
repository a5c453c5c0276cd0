export * from './probe-handler.js';
export * from './probe-spec.js';
export * from './handlers.js';
export * from './grpc-health.js';
export * from './worker.js';
export * from './manager.js';
export * from './pod-events.js';
export { probeUrl, requestHeaders } from './http-handler.js';
