export * from './fake-api.js';
