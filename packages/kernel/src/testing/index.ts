export * from './http-fuzz.js';
export * from './raw-http.js';
export * from './prom-text.js';
export * from './json-schema.js';
