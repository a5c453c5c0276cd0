export * from './names.js';
export * from './elements.js';
export * from './render.js';
export * from './backend.js';
export * from './plugin.js';
export { proxyNftablesPlugin as default } from './plugin.js';
