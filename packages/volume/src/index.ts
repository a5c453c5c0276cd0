export * from './volume-plugin.js';
export * from './atomic-writer.js';
export * from './volume-ownership.js';
