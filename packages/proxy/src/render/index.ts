export * from './text-arena.js';
export * from './chunk-writer.js';
export * from './streaming.js';
export * from './rule-body.js';
export * from './applied-state.js';
export * from './stale.js';
export * from './chain-diff.js';
