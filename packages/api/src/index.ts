export * from './wire.js';
export * from './types.js';
