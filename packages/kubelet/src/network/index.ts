export * from './dns.js';
export * from './hostname.js';
export * from './hosts-file.js';
export * from './pod-network.js';
export * from './resolv-conf.js';
