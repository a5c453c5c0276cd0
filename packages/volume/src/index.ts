export * from './volume-plugin.js';
