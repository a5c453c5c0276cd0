export * from './fixtures.js';
export * from './netns.js';
export * from './traffic.js';
export * from './conformance.js';
export * from './kernel-tests.js';
