export * from './balancer.js';
export * from './backend.js';
export * from './plugin.js';
export { proxyUserspacePlugin as default } from './plugin.js';
