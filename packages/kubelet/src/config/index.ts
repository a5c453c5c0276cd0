export * from './source.js';
export * from './static-pod.js';
export * from './manifest.js';
export * from './file-source.js';
export * from './url-source.js';
export * from './pod-config.js';
