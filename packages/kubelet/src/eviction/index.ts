export * from './admission.js';
export * from './eviction-manager.js';
export * from './message.js';
export * from './ranking.js';
export * from './signals.js';
export * from './thresholds.js';
export * from './kubelet-pressure.js';
