export * from './render.js';
export * from './ipvsadm.js';
export * from './backend.js';
export * from './plugin.js';
export { proxyIpvsPlugin as default } from './plugin.js';
