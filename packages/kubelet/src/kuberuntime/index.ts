export * from './manager.js';
export * from './sandbox.js';
export * from './container.js';
export * from './gc.js';
export * from './container-gc.js';
export * from './container-gc-plan.js';
export * from './container-gc-policy.js';
