export * from './manager.js';
export * from './sandbox.js';
export * from './container.js';
export * from './gc.js';
