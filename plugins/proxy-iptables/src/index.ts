export * from './chains.js';
export * from './iptables.js';
export * from './render.js';
export * from './backend.js';
export * from './plugin.js';
export { proxyIptablesPlugin as default } from './plugin.js';
