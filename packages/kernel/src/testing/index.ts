export * from './http-fuzz.js';
