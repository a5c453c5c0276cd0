export * from './kubelet-metrics.js';
export * from './instrumented-runtime.js';
export * from './exposition.js';
export * from './stats-metrics.js';
export * from './handlers.js';
export * from './observability.js';
