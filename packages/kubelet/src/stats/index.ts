export * from './cgroup-reader.js';
export * from './host-node-reader.js';
export * from './host-stats.js';
export * from './host-stats-provider.js';
export * from './volume-usage.js';
