export * from './http-fuzz.js';
export * from './prom-text.js';
export * from './json-schema.js';
